//! Orders on the simulated lab: create (with idempotent replay), read, list, cancel, status
//! progression over the manual clock, events, results and the requisition PDF.

use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{insurance_body, lab_test_id, order_body, path_of, place_order};
use crate::helpers::{TestApp, error_locs};

async fn rejects(t: &TestApp, body: Value, expected: &[&str]) {
    let a = t.post("/v3/order", body).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    assert!(error_locs(&a.body).contains(&expected), "{expected:?} not in {}", a.body);
}

fn events_of(t: &TestApp, order_id: &str) -> Vec<(String, String)> {
    t.published()
        .into_iter()
        .filter(|e| e.data["id"] == order_id)
        .map(|e| (e.event_type, e.data["status"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

#[tokio::test]
async fn create_places_an_order_and_emits_created() {
    let t = TestApp::embedded().await;
    let (user, o) = place_order(&t, "ord-1").await;
    assert_eq!(o["user_id"], user.as_str());
    assert_eq!(o["team_id"], t.team.as_uuid().to_string());
    assert_eq!(o["status"], "received.walk_in_test.ordered");
    assert_eq!(o["collection_method"], "walk_in_test");
    assert_eq!(o["events"].as_array().unwrap().len(), 1);
    assert_eq!(o["events"][0]["status"], "received.walk_in_test.ordered");
    assert_eq!(o["lab"]["slug"], "meridian");
    assert_eq!(o["lab_test"]["slug"], "meridian_essential_health");
    assert!(o["sample_id"].as_str().unwrap().starts_with("MER"));
    assert_eq!(o["physician"]["npi"], "1234567893", "the network's physician by default");
    assert_eq!(o["billing_type"], "client_bill");
    assert!(o["requisition_form_url"].as_str().unwrap().contains("/requisition/pdf?expires="));
    let id = o["id"].as_str().unwrap();
    let events = events_of(&t, id);
    assert_eq!(
        events,
        vec![("labtest.order.created".to_owned(), "received.walk_in_test.ordered".to_owned())]
    );
    let env = t.published().into_iter().find(|e| e.data["id"] == id).unwrap();
    assert_eq!(env.client_user_id, "ord-1");
    assert_eq!(env.user_id.to_string(), user);

    let got = t.get(&format!("/v3/order/{id}")).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.body["id"], id);
    assert_eq!(got.body["patient_details"]["last_name"], "Hopper");
}

#[tokio::test]
async fn deprecated_lab_test_id_becomes_an_order_set() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-2").await;
    let mut body = order_body(&user);
    body.as_object_mut().unwrap().remove("order_set");
    let id = lab_test_id("meridian_vitamin_d_test");
    body["lab_test_id"] = json!(id);
    let a = t.post("/v3/order", body.clone()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["order"]["order_set"]["lab_test_ids"], json!([id]));
    body["order_set"] = json!({"lab_test_ids": [id]});
    rejects(&t, body.clone(), &["body", "lab_test_id"]).await;
    body.as_object_mut().unwrap().remove("order_set");
    body.as_object_mut().unwrap().remove("lab_test_id");
    rejects(&t, body, &["body", "order_set"]).await;
}

#[tokio::test]
async fn add_ons_and_at_home_collection() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-3").await;
    let mut body = order_body(&user);
    body["order_set"] = json!({
        "lab_test_ids": [lab_test_id("meridian_essential_health_at_home_phlebotomy")],
        "add_on": {"marker_ids": [1001]}
    });
    body["collection_method"] = json!("at_home_phlebotomy");
    body["physician"] = json!({"first_name": "Jo", "last_name": "Park", "npi": "1245319599"});
    body["priority"] = json!(true);
    let a = t.post("/v3/order", body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["order"]["status"], "received.at_home_phlebotomy.ordered");
    assert_eq!(a.body["order"]["order_set"]["add_on"]["marker_ids"], json!([1001]));
    assert_eq!(a.body["order"]["priority"], true);
}

#[tokio::test]
async fn patient_names_follow_the_rule() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-4").await;
    let mut body = order_body(&user);
    body["patient_details"]["first_name"] = json!("Gr@ce");
    rejects(&t, body, &["body", "patient_details", "first_name"]).await;
}

