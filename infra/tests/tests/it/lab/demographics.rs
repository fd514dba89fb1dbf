//! PATCH /v2/user/{user_id}/info and GET /v2/user/{user_id}/info/latest.

use http::StatusCode;
use serde_json::{Value, json};

use super::info_body;
use crate::helpers::{TestApp, error_locs};

fn loc(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|s| s.to_string()).collect()
}

/// PATCHes `body` and expects a 422 naming `expected` among the locations.
async fn rejects(t: &TestApp, user: &str, body: Value, expected: &[&str]) {
    let a = t.patch(&format!("/v2/user/{user}/info"), body).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    assert!(error_locs(&a.body).contains(&loc(expected)), "{expected:?} not in {}", a.body);
}

fn with(mut body: Value, path: &[&str], value: Value) -> Value {
    let mut v = &mut body;
    for p in &path[..path.len() - 1] {
        v = &mut v[*p];
    }
    v[path[path.len() - 1]] = value;
    body
}

fn without(mut body: Value, path: &[&str]) -> Value {
    let mut v = &mut body;
    for p in &path[..path.len() - 1] {
        v = &mut v[*p];
    }
    v.as_object_mut().unwrap().remove(path[path.len() - 1]);
    body
}

#[tokio::test]
async fn set_then_read_latest_with_zip_alias() {
    let t = TestApp::embedded().await;
    let user = t.create_user("demo-1").await;
    let a = t.patch(&format!("/v2/user/{user}/info"), info_body()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["address"]["zip"], "10118", "zip_code is read as zip");
    assert!(a.body["address"].get("zip_code").is_none());
    assert!(a.body.get("medical_proxy").is_none(), "absent unless set");
    let got = t.get(&format!("/v2/user/{user}/info/latest")).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.body, a.body);
    assert_eq!(got.body["race"], "asian");

    // A second PATCH replaces the first; `zip` works as well as `zip_code`.
    let mut second = with(info_body(), &["first_name"], json!("Augusta"));
    second["address"] =
        json!({"first_line": "1 Main St", "city": "Austin", "state": "TX", "zip": "78701", "country": "US"});
    second["medical_proxy"] = json!({
        "first_name": "Bob", "last_name": "Smith", "phone_number": "5125550100",
        "address": {"first_line": "1 Main St", "city": "Austin", "state": "TX", "zip": "78701", "country": "US"}
    });
    assert_eq!(t.patch(&format!("/v2/user/{user}/info"), second).await.status, StatusCode::OK);
    let got = t.get(&format!("/v2/user/{user}/info/latest")).await;
    assert_eq!(got.body["first_name"], "Augusta");
    assert_eq!(got.body["address"]["zip"], "78701");
    assert_eq!(got.body["medical_proxy"]["first_name"], "Bob");
}

#[tokio::test]
async fn latest_is_404_before_any_patch() {
    let t = TestApp::embedded().await;
    let user = t.create_user("demo-2").await;
    assert_eq!(t.get(&format!("/v2/user/{user}/info/latest")).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn unknown_or_foreign_user_is_404() {
    let t = TestApp::embedded().await;
    let unknown = uuid::Uuid::new_v4();
    assert_eq!(t.patch(&format!("/v2/user/{unknown}/info"), info_body()).await.status, StatusCode::NOT_FOUND);
    let user = t.create_user("demo-3").await;
    assert_eq!(t.patch(&format!("/v2/user/{user}/info"), info_body()).await.status, StatusCode::OK);
    let other = t.other_team_key().await;
    let body = info_body().to_string();
    let p = t.send(http::Method::PATCH, &format!("/v2/user/{user}/info"), Some(&other), Some(&body)).await;
    assert_eq!(p.status, StatusCode::NOT_FOUND);
    let g = t.send(http::Method::GET, &format!("/v2/user/{user}/info/latest"), Some(&other), None).await;
    assert_eq!(g.status, StatusCode::NOT_FOUND);
    let bad = t.get("/v2/user/not-a-uuid/info/latest").await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn first_name_rejects_characters_outside_the_rule() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r1").await;
    rejects(&t, &user, with(info_body(), &["first_name"], json!("Ada_Lovelace")), &["body", "first_name"])
        .await;
}

#[tokio::test]
async fn last_name_longer_than_50_is_rejected() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r2").await;
    rejects(&t, &user, with(info_body(), &["last_name"], json!("a".repeat(51))), &["body", "last_name"])
        .await;
}

#[tokio::test]
async fn names_with_double_spaces_are_rejected() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r3").await;
    rejects(&t, &user, with(info_body(), &["first_name"], json!("Ada  Mae")), &["body", "first_name"]).await;
}

#[tokio::test]
async fn names_must_start_with_a_letter_or_digit() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r4").await;
    rejects(&t, &user, with(info_body(), &["last_name"], json!("'Smith")), &["body", "last_name"]).await;
}

#[tokio::test]
async fn email_must_be_an_email() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r5").await;
    rejects(&t, &user, with(info_body(), &["email"], json!("ada@example")), &["body", "email"]).await;
}

#[tokio::test]
async fn phone_number_needs_7_to_15_digits() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r6").await;
    rejects(&t, &user, with(info_body(), &["phone_number"], json!("555-01")), &["body", "phone_number"])
        .await;
}

