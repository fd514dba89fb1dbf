//! The marker and lab test catalog: GET /v3/lab_tests/markers, GET /v3/lab_tests/{id}/markers,
//! POST /v3/lab_tests/list_order_set_markers, GET /v3/lab_test and the deprecated GET /v3/lab_tests.

use http::StatusCode;
use serde_json::{Value, json};
use wearlab_domain::lab::test_catalog::catalog;

use super::lab_test_id;
use crate::helpers::{TestApp, error_locs};

fn lab_ids(body: &Value) -> Vec<i64> {
    let mut ids: Vec<i64> =
        body["markers"].as_array().unwrap().iter().map(|m| m["lab_id"].as_i64().unwrap()).collect();
    ids.sort();
    ids.dedup();
    ids
}

/// The catalog's markers and lab tests, as `infra/data/lab/README.md` documents them (491
/// markers: 456 biomarkers and 35 panels; 50 lab tests).
const MARKERS: u64 = 491;
const LAB_TESTS: usize = 50;

fn count_where(f: impl Fn(&wearlab_models::lab::Marker) -> bool) -> u64 {
    catalog().markers.iter().filter(|m| f(m)).count() as u64
}

#[tokio::test]
async fn markers_default_page_with_expected_results() {
    let t = TestApp::embedded().await;
    let a = t.get("/v3/lab_tests/markers").await;
    assert_eq!(a.status, StatusCode::OK);
    let total = a.body["total"].as_u64().unwrap();
    assert_eq!(total, MARKERS, "the catalog's markers (infra/data/lab/README.md)");
    assert_eq!(a.body["page"], 1);
    assert_eq!(a.body["size"], 50);
    assert_eq!(a.body["pages"], total.div_ceil(50));
    assert_eq!(a.body["markers"].as_array().unwrap().len(), 50);
    let m = &a.body["markers"][0];
    for k in ["id", "name", "slug", "description", "lab_id", "provider_id", "type", "unit", "price"] {
        assert!(m.get(k).is_some(), "{k}");
    }
    let er = &m["expected_results"][0];
    assert!(er["required"].is_boolean());
    assert!(er["loinc"]["code"].as_str().unwrap().contains('-'));
    // Glucose in serum carries its real LOINC code.
    let g = t.get("/v3/lab_tests/markers?name=glucose&lab_slug=meridian").await;
    assert!(
        g.body["markers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["expected_results"][0]["loinc"]["code"] == "2345-7")
    );
}

#[tokio::test]
async fn lab_id_repeats_and_lab_slug_wins() {
    let t = TestApp::embedded().await;
    let two = t.get("/v3/lab_tests/markers?lab_id=1&lab_id=2&size=100").await;
    assert_eq!(two.status, StatusCode::OK);
    assert_eq!(two.body["total"], count_where(|m| m.lab_id == 1 || m.lab_id == 2));
    assert_eq!(lab_ids(&two.body), vec![1]);
    let last = two.body["pages"].as_u64().unwrap();
    let tail = t.get(&format!("/v3/lab_tests/markers?lab_id=1&lab_id=2&size=100&page={last}")).await;
    assert_eq!(lab_ids(&tail.body), vec![2]);

    let slug = t.get("/v3/lab_tests/markers?lab_id=1&lab_slug=cascade&size=100").await;
    assert_eq!(slug.body["total"], count_where(|m| m.lab_id == 3));
    assert_eq!(lab_ids(&slug.body), vec![3]);
    let unknown = t.get("/v3/lab_tests/markers?lab_slug=nowhere").await;
    assert_eq!(unknown.body["total"], 0);
    assert_eq!(unknown.body["pages"], 0);
}

#[tokio::test]
async fn name_matches_marker_panel_or_test_code_ignoring_case() {
    let t = TestApp::embedded().await;
    let a1c = t.get("/v3/lab_tests/markers?name=HEMOGLOBIN%20a1c&lab_slug=meridian").await;
    let names: Vec<&str> =
        a1c.body["markers"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"Hemoglobin A1c"), "{names:?}");
    // A biomarker is found through the name of a panel that contains it.
    let lipid = t.get("/v3/lab_tests/markers?name=lipid%20panel&lab_slug=meridian").await;
    let names: Vec<&str> =
        lipid.body["markers"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"Lipid Panel") && names.contains(&"HDL Cholesterol"), "{names:?}");
    // By test code.
    let code =
        catalog().markers.iter().find(|m| m.lab_id == 2 && m.name == "TSH").unwrap().provider_id.clone();
    let by_code = t.get(&format!("/v3/lab_tests/markers?name={code}&lab_id=2")).await;
    assert!(by_code.body["markers"].as_array().unwrap().iter().any(|m| m["provider_id"] == code.as_str()));
}