#[tokio::test]
async fn patient_dob_must_be_in_the_past() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-5").await;
    let mut body = order_body(&user);
    body["patient_details"]["dob"] = json!("2027-01-01");
    rejects(&t, body, &["body", "patient_details", "dob"]).await;
}

#[tokio::test]
async fn patient_email_and_phone_are_checked() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-6").await;
    let mut body = order_body(&user);
    body["patient_details"]["email"] = json!("grace at example.com");
    body["patient_details"]["phone_number"] = json!("12");
    let a = t.post("/v3/order", body).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    let locs = error_locs(&a.body);
    assert!(locs.contains(&vec!["body".into(), "patient_details".into(), "email".into()]), "{locs:?}");
    assert!(locs.contains(&vec!["body".into(), "patient_details".into(), "phone_number".into()]), "{locs:?}");
}

#[tokio::test]
async fn patient_gender_takes_documented_values() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-7").await;
    let mut body = order_body(&user);
    body["patient_details"]["gender"] = json!("x");
    rejects(&t, body, &["body", "patient_details", "gender"]).await;
}

#[tokio::test]
async fn patient_address_is_a_us_address() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-8").await;
    let mut body = order_body(&user);
    body["patient_address"]["zip"] = json!("100");
    rejects(&t, body, &["body", "patient_address", "zip"]).await;
    let mut abroad = order_body(&user);
    abroad["patient_address"] =
        json!({"first_line": "1 Rue", "city": "Paris", "state": "IDF", "zip": "75001", "country": "FR"});
    rejects(&t, abroad, &["body", "patient_address", "country"]).await;
    let mut alias = order_body(&user);
    alias["patient_address"] = json!({"first_line": "1 Main St", "city": "New York", "state": "NY", "zip_code": "10001", "country": "US"});
    assert_eq!(t.post("/v3/order", alias).await.status, StatusCode::OK, "zip_code is accepted as zip");
}

#[tokio::test]
async fn physician_npi_needs_its_check_digit() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-9").await;
    let mut body = order_body(&user);
    body["physician"] = json!({"first_name": "Jo", "last_name": "Park", "npi": "1234567890"});
    rejects(&t, body, &["body", "physician", "npi"]).await;
}

#[tokio::test]
async fn collection_method_must_fit_the_lab_and_tests() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-10").await;
    let mut body = order_body(&user);
    body["collection_method"] = json!("testkit");
    rejects(&t, body, &["body", "collection_method"]).await;
    let mut other = order_body(&user);
    other["collection_method"] = json!("at_home_phlebotomy");
    rejects(&t, other, &["body", "collection_method"]).await;
}

#[tokio::test]
async fn unknown_lab_test_and_mixed_labs_are_rejected() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-11").await;
    let mut body = order_body(&user);
    body["order_set"] = json!({"lab_test_ids": [uuid::Uuid::new_v4()]});
    rejects(&t, body, &["body", "order_set", "lab_test_ids", "0"]).await;
    let mut mixed = order_body(&user);
    mixed["order_set"] =
        json!({"lab_test_ids": [lab_test_id("meridian_kidney"), lab_test_id("northfield_kidney")]});
    rejects(&t, mixed, &["body", "order_set", "lab_test_ids"]).await;
    let mut empty = order_body(&user);
    empty["order_set"] = json!({"lab_test_ids": []});
    rejects(&t, empty, &["body", "order_set", "lab_test_ids"]).await;
}

