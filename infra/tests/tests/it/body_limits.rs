//! Lists and codes of request bodies are bounded and sets refuse duplicates: a body under the
//! 6 MB limit that would make a stored item over DynamoDB's 400 KB is a 422 naming the field and
//! the limit, never a 500, and nothing is stored.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Answer, TestApp, error_locs};
use crate::lab::{insurance_body, lab_test_id, order_body};

/// The 422's issue at `loc`, or a failure naming what was there instead.
fn issue_at<'a>(a: &'a Answer, loc: &[&str]) -> &'a Value {
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    let locs = error_locs(&a.body);
    let i = locs
        .iter()
        .position(|l| l.iter().map(String::as_str).eq(loc.iter().copied()))
        .unwrap_or_else(|| panic!("no issue at {loc:?}: {locs:?}"));
    &a.body["detail"][i]
}

fn assert_too_many(a: &Answer, loc: &[&str], max: usize) {
    let found = issue_at(a, loc);
    assert_eq!(found["type"], "too_long", "{found}");
    assert!(found["msg"].as_str().unwrap().contains(&format!("at most {max} items")), "{found}");
    // One issue for the list, not one per item.
    assert!(a.body["detail"].as_array().unwrap().len() < 10, "{}", a.body);
}

fn assert_duplicate(a: &Answer, loc: &[&str]) {
    let found = issue_at(a, loc);
    assert!(found["msg"].as_str().unwrap().contains("duplicate"), "{found}");
}

#[tokio::test]
async fn webhook_event_types_are_a_bounded_set() {
    let t = TestApp::embedded().await;
    let url = "https://hooks.example.com/wearlab";
    let many: Vec<String> = (0..8_000).map(|i| format!("custom.event.{i}")).collect();
    let a = t.post("/v2/team/webhooks", json!({"url": url, "event_types": many})).await;
    assert_too_many(&a, &["body", "event_types"], 100);

    let a = t
        .post(
            "/v2/team/webhooks",
            json!({"url": url, "event_types": ["user.deleted", "provider.connection.created", "user.deleted"]}),
        )
        .await;
    assert_duplicate(&a, &["body", "event_types", "2"]);

    let listed = t.get("/v2/team/webhooks").await;
    assert_eq!(listed.body["data"], json!([]), "nothing stored");
}

#[tokio::test]
async fn order_lab_test_ids_and_add_ons_are_bounded_sets() {
    let t = TestApp::embedded().await;
    let user = t.create_user("limits-order").await;
    let id = lab_test_id("meridian_essential_health");

    let mut body = order_body(&user);
    body["order_set"]["lab_test_ids"] = json!(vec![id.clone(); 20_000]);
    let a = t.post("/v3/order", body).await;
    assert_too_many(&a, &["body", "order_set", "lab_test_ids"], 100);

    let mut body = order_body(&user);
    body["order_set"]["lab_test_ids"] = json!([id.clone(), id.clone()]);
    let a = t.post("/v3/order", body).await;
    assert_duplicate(&a, &["body", "order_set", "lab_test_ids", "1"]);

    let mut body = order_body(&user);
    body["order_set"]["add_on"] = json!({"marker_ids": vec![1; 5_000]});
    let a = t.post("/v3/order", body).await;
    assert_too_many(&a, &["body", "order_set", "add_on", "marker_ids"], 100);

    let mut body = order_body(&user);
    body["order_set"]["add_on"] = json!({"provider_ids": ["x".repeat(10_000)]});
    let a = t.post("/v3/order", body).await;
    let found = issue_at(&a, &["body", "order_set", "add_on", "provider_ids", "0"]);
    assert_eq!(found["msg"], "String should have at most 64 characters");

    let listed = t.get("/v3/orders").await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert_eq!(listed.body["orders"], json!([]), "nothing stored");
}

#[tokio::test]
async fn order_set_markers_take_bounded_sets() {
    let t = TestApp::embedded().await;
    let id = lab_test_id("meridian_essential_health");
    let a = t
        .post("/v3/lab_tests/list_order_set_markers", json!({"lab_test_ids": vec![id.clone(); 5_000]}))
        .await;
    assert_too_many(&a, &["body", "lab_test_ids"], 100);
    let a = t.post("/v3/lab_tests/list_order_set_markers", json!({"lab_test_ids": [id.clone(), id]})).await;
    assert_duplicate(&a, &["body", "lab_test_ids", "1"]);
}