#[tokio::test]
async fn dob_must_be_in_the_past() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r7").await;
    // The test clock is 2026-03-01.
    rejects(&t, &user, with(info_body(), &["dob"], json!("2026-03-01")), &["body", "dob"]).await;
    rejects(&t, &user, with(info_body(), &["dob"], json!("2030-01-01")), &["body", "dob"]).await;
}

#[tokio::test]
async fn every_required_field_is_required() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r8").await;
    for field in ["first_name", "last_name", "email", "phone_number", "gender", "dob", "address"] {
        rejects(&t, &user, without(info_body(), &[field]), &["body", field]).await;
    }
}

#[tokio::test]
async fn address_needs_zip_and_country() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r9").await;
    rejects(&t, &user, without(info_body(), &["address", "zip_code"]), &["body", "address", "zip"]).await;
    rejects(&t, &user, without(info_body(), &["address", "country"]), &["body", "address", "country"]).await;
}

#[tokio::test]
async fn us_address_needs_a_us_zip() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r10").await;
    rejects(
        &t,
        &user,
        with(info_body(), &["address", "zip_code"], json!("1011")),
        &["body", "address", "zip"],
    )
    .await;
}

#[tokio::test]
async fn us_address_needs_a_state_code() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r11").await;
    rejects(
        &t,
        &user,
        with(info_body(), &["address", "state"], json!("New York")),
        &["body", "address", "state"],
    )
    .await;
}

#[tokio::test]
async fn race_takes_documented_values() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r12").await;
    rejects(&t, &user, with(info_body(), &["race"], json!("martian")), &["body", "race"]).await;
}

#[tokio::test]
async fn ethnicity_takes_documented_values() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r13").await;
    rejects(&t, &user, with(info_body(), &["ethnicity"], json!("x")), &["body", "ethnicity"]).await;
}

#[tokio::test]
async fn sexual_orientation_takes_documented_values() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r14").await;
    rejects(
        &t,
        &user,
        with(info_body(), &["sexual_orientation"], json!("x")),
        &["body", "sexual_orientation"],
    )
    .await;
}

#[tokio::test]
async fn gender_identity_takes_documented_values() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r15").await;
    rejects(&t, &user, with(info_body(), &["gender_identity"], json!("x")), &["body", "gender_identity"])
        .await;
}

#[tokio::test]
async fn enums_may_be_null() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r16").await;
    let mut body = info_body();
    for k in ["race", "ethnicity", "sexual_orientation", "gender_identity"] {
        body[k] = Value::Null;
    }
    let a = t.patch(&format!("/v2/user/{user}/info"), body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["race"], Value::Null);
}

#[tokio::test]
async fn medical_proxy_needs_a_phone_number() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r17").await;
    let body = with(
        info_body(),
        &["medical_proxy"],
        json!({"first_name": "Bob", "last_name": "Smith", "address": super::address()}),
    );
    rejects(&t, &user, body, &["body", "medical_proxy", "phone_number"]).await;
}

#[tokio::test]
async fn every_offending_field_is_reported_at_once() {
    let t = TestApp::embedded().await;
    let user = t.create_user("r18").await;
    let mut body = with(info_body(), &["email"], json!("nope"));
    body["first_name"] = json!("-x");
    body["dob"] = json!("2099-01-01");
    let a = t.patch(&format!("/v2/user/{user}/info"), body).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    let locs = error_locs(&a.body);
    for f in ["email", "first_name", "dob"] {
        assert!(locs.contains(&loc(&["body", f])), "{f}: {locs:?}");
    }
}

#[tokio::test]
async fn one_422_names_every_missing_and_invalid_field() {
    let t = TestApp::embedded().await;
    let user = t.create_user("demo-all-fields").await;
    let a = t.patch(&format!("/v2/user/{user}/info"), json!({})).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    let expected: Vec<Vec<String>> =
        ["first_name", "last_name", "email", "phone_number", "gender", "dob", "address"]
            .iter()
            .map(|f| loc(&["body", f]))
            .collect();
    assert_eq!(error_locs(&a.body), expected, "{}", a.body);
    assert!(a.body["detail"].as_array().unwrap().iter().all(|i| i["type"] == "missing"));

    // Wrong types, a bad date and a missing nested field: all in one answer.
    let mut body = without(info_body(), &["address", "city"]);
    let zip = body["address"]["zip_code"].take();
    body = with(without(body, &["address", "zip_code"]), &["address", "zip"], zip);
    body = with(body, &["first_name"], json!(5));
    body = with(body, &["dob"], json!("not-a-date"));
    body = without(body, &["email"]);
    let a = t.patch(&format!("/v2/user/{user}/info"), body).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    let locs = error_locs(&a.body);
    for expected in
        [&["body", "first_name"][..], &["body", "email"], &["body", "dob"], &["body", "address", "city"]]
    {
        assert!(locs.contains(&loc(expected)), "{expected:?} not in {}", a.body);
    }
    assert_eq!(locs.len(), 4, "{}", a.body);

    // Under an alias (`zip_code` for `zip`) a field is not reported missing.
    let a = t.patch(&format!("/v2/user/{user}/info"), with(info_body(), &["dob"], json!(1))).await;
    assert_eq!(error_locs(&a.body), [loc(&["body", "dob"])], "{}", a.body);
    assert_eq!(
        t.get(&format!("/v2/user/{user}/info/latest")).await.status,
        StatusCode::NOT_FOUND,
        "nothing stored"
    );
}