#[tokio::test]
async fn commercial_insurance_needs_an_insurance_on_file() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-12").await;
    let mut body = order_body(&user);
    body["billing_type"] = json!("commercial_insurance");
    rejects(&t, body.clone(), &["body", "billing_type"]).await;
    assert_eq!(t.post(&format!("/v2/user/{user}/insurance"), insurance_body()).await.status, StatusCode::OK);
    let a = t.post("/v3/order", body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["order"]["billing_type"], "commercial_insurance");
}

#[tokio::test]
async fn unknown_or_foreign_user_or_order_is_404() {
    let t = TestApp::embedded().await;
    let a = t.post("/v3/order", order_body(&uuid::Uuid::new_v4().to_string())).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let (user, o) = place_order(&t, "ord-13").await;
    let id = o["id"].as_str().unwrap();
    let other = t.other_team_key().await;
    let body = order_body(&user).to_string();
    assert_eq!(
        t.send(Method::POST, "/v3/order", Some(&other), Some(&body)).await.status,
        StatusCode::NOT_FOUND
    );
    for path in [
        format!("/v3/order/{id}"),
        format!("/v3/order/{id}/result"),
        format!("/v3/order/{id}/requisition/pdf"),
        format!("/v3/order/{id}/psc/info"),
    ] {
        assert_eq!(
            t.send(Method::GET, &path, Some(&other), None).await.status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    let cancel = t.send(Method::POST, &format!("/v3/order/{id}/cancel"), Some(&other), None).await;
    assert_eq!(cancel.status, StatusCode::NOT_FOUND);
    let listed = t.send(Method::GET, "/v3/orders", Some(&other), None).await;
    assert_eq!(listed.body["total"], 0);
    assert_eq!(t.get(&format!("/v3/order/{}", uuid::Uuid::new_v4())).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.get("/v3/order/not-a-uuid").await.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn orders_of_a_deleted_user_read_as_404_and_return_with_undo() {
    let t = TestApp::embedded().await;
    let (user, o) = place_order(&t, "ord-del").await;
    let id = o["id"].as_str().unwrap();
    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    for path in
        [format!("/v3/order/{id}"), format!("/v3/order/{id}/result"), format!("/v3/order/{id}/psc/info")]
    {
        assert_eq!(t.get(&path).await.status, StatusCode::NOT_FOUND, "{path}");
    }
    assert_eq!(t.post_empty(&format!("/v2/user/undo_delete?user_id={user}")).await.status, StatusCode::OK);
    assert_eq!(t.get(&format!("/v3/order/{id}")).await.status, StatusCode::OK);
}

#[tokio::test]
async fn idempotency_key_replays_the_first_order() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-14").await;
    let body = order_body(&user).to_string();
    let key = [("x-idempotency-key", "order-retry-1")];
    let first = t.send_with(Method::POST, "/v3/order", &key, Some(&body)).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let again = t.send_with(Method::POST, "/v3/order", &key, Some(&body)).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body["order"]["id"], first.body["order"]["id"]);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    let listed = t.get(&format!("/v3/orders?user_id={user}")).await;
    assert_eq!(listed.body["total"], 1, "one order placed");
    let created = t
        .stack
        .as_ref()
        .unwrap()
        .bus
        .published()
        .iter()
        .filter(|e| e.event_type == "labtest.order.created")
        .count();
    assert_eq!(created, 1);
    let mut changed = order_body(&user);
    changed["priority"] = json!(true);
    let mismatch = t.send_with(Method::POST, "/v3/order", &key, Some(&changed.to_string())).await;
    assert_eq!(mismatch.status, StatusCode::UNPROCESSABLE_ENTITY);
    // After 24 hours the key is free again: a new order.
    t.clock.advance(Duration::hours(25));
    let later = t.send_with(Method::POST, "/v3/order", &key, Some(&body)).await;
    assert_eq!(later.status, StatusCode::OK);
    assert_ne!(later.body["order"]["id"], first.body["order"]["id"]);
}

#[tokio::test]
async fn status_moves_on_the_clock_with_events_and_results() {
    let t = TestApp::embedded().await;
    let (_, o) = place_order(&t, "ord-15").await;
    let id = o["id"].as_str().unwrap().to_owned();
    let path = format!("/v3/order/{id}");
    let results = format!("{path}/result");
    assert_eq!(t.get(&results).await.status, StatusCode::NOT_FOUND, "no results yet");

    t.clock.advance(Duration::minutes(1));
    assert_eq!(t.get(&path).await.body["status"], "received.walk_in_test.requisition_created");
    t.clock.advance(Duration::hours(1));
    assert_eq!(t.get(&path).await.body["status"], "collecting_sample.walk_in_test.appointment_pending");
    t.clock.advance(Duration::days(2));
    let partial = t.get(&path).await;
    assert_eq!(partial.body["status"], "sample_with_lab.walk_in_test.partial_results");
    let r = t.get(&results).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["metadata"]["status"], "partial");
    let partial_count = r.body["results"].as_array().unwrap().len();

    t.clock.advance(Duration::days(1));
    let done = t.get(&path).await;
    assert_eq!(done.body["status"], "completed.walk_in_test.completed");
    let statuses: Vec<&str> =
        done.body["events"].as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap()).collect();
    assert_eq!(
        statuses,
        vec![
            "received.walk_in_test.ordered",
            "received.walk_in_test.requisition_created",
            "collecting_sample.walk_in_test.appointment_pending",
            "sample_with_lab.walk_in_test.partial_results",
            "completed.walk_in_test.completed",
        ]
    );
    let ids: Vec<u64> =
        done.body["events"].as_array().unwrap().iter().map(|e| e["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5]);
    let emitted = events_of(&t, &id);
    assert_eq!(emitted.len(), 5, "{emitted:?}");
    assert_eq!(emitted[0].0, "labtest.order.created");
    assert!(emitted[1..].iter().all(|(k, _)| k == "labtest.order.updated"));
    assert_eq!(emitted.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>(), statuses);

    let r = t.get(&results).await;
    assert_eq!(r.body["metadata"]["status"], "final");
    assert_eq!(r.body["metadata"]["patient"], "Grace Hopper");
    let all = r.body["results"].as_array().unwrap();
    assert!(all.len() > partial_count);
    let types: Vec<&str> = all.iter().map(|x| x["type"].as_str().unwrap()).collect();
    assert!(types.contains(&"numeric") && types.contains(&"range"), "{types:?}");
    for x in all {
        assert!(x["result"].is_string());
        match x["type"].as_str().unwrap() {
            "numeric" => assert_eq!(
                x["value"].as_f64().unwrap().to_string(),
                x["result"].as_str().unwrap().parse::<f64>().unwrap().to_string()
            ),
            "range" => assert!(x["result"].as_str().unwrap().starts_with(['<', '>'])),
            _ => {}
        }
    }
    let glucose = all.iter().find(|x| x["loinc"] == "2345-7").unwrap();
    assert_eq!(glucose["unit"], "mg/dL");
    // Reading again changes nothing and emits nothing.
    assert_eq!(t.get(&path).await.body["events"].as_array().unwrap().len(), 5);
    assert_eq!(events_of(&t, &id).len(), 5);
}

#[tokio::test]
async fn coded_results_for_screening_tests() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-16").await;
    let mut body = order_body(&user);
    body["order_set"] = json!({"lab_test_ids": [lab_test_id("meridian_sti_panel")]});
    let o = t.post("/v3/order", body).await.body["order"].clone();
    t.clock.advance(Duration::days(4));
    let r = t.get(&format!("/v3/order/{}/result", o["id"].as_str().unwrap())).await;
    let hiv = r.body["results"].as_array().unwrap().iter().find(|x| x["loinc"] == "56888-1").unwrap().clone();
    assert_eq!(hiv["type"], "coded_value");
    assert_eq!(hiv["result"], "Non Reactive");
    assert_eq!(hiv["value"], Value::Null);
}

#[tokio::test]
async fn testkit_orders_follow_their_own_timeline() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-17").await;
    let mut body = order_body(&user);
    body["order_set"] = json!({"lab_test_ids": [lab_test_id("cascade_a1c_test_testkit")]});
    let o = t.post("/v3/order", body).await;
    assert_eq!(o.status, StatusCode::OK, "{}", o.body);
    assert_eq!(o.body["order"]["status"], "received.testkit.ordered");
    let path = format!("/v3/order/{}", o.body["order"]["id"].as_str().unwrap());
    t.clock.advance(Duration::days(3));
    assert_eq!(t.get(&path).await.body["status"], "collecting_sample.testkit.with_customer");
    t.clock.advance(Duration::days(6));
    assert_eq!(t.get(&path).await.body["status"], "completed.testkit.completed");
}

