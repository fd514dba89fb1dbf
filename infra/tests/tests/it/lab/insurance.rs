//! POST /v2/user/{user_id}/insurance and GET /v2/user/{user_id}/insurance/latest.

use http::StatusCode;
use serde_json::{Value, json};

use super::insurance_body;
use crate::helpers::{TestApp, error_locs};

async fn rejects(t: &TestApp, user: &str, body: Value, expected: &[&str]) {
    let a = t.post(&format!("/v2/user/{user}/insurance"), body).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    assert!(error_locs(&a.body).contains(&expected), "{expected:?} not in {}", a.body);
}

#[tokio::test]
async fn create_resolves_the_company_and_reads_back_as_latest_primary() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-1").await;
    let a = t.post(&format!("/v2/user/{user}/insurance"), insurance_body()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["company"]["name"], "Aetna");
    assert_eq!(a.body["company"]["address"]["zip"], "06156");
    assert_eq!(a.body["is_primary"], true, "is_primary defaults to true");
    assert_eq!(a.body["insured"]["address"]["zip"], "10001");
    let latest = t.get(&format!("/v2/user/{user}/insurance/latest")).await;
    assert_eq!(latest.status, StatusCode::OK);
    assert_eq!(latest.body, a.body);
    let explicit = t.get(&format!("/v2/user/{user}/insurance/latest?is_primary=true")).await;
    assert_eq!(explicit.body, a.body);
}

#[tokio::test]
async fn latest_is_the_newest_of_its_kind() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-2").await;
    let path = format!("/v2/user/{user}/insurance");
    assert_eq!(t.get(&format!("{path}/latest?is_primary=false")).await.status, StatusCode::NOT_FOUND);
    let mut secondary = insurance_body();
    secondary["is_primary"] = json!(false);
    secondary["payor_code"] = json!("87726");
    assert_eq!(t.post(&path, secondary).await.status, StatusCode::OK);
    t.clock.advance(chrono::Duration::seconds(1));
    let mut newer = insurance_body();
    newer["payor_code"] = json!("62308");
    newer["member_id"] = json!("NEW-1");
    assert_eq!(t.post(&path, newer).await.status, StatusCode::OK);
    let primary = t.get(&format!("{path}/latest")).await;
    assert_eq!(primary.body["member_id"], "NEW-1");
    assert_eq!(primary.body["company"]["name"], "Cigna");
    let second = t.get(&format!("{path}/latest?is_primary=false")).await;
    assert_eq!(second.status, StatusCode::OK);
    assert_eq!(second.body["company"]["name"], "UnitedHealthcare");
    assert_eq!(
        t.get(&format!("{path}/latest?is_primary=maybe")).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
}

#[tokio::test]
async fn latest_is_404_when_none() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-3").await;
    let a = t.get(&format!("/v2/user/{user}/insurance/latest")).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn unknown_or_foreign_user_is_404() {
    let t = TestApp::embedded().await;
    let unknown = uuid::Uuid::new_v4();
    assert_eq!(
        t.post(&format!("/v2/user/{unknown}/insurance"), insurance_body()).await.status,
        StatusCode::NOT_FOUND
    );
    let user = t.create_user("ins-4").await;
    assert_eq!(t.post(&format!("/v2/user/{user}/insurance"), insurance_body()).await.status, StatusCode::OK);
    let other = t.other_team_key().await;
    let a = t.send(http::Method::GET, &format!("/v2/user/{user}/insurance/latest"), Some(&other), None).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let body = insurance_body().to_string();
    let b =
        t.send(http::Method::POST, &format!("/v2/user/{user}/insurance"), Some(&other), Some(&body)).await;
    assert_eq!(b.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn unknown_payor_is_422() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-5").await;
    let mut body = insurance_body();
    body["payor_code"] = json!("NOPE99");
    rejects(&t, &user, body, &["body", "payor_code"]).await;
}

#[tokio::test]
async fn relationship_takes_self_spouse_other() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-6").await;
    let mut body = insurance_body();
    body["relationship"] = json!("Cousin");
    rejects(&t, &user, body, &["body", "relationship"]).await;
    let mut spouse = insurance_body();
    spouse["relationship"] = json!("Spouse");
    assert_eq!(t.post(&format!("/v2/user/{user}/insurance"), spouse).await.status, StatusCode::OK);
}

#[tokio::test]
async fn insured_gender_takes_documented_values() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-7").await;
    let mut body = insurance_body();
    body["insured"]["gender"] = json!("F");
    rejects(&t, &user, body, &["body", "insured", "gender"]).await;
}