#[tokio::test]
async fn link_token_filter_on_providers_is_a_bounded_set() {
    let t = TestApp::embedded().await;
    let user = t.create_user("limits-link").await;
    let a =
        t.post("/v2/link/token", json!({"user_id": user, "filter_on_providers": vec!["oura"; 5_000]})).await;
    assert_too_many(&a, &["body", "filter_on_providers"], 100);
    let a = t
        .post("/v2/link/token", json!({"user_id": user, "filter_on_providers": ["oura", "fitbit", "oura"]}))
        .await;
    assert_duplicate(&a, &["body", "filter_on_providers", "2"]);
}

#[tokio::test]
async fn data_pull_preferences_name_a_bounded_number_of_providers() {
    let t = TestApp::embedded().await;
    let before = t.get("/v2/team/data_pull_preferences").await;
    let days: serde_json::Map<String, Value> = (0..5_000).map(|i| (format!("p{i}"), json!(30))).collect();
    let body = json!({"default_history_days": 30, "history_days": days}).to_string();
    let a = t.send(Method::PUT, "/v2/team/data_pull_preferences", Some(&t.key), Some(&body)).await;
    assert_too_many(&a, &["body", "history_days"], 100);
    let after = t.get("/v2/team/data_pull_preferences").await;
    assert_eq!(after.body, before.body, "nothing stored");
}

#[tokio::test]
async fn insurance_payor_code_is_bounded_and_not_echoed() {
    let t = TestApp::embedded().await;
    let user = t.create_user("limits-insurance").await;
    let mut body = insurance_body();
    body["payor_code"] = json!("9".repeat(100_000));
    let a = t.post(&format!("/v2/user/{user}/insurance"), body).await;
    let found = issue_at(&a, &["body", "payor_code"]);
    assert_eq!(found["msg"], "String should have at most 64 characters");
    assert!(a.body.to_string().len() < 10_000, "the answer does not echo the value");
    let latest = t.get(&format!("/v2/user/{user}/insurance/latest")).await;
    assert_eq!(latest.status, StatusCode::NOT_FOUND, "nothing stored: {}", latest.body);
}

/// The largest webhook endpoint a team can create: the longest URL and the most event types,
/// each of the longest length.
fn largest_webhook_body() -> Value {
    let url = format!("https://hooks.example.com/{}", "a".repeat(2048 - "https://hooks.example.com/".len()));
    let types: Vec<String> = (0..100).map(|i| format!("{i:03}.{}", "t".repeat(196))).collect();
    json!({"url": url, "event_types": types})
}

async fn largest_webhook_is_stored(t: &TestApp) {
    let body = largest_webhook_body();
    let a = t.post("/v2/team/webhooks", body.clone()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(a.body.to_string().len() < 40 * 1024, "{} bytes", a.body.to_string().len());
    let listed = t.get("/v2/team/webhooks").await;
    assert_eq!(listed.body["data"][0]["event_types"], body["event_types"]);
}

#[tokio::test]
async fn the_largest_accepted_webhook_is_stored_embedded() {
    largest_webhook_is_stored(&TestApp::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_accepted_webhook_is_stored_on_dynamodb() {
    let (t, _, _) = crate::users_on_dynamodb::on_moto().await;
    largest_webhook_is_stored(&t).await;
}

/// The published schema states the bounds the parsers apply, so clients see them.
#[test]
fn the_openapi_document_states_each_bound() {
    use wearlab_domain::common::limits;
    let doc: Value = serde_json::from_str(&wearlab_local::openapi_json()).unwrap();
    let schemas = &doc["components"]["schemas"];
    let max_items = |schema: &str, field: &str| schemas[schema]["properties"][field]["maxItems"].as_u64();
    let bound = |n: usize| Some(n as u64);
    assert_eq!(max_items("CreateWebhookBody", "event_types"), bound(limits::MAX_EVENT_TYPES));
    assert_eq!(max_items("LinkTokenBody", "filter_on_providers"), bound(limits::MAX_FILTER_ON_PROVIDERS));
    assert_eq!(max_items("OrderSet", "lab_test_ids"), bound(limits::MAX_LAB_TEST_IDS));
    assert_eq!(max_items("OrderSetMarkersBody", "lab_test_ids"), bound(limits::MAX_LAB_TEST_IDS));
    assert_eq!(max_items("AddOnOrder", "provider_ids"), bound(limits::MAX_ADD_ON_MARKERS));
    assert_eq!(max_items("AddOnOrder", "marker_ids"), bound(limits::MAX_ADD_ON_MARKERS));
}
