//! A refused body is answered with one 422 that lists every offending field: missing fields and
//! wrong types (the schema) together with the rules the other fields break (names, phone
//! numbers, dates), also when the body holds keys the schema does not declare. A client fixes
//! its request once, not once per round.

use http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, error_locs};
use crate::lab::{info_body, insurance_body, order_body};

fn loc(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

fn without(mut body: Value, path: &[&str]) -> Value {
    let (last, parents) = path.split_last().expect("a path");
    let mut at = &mut body;
    for p in parents {
        at = &mut at[*p];
    }
    at.as_object_mut().expect("an object").remove(*last);
    body
}

/// The answer is a 422 whose locations are exactly `expected` (in any order).
fn assert_locs(what: &str, answer: &crate::helpers::Answer, expected: &[&[&str]]) {
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {}", answer.body);
    let mut got = error_locs(&answer.body);
    let mut want: Vec<Vec<String>> = expected.iter().map(|p| loc(p)).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "{what}: {}", answer.body);
}

#[tokio::test]
async fn create_user_lists_a_missing_id_with_a_bad_time_zone_and_birth_date() {
    let t = TestApp::embedded().await;
    let body = json!({"fallback_time_zone": "Nowhere/Zone", "fallback_birth_date": "2999-01-01"});
    let a = t.post("/v2/user", body.clone()).await;
    assert_locs(
        "POST /v2/user",
        &a,
        &[&["body", "client_user_id"], &["body", "fallback_time_zone"], &["body", "fallback_birth_date"]],
    );
    let mut extra = body;
    extra["nickname"] = json!("not in the schema");
    let a = t.post("/v2/user", extra).await;
    assert_locs(
        "POST /v2/user with an undeclared key",
        &a,
        &[&["body", "client_user_id"], &["body", "fallback_time_zone"], &["body", "fallback_birth_date"]],
    );
}

#[tokio::test]
async fn patch_user_lists_a_wrong_type_with_a_bad_time_zone() {
    let t = TestApp::embedded().await;
    let user = t.create_user("one-422-patch").await;
    let body = json!({"ingestion_start": 5, "fallback_time_zone": "Nowhere/Zone", "extra": true});
    let a = t.patch(&format!("/v2/user/{user}"), body).await;
    assert_locs("PATCH /v2/user/{id}", &a, &[&["body", "ingestion_start"], &["body", "fallback_time_zone"]]);
}

#[tokio::test]
async fn demographics_list_missing_fields_with_a_bad_phone_despite_undeclared_keys() {
    let t = TestApp::embedded().await;
    let user = t.create_user("one-422-info").await;
    let mut body = without(info_body(), &["email"]);
    body = without(body, &["address", "city"]);
    body["phone_number"] = json!("12");
    body["first_name"] = json!("Gr@ce");
    body["nickname"] = json!("not in the schema");
    let a = t.patch(&format!("/v2/user/{user}/info"), body).await;
    assert_locs(
        "PATCH /v2/user/{id}/info",
        &a,
        &[
            &["body", "email"],
            &["body", "address", "city"],
            &["body", "phone_number"],
            &["body", "first_name"],
        ],
    );
    let missing: Vec<&Value> =
        a.body["detail"].as_array().unwrap().iter().filter(|i| i["type"] == "missing").collect();
    assert_eq!(missing.len(), 2, "{}", a.body);
}

#[tokio::test]
async fn insurance_lists_a_missing_member_id_with_a_bad_insured_phone_and_dob() {
    let t = TestApp::embedded().await;
    let user = t.create_user("one-422-ins").await;
    let mut body = without(insurance_body(), &["member_id"]);
    body["insured"]["phone_number"] = json!("12");
    body["insured"]["dob"] = json!("2999-01-01");
    body["plan"] = json!("not in the schema");
    let a = t.post(&format!("/v2/user/{user}/insurance"), body).await;
    assert_locs(
        "POST /v2/user/{id}/insurance",
        &a,
        &[&["body", "member_id"], &["body", "insured", "phone_number"], &["body", "insured", "dob"]],
    );
}

#[tokio::test]
async fn order_lists_a_missing_patient_field_with_a_bad_phone_and_name() {
    let t = TestApp::embedded().await;
    let user = t.create_user("one-422-order").await;
    let mut body = without(order_body(&user), &["patient_details", "email"]);
    body["patient_details"]["phone_number"] = json!("12");
    body["patient_details"]["last_name"] = json!("H0pper!");
    body["notes"] = json!("not in the schema");
    let a = t.post("/v3/order", body).await;
    assert_locs(
        "POST /v3/order",
        &a,
        &[
            &["body", "patient_details", "email"],
            &["body", "patient_details", "phone_number"],
            &["body", "patient_details", "last_name"],
        ],
    );

    // A wrong type in one place and a missing order set: both in the one answer.
    let mut body = without(order_body(&user), &["order_set"]);
    body["priority"] = json!("soon");
    let a = t.post("/v3/order", body).await;
    assert_locs("POST /v3/order without an order set", &a, &[&["body", "priority"], &["body", "order_set"]]);
}

#[tokio::test]
async fn a_field_under_its_alias_is_not_missing_but_others_still_are() {
    let t = TestApp::embedded().await;
    let user = t.create_user("one-422-alias").await;
    // info_body() holds the address's zip as `zip_code`; the city is missing.
    let body = without(info_body(), &["address", "city"]);
    let a = t.patch(&format!("/v2/user/{user}/info"), body).await;
    assert_locs("PATCH /v2/user/{id}/info", &a, &[&["body", "address", "city"]]);
}