#[tokio::test]
async fn cancel_only_while_cancellable() {
    let t = TestApp::embedded().await;
    let (_, o) = place_order(&t, "ord-18").await;
    let id = o["id"].as_str().unwrap().to_owned();
    let a = t.post_empty(&format!("/v3/order/{id}/cancel")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["order"]["status"], "cancelled.walk_in_test.cancelled");
    assert_eq!(a.body["order"]["events"].as_array().unwrap().len(), 2);
    assert_eq!(
        events_of(&t, &id).last().unwrap(),
        &("labtest.order.updated".into(), "cancelled.walk_in_test.cancelled".into())
    );
    assert_eq!(t.post_empty(&format!("/v3/order/{id}/cancel")).await.status, StatusCode::BAD_REQUEST);
    // A cancelled order moves no more.
    t.clock.advance(Duration::days(5));
    assert_eq!(t.get(&format!("/v3/order/{id}")).await.body["status"], "cancelled.walk_in_test.cancelled");

    let (_, late) = place_order(&t, "ord-19").await;
    let late_id = late["id"].as_str().unwrap();
    t.clock.advance(Duration::days(2));
    let refused = t.post_empty(&format!("/v3/order/{late_id}/cancel")).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "sample already with the lab");
    assert!(refused.body["detail"].as_str().unwrap().contains("sample_with_lab"));
    assert_eq!(
        t.post_empty(&format!("/v3/order/{}/cancel", uuid::Uuid::new_v4())).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn list_filters_and_pages() {
    let t = TestApp::embedded().await;
    let (u1, first) = place_order(&t, "ord-20").await;
    t.clock.advance(Duration::days(1));
    let (u2, _) = place_order(&t, "ord-21").await;
    let mut kit = order_body(&u2);
    kit["order_set"] = json!({"lab_test_ids": [lab_test_id("cascade_vitamin_d_test_testkit")]});
    assert_eq!(t.post("/v3/order", kit).await.status, StatusCode::OK);
    // Day 3: the first order has its partial results, the others are younger.
    t.clock.advance(Duration::days(1) + Duration::hours(1));

    let all = t.get("/v3/orders").await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.body);
    assert_eq!(all.body["total"], 3);
    assert_eq!(all.body["page"], 1);
    assert_eq!(all.body["size"], 50);
    assert_eq!(all.body["pages"], 1);
    assert_eq!(all.body["orders"][2]["id"], first["id"], "newest first");
    let asc = t.get("/v3/orders?order_direction=asc").await;
    assert_eq!(asc.body["orders"][0]["id"], first["id"]);

    assert_eq!(t.get(&format!("/v3/orders?user_id={u1}")).await.body["total"], 1);
    assert_eq!(t.get(&format!("/v3/orders?user_id={u2}")).await.body["total"], 2);
    let with_lab = t.get("/v3/orders?status=sample_with_lab").await;
    assert_eq!(with_lab.body["total"], 1, "statuses are current when filtering");
    assert_eq!(with_lab.body["orders"][0]["id"], first["id"]);
    assert_eq!(t.get("/v3/orders?status=collecting_sample.testkit.transit_customer").await.body["total"], 1);
    assert_eq!(
        t.get(&format!("/v3/orders?user_id={u2}&collection_method=walk_in_test")).await.body["total"],
        1
    );
    assert_eq!(t.get("/v3/orders?lab_id=3").await.body["total"], 1);
    assert_eq!(t.get("/v3/orders?start_date=2026-03-02").await.body["total"], 2);
    assert_eq!(t.get("/v3/orders?end_date=2026-03-01").await.body["total"], 1);
    assert_eq!(
        t.get(&format!("/v3/orders?start_date=2026-03-02&end_date=2026-03-02&user_id={u1}")).await.body["total"],
        0
    );

    let p2 = t.get("/v3/orders?size=2&page=2").await;
    assert_eq!(p2.body["orders"].as_array().unwrap().len(), 1, "last page");
    assert_eq!(p2.body["pages"], 2);
    assert_eq!(t.get("/v3/orders?size=100").await.status, StatusCode::OK);
    for bad in [
        "size=101",
        "page=0",
        "user_id=nope",
        "start_date=2026-03-05&end_date=2026-03-01",
        "order_direction=up",
    ] {
        assert_eq!(
            t.get(&format!("/v3/orders?{bad}")).await.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}"
        );
    }
}