#[tokio::test]
async fn a_la_carte_and_lab_account_filters_combine() {
    let t = TestApp::embedded().await;
    let calc = t.get("/v3/lab_tests/markers?a_la_carte_enabled=false&lab_slug=northfield&size=100").await;
    assert_eq!(calc.body["total"], count_where(|m| m.lab_id == 2 && !m.a_la_carte_enabled));
    assert!(calc.body["markers"].as_array().unwrap().iter().all(|m| m["a_la_carte_enabled"] == false));

    let restricted = catalog().accounts.iter().find(|a| !a.excluded_provider_ids.is_empty()).unwrap();
    let all =
        t.get(&format!("/v3/lab_tests/markers?lab_account_id={}&size=100&name=hiv", restricted.id)).await;
    assert_eq!(all.status, StatusCode::OK);
    assert_eq!(all.body["total"], 0, "the account does not offer HIV screening");
    let default =
        catalog().accounts.iter().find(|a| a.lab_id == 1 && a.excluded_provider_ids.is_empty()).unwrap();
    let offered = t.get(&format!("/v3/lab_tests/markers?lab_account_id={}&name=hiv", default.id)).await;
    assert_eq!(offered.body["total"], 1);
    let unknown = t.get(&format!("/v3/lab_tests/markers?lab_account_id={}", uuid::Uuid::new_v4())).await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&unknown.body), vec![vec!["query", "lab_account_id"]]);
}

#[tokio::test]
async fn pagination_edges() {
    let t = TestApp::embedded().await;
    let total = MARKERS;
    let hundred = t.get("/v3/lab_tests/markers?size=100").await;
    assert_eq!(hundred.status, StatusCode::OK);
    assert_eq!(hundred.body["markers"].as_array().unwrap().len(), 100);
    let pages = total.div_ceil(100);
    assert_eq!(hundred.body["pages"], pages);
    let last = t.get(&format!("/v3/lab_tests/markers?size=100&page={pages}")).await;
    assert_eq!(last.body["markers"].as_array().unwrap().len() as u64, total - 100 * (pages - 1));
    let beyond = t.get(&format!("/v3/lab_tests/markers?size=100&page={}", pages + 1)).await;
    assert_eq!(beyond.status, StatusCode::OK);
    assert_eq!(beyond.body["markers"], json!([]));
    assert_eq!(beyond.body["total"], total);
    for bad in ["size=101", "size=0", "page=0", "page=-1", "size=abc", "lab_id=abc"] {
        let a = t.get(&format!("/v3/lab_tests/markers?{bad}")).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        let key = bad.split('=').next().unwrap();
        assert_eq!(error_locs(&a.body)[0][1], key, "{bad}");
    }
}

