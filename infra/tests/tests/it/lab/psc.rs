//! GET /v3/order/{order_id}/psc/info: centers near the patient's ZIP centroid.

use http::StatusCode;
use serde_json::json;

use super::{order_body, place_order};
use crate::helpers::{TestApp, error_locs};

#[tokio::test]
async fn radius_boundary_at_25_miles() {
    let t = TestApp::embedded().await;
    // The patient lives in ZIP 10001; the reference data has one Meridian site 24.9 miles away
    // (White Plains) and one 25.1 miles away (Livingston).
    let (_, o) = place_order(&t, "psc-1").await;
    let id = o["id"].as_str().unwrap();
    let a = t.get(&format!("/v3/order/{id}/psc/info")).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["lab_id"], 1);
    assert_eq!(a.body["slug"], "meridian");
    let sites = a.body["patient_service_centers"].as_array().unwrap();
    let cities: Vec<&str> = sites.iter().map(|s| s["metadata"]["city"].as_str().unwrap()).collect();
    assert!(cities.contains(&"White Plains"), "24.9 miles is inside the default 25: {cities:?}");
    assert!(!cities.contains(&"Livingston"), "25.1 miles is outside: {cities:?}");
    let white_plains = sites.iter().find(|s| s["metadata"]["city"] == "White Plains").unwrap();
    assert_eq!(white_plains["distance"], "25", "whole miles as a string");
    let d: Vec<i64> = sites.iter().map(|s| s["distance"].as_str().unwrap().parse().unwrap()).collect();
    assert!(d.windows(2).all(|w| w[0] <= w[1]), "nearest first: {d:?}");
    for s in sites {
        assert!(s["site_code"].as_str().unwrap().starts_with("MRD"));
        assert!(s["supported_bill_types"].as_array().unwrap().iter().any(|b| b == "client_bill"));
        assert!(s["location"]["lat"].is_f64() && s["location"]["lng"].is_f64());
        assert!(s["capabilities"].is_array());
        for k in ["name", "state", "city", "zip_code", "first_line", "phone_number"] {
            assert!(s["metadata"][k].is_string(), "{k}");
        }
    }
    let explicit = t.get(&format!("/v3/order/{id}/psc/info?radius=25")).await;
    assert_eq!(explicit.body, a.body);
    let wider = t.get(&format!("/v3/order/{id}/psc/info?radius=50")).await;
    let wide: Vec<&str> = wider.body["patient_service_centers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["metadata"]["city"].as_str().unwrap())
        .collect();
    assert!(wide.contains(&"Livingston") && wide.contains(&"White Plains"));
    let narrow = t.get(&format!("/v3/order/{id}/psc/info?radius=10")).await;
    let n = narrow.body["patient_service_centers"].as_array().unwrap();
    assert!(!n.is_empty() && n.len() < sites.len());
    assert!(n.iter().all(|s| s["distance"].as_str().unwrap().parse::<i64>().unwrap() <= 10));
}

#[tokio::test]
async fn radius_takes_only_the_listed_values() {
    let t = TestApp::embedded().await;
    let (_, o) = place_order(&t, "psc-2").await;
    let id = o["id"].as_str().unwrap();
    for r in ["10", "20", "25", "50", "100"] {
        assert_eq!(t.get(&format!("/v3/order/{id}/psc/info?radius={r}")).await.status, StatusCode::OK, "{r}");
    }
    for r in ["30", "0", "abc", "25.5", ""] {
        let a = t.get(&format!("/v3/order/{id}/psc/info?radius={r}")).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{r}");
        assert_eq!(error_locs(&a.body), vec![vec!["query", "radius"]]);
    }
}

#[tokio::test]
async fn capabilities_keep_sites_having_all_of_them() {
    let t = TestApp::embedded().await;
    let (_, o) = place_order(&t, "psc-3").await;
    let id = o["id"].as_str().unwrap();
    let stat = t.get(&format!("/v3/order/{id}/psc/info?radius=100&capabilities=stat")).await;
    let sites = stat.body["patient_service_centers"].as_array().unwrap();
    assert!(!sites.is_empty());
    assert!(sites.iter().all(|s| s["capabilities"].as_array().unwrap().contains(&json!("stat"))));
    let both = t
        .get(&format!(
            "/v3/order/{id}/psc/info?radius=100&capabilities=stat&capabilities=appointment_scheduling_via_service"
        ))
        .await;
    let both = both.body["patient_service_centers"].as_array().unwrap();
    assert!(both.len() < sites.len());
    assert!(both.iter().all(|s| {
        let c = s["capabilities"].as_array().unwrap();
        c.contains(&json!("stat")) && c.contains(&json!("appointment_scheduling_via_service"))
    }));
    let bad = t.get(&format!("/v3/order/{id}/psc/info?capabilities=teleport")).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn another_lab_lists_its_own_sites() {
    let t = TestApp::embedded().await;
    let user = t.create_user("psc-4").await;
    let mut body = order_body(&user);
    body["order_set"] = json!({"lab_test_ids": [super::lab_test_id("northfield_heart_health")]});
    body["patient_address"] =
        json!({"first_line": "1 Main St", "city": "Chicago", "state": "IL", "zip": "60601", "country": "US"});
    let o = t.post("/v3/order", body).await.body["order"].clone();
    let a = t.get(&format!("/v3/order/{}/psc/info", o["id"].as_str().unwrap())).await;
    assert_eq!(a.body["slug"], "northfield");
    let sites = a.body["patient_service_centers"].as_array().unwrap();
    assert!(!sites.is_empty());
    assert!(sites.iter().all(|s| s["site_code"].as_str().unwrap().starts_with("NFD")));
    assert!(sites.iter().all(|s| s["metadata"]["state"] == "IL"));
}

#[tokio::test]
async fn a_zip_without_a_known_location_is_a_400() {
    let t = TestApp::embedded().await;
    let user = t.create_user("psc-5").await;
    let mut body = order_body(&user);
    // A well-formed ZIP that the reference data's centroids do not have.
    body["patient_address"]["zip"] = json!("00001");
    let o = t.post("/v3/order", body).await;
    assert_eq!(o.status, StatusCode::OK, "{}", o.body);
    let a = t.get(&format!("/v3/order/{}/psc/info", o.body["order"]["id"].as_str().unwrap())).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    assert_eq!(a.body["detail"], "No location is known for the patient's ZIP code 00001.");
}