#[tokio::test]
async fn requisition_pdf_names_the_patient() {
    let t = TestApp::embedded().await;
    let (_, o) = place_order(&t, "ord-22").await;
    let id = o["id"].as_str().unwrap();
    let a = t.get(&format!("/v3/order/{id}/requisition/pdf")).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.headers["content-type"], "application/pdf");
    let text = a.body.as_str().unwrap();
    assert!(text.starts_with("%PDF"));
    assert!(text.contains("Hopper, Grace"), "patient named");
    assert!(text.contains(o["sample_id"].as_str().unwrap()), "accession number printed");
    assert!(text.contains("Morgan"), "ordering physician named");
    assert!(text.contains("Lipid Panel"), "tests listed");
    assert!(text.trim_end().ends_with("%%EOF"));
}

#[tokio::test]
async fn deprecated_requisition_url_is_signed_for_seven_days() {
    let t = TestApp::embedded().await;
    let (_, o) = place_order(&t, "ord-23").await;
    let url = path_of(o["requisition_form_url"].as_str().unwrap());
    let a = t.send(Method::GET, &url, None, None).await;
    assert_eq!(a.status, StatusCode::OK, "no API key needed: {}", a.body);
    assert!(a.body.as_str().unwrap().starts_with("%PDF"));
    let tampered = url.replace("signature=", "signature=x");
    assert_eq!(t.send(Method::GET, &tampered, None, None).await.status, StatusCode::NOT_FOUND);
    let unsigned = url.split('?').next().unwrap().to_owned();
    assert_eq!(t.send(Method::GET, &unsigned, None, None).await.status, StatusCode::UNAUTHORIZED);
    t.clock.advance(Duration::days(7) + Duration::seconds(1));
    assert_eq!(t.send(Method::GET, &url, None, None).await.status, StatusCode::NOT_FOUND, "expired");
}

#[tokio::test]
async fn the_lab_refusing_an_order_is_a_400_and_stores_nothing() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ord-refused").await;
    let mut body = order_body(&user);
    body["patient_address"]["zip"] = json!(wearlab_sim::REFUSED_ZIP);
    let a = t.post("/v3/order", body).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    let detail = a.body["detail"].as_str().unwrap();
    assert!(detail.contains("does not serve") && detail.contains("00000"), "{detail}");
    assert!(a.headers.get("retry-after").is_none(), "a permanent refusal is not retryable");
    let list = t.get("/v3/orders").await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert_eq!(list.body["orders"], json!([]), "no order was stored");
}