#[tokio::test]
async fn markers_of_a_lab_test() {
    let t = TestApp::embedded().await;
    let id = lab_test_id("meridian_essential_health");
    let a = t.get(&format!("/v3/lab_tests/{id}/markers")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["total"], 4);
    let names: Vec<&str> =
        a.body["markers"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"Lipid Panel"));
    let page = t.get(&format!("/v3/lab_tests/{id}/markers?size=3&page=2")).await;
    assert_eq!(page.body["markers"].as_array().unwrap().len(), 1);
    assert_eq!(page.body["pages"], 2);
    assert_eq!(
        t.get(&format!("/v3/lab_tests/{id}/markers?size=101")).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        t.get(&format!("/v3/lab_tests/{}/markers", uuid::Uuid::new_v4())).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(t.get("/v3/lab_tests/nope/markers").await.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn markers_of_an_order_set() {
    let t = TestApp::embedded().await;
    let id = lab_test_id("meridian_thyroid_complete");
    let vit_d =
        catalog().markers.iter().find(|m| m.lab_id == 1 && m.name == "Vitamin D, 25-Hydroxy").unwrap();
    let a = t
        .post(
            "/v3/lab_tests/list_order_set_markers",
            json!({"lab_test_ids": [id], "add_on": {"provider_ids": [vit_d.provider_id]}}),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["total"], 6, "five thyroid markers and one add-on");
    assert!(a.body["markers"].as_array().unwrap().iter().any(|m| m["id"] == vit_d.id));
    let paged =
        t.post("/v3/lab_tests/list_order_set_markers?size=4&page=2", json!({"lab_test_ids": [id]})).await;
    assert_eq!(paged.body["markers"].as_array().unwrap().len(), 1);
    let empty = t.post("/v3/lab_tests/list_order_set_markers", json!({})).await;
    assert_eq!(empty.status, StatusCode::OK);
    assert_eq!(empty.body["total"], 0);

    let unknown =
        t.post("/v3/lab_tests/list_order_set_markers", json!({"lab_test_ids": [uuid::Uuid::new_v4()]})).await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&unknown.body)[0], vec!["body", "lab_test_ids", "0"]);
    let bad_code = t
        .post(
            "/v3/lab_tests/list_order_set_markers",
            json!({"lab_test_ids": [id], "add_on": {"provider_ids": ["ZZZ"]}}),
        )
        .await;
    assert_eq!(bad_code.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&bad_code.body)[0], vec!["body", "add_on", "provider_ids", "0"]);
    let mixed = t
        .post(
            "/v3/lab_tests/list_order_set_markers",
            json!({"lab_test_ids": [id, lab_test_id("cascade_thyroid_complete")]}),
        )
        .await;
    assert_eq!(mixed.status, StatusCode::UNPROCESSABLE_ENTITY, "one lab per order set");
}

#[tokio::test]
async fn lab_test_pages_follow_the_cursor() {
    let t = TestApp::embedded().await;
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v3/lab_test?lab_test_limit=7&next_cursor={c}"),
            None => "/v3/lab_test?lab_test_limit=7".into(),
        };
        let a = t.get(&path).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        let data = a.body["data"].as_array().unwrap();
        assert!(data.len() <= 7);
        seen.extend(data.iter().map(|d| d["id"].as_str().unwrap().to_owned()));
        match a.body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen.len(), LAB_TESTS);
    let first = t.get("/v3/lab_test").await;
    assert_eq!(first.body["data"].as_array().unwrap().len(), 50, "the default page holds 50");
    let t0 = &first.body["data"][0];
    for k in ["id", "slug", "name", "method", "price", "lab", "markers", "sample_type", "fasting"] {
        assert!(t0.get(k).is_some(), "{k}");
    }
    let cascade = t.get("/v3/lab_test?lab_slug=cascade&collection_method=testkit").await;
    let data = cascade.body["data"].as_array().unwrap();
    assert!(!data.is_empty());
    assert!(data.iter().all(|d| d["lab"]["slug"] == "cascade" && d["method"] == "testkit"));
    for bad in ["lab_test_limit=0", "lab_test_limit=101", "next_cursor=garbage"] {
        assert_eq!(
            t.get(&format!("/v3/lab_test?{bad}")).await.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}"
        );
    }
}

#[tokio::test]
async fn deprecated_lab_tests_still_answer_with_a_deprecation_header() {
    let t = TestApp::embedded().await;
    let a = t.get("/v3/lab_tests").await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(a.headers.contains_key("deprecation"));
    assert_eq!(a.body.as_array().unwrap().len(), LAB_TESTS);
    let doc: Value = serde_json::from_str(&wearlab_local::openapi_json()).unwrap();
    assert_eq!(doc["paths"]["/v3/lab_tests"]["get"]["deprecated"], true);
}

#[tokio::test]
async fn catalog_needs_an_api_key() {
    let t = TestApp::embedded().await;
    let a = t.send(http::Method::GET, "/v3/lab_tests/markers", None, None).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
}