#[tokio::test]
async fn insured_names_follow_the_patient_name_rule() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-8").await;
    let mut body = insurance_body();
    body["insured"]["last_name"] = json!("Sm!th");
    rejects(&t, &user, body, &["body", "insured", "last_name"]).await;
}

#[tokio::test]
async fn insured_dob_must_be_in_the_past() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-9").await;
    let mut body = insurance_body();
    body["insured"]["dob"] = json!("2031-01-01");
    rejects(&t, &user, body, &["body", "insured", "dob"]).await;
}

#[tokio::test]
async fn insured_email_must_be_an_email() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-10").await;
    let mut body = insurance_body();
    body["insured"]["email"] = json!("not-an-email");
    rejects(&t, &user, body, &["body", "insured", "email"]).await;
}

#[tokio::test]
async fn insured_address_zip_is_checked() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-11").await;
    let mut body = insurance_body();
    body["insured"]["address"]["zip"] = json!("ABCDE");
    rejects(&t, &user, body, &["body", "insured", "address", "zip"]).await;
}

#[tokio::test]
async fn member_id_is_required() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-12").await;
    let mut body = insurance_body();
    body.as_object_mut().unwrap().remove("member_id");
    rejects(&t, &user, body, &["body", "member_id"]).await;
    let mut blank = insurance_body();
    blank["member_id"] = json!("  ");
    rejects(&t, &user, blank, &["body", "member_id"]).await;
}

#[tokio::test]
async fn guarantor_requires_its_fields() {
    let t = TestApp::embedded().await;
    let user = t.create_user("ins-13").await;
    let mut body = insurance_body();
    body["guarantor"] = json!({"first_name": "Bob", "last_name": "Smith", "address": super::address()});
    rejects(&t, &user, body, &["body", "guarantor", "phone_number"]).await;
    let mut ok = insurance_body();
    ok["guarantor"] = json!({
        "first_name": "Bob", "last_name": "Smith", "address": super::address(), "phone_number": "2125550100",
        "household_income": 52000, "household_size": 3
    });
    let a = t.post(&format!("/v2/user/{user}/insurance"), ok).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["guarantor"]["household_size"], 3.0);
}

mod payor_search {
    use super::*;

    fn codes(body: &Value) -> Vec<&str> {
        body.as_array().unwrap().iter().map(|p| p["payor_code"].as_str().unwrap()).collect()
    }

    #[tokio::test]
    async fn names_and_aliases_match_case_insensitively() {
        let t = TestApp::embedded().await;
        let a = t.get("/v3/insurance/search/payor?insurance_name=uhc").await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert!(codes(&a.body).contains(&"87726"), "UHC is an alias of UnitedHealthcare: {}", a.body);
        let uhc = a.body.as_array().unwrap().iter().find(|p| p["payor_code"] == "87726").unwrap();
        assert_eq!(uhc["name"], "UnitedHealthcare");
        assert!(uhc["aliases"].as_array().unwrap().contains(&json!("UHC")));
        assert_eq!(uhc["org_address"]["state"], "MN");
        assert_eq!(uhc["source"], "platform");
        assert_eq!(uhc.as_object().unwrap().len(), 5, "payor_code, name, aliases, org_address, source");

        let a = t.get("/v3/insurance/search/payor?insurance_name=AETNA").await;
        assert_eq!(codes(&a.body), ["60054"]);
        let a = t.get("/v3/insurance/search/payor?insurance_name=no%20such%20insurer").await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.body, json!([]));
        let all = t.get("/v3/insurance/search/payor").await;
        assert!(all.body.as_array().unwrap().len() > 20, "the whole directory without criteria");
    }

    #[tokio::test]
    async fn a_found_code_is_accepted_by_the_insurance() {
        let t = TestApp::embedded().await;
        let found = t.get("/v3/insurance/search/payor?provider=availity&provider_payor_id=39026").await;
        assert_eq!(codes(&found.body), ["39026"], "{}", found.body);
        let user = t.create_user("ins-search").await;
        let mut body = insurance_body();
        body["payor_code"] = found.body[0]["payor_code"].clone();
        let a = t.post(&format!("/v2/user/{user}/insurance"), body).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert_eq!(a.body["company"]["name"], "UMR");
    }

    #[tokio::test]
    async fn unknown_provider_or_an_id_without_provider_is_422() {
        let t = TestApp::embedded().await;
        for query in ["provider=nope", "provider_payor_id=87726"] {
            let a = t.get(&format!("/v3/insurance/search/payor?{query}")).await;
            assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {}", a.body);
            assert_eq!(error_locs(&a.body), [["query", "provider"]], "{query}");
        }
    }
}
