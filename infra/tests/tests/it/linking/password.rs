use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{assert_link_error, link_token, password_link, post_linked};
use crate::helpers::{TestApp, error_locs};

#[tokio::test]
async fn success_connects_and_consumes_the_token() {
    let t = TestApp::embedded().await;
    let user = t.create_user("pw-1").await;
    let tk = link_token(&t, &user, json!({"redirect_url": "https://app.example/linked"})).await;
    let a = password_link(&t, "peloton", Some(&tk), "jane").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let r = &a.body;
    assert_eq!(r["state"], "success");
    assert_eq!(r["redirect_url"], "https://app.example/linked");
    assert_eq!(r["error_type"], Value::Null);
    assert_eq!(r["error"], Value::Null);
    assert_eq!(r["provider_mfa"], Value::Null);
    assert_eq!(r["provider"], "peloton");
    assert_eq!(r["connected"], true);
    assert!(r["provider_id"].as_str().unwrap().starts_with("peloton-"));

    let u = t.get(&format!("/v2/user/{user}")).await.body;
    let sources = u["connected_sources"].as_array().unwrap();
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0]["provider"]["slug"], "peloton");
    assert_eq!(sources[0]["provider"]["name"], "Peloton");
    assert_eq!(sources[0]["source"], sources[0]["provider"], "deprecated source carries the same");
    assert_eq!(sources[0]["created_on"], "2026-03-01T09:00:00Z");
    let listed = t.get("/v2/user?limit=10").await.body;
    assert_eq!(listed["users"][0]["connected_sources"], u["connected_sources"]);

    let conns = t.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(conns.status, StatusCode::OK);
    let c = &conns.body["providers"][0];
    assert_eq!(c["slug"], "peloton");
    assert_eq!(c["status"], "connected");
    assert_eq!(c["external_user_id"], r["provider_id"]);
    assert_eq!(c["resource_availability"]["workouts"]["status"], "available");

    assert_link_error(&password_link(&t, "peloton", Some(&tk), "jane").await, "peloton", "token_consumed");
}

#[tokio::test]
async fn every_provider_refusal_is_a_link_error() {
    let t = TestApp::embedded().await;
    let user = t.create_user("pw-2").await;
    for (username, password, error_type) in [
        ("bad-credentials", "x", "provider_credential_error"),
        ("jane", "wrong-password", "provider_credential_error"),
        ("jane-password-expired", "x", "provider_password_expired"),
        ("api-error", "x", "provider_api_error"),
    ] {
        let tk = link_token(&t, &user, json!({"redirect_url": "https://app.example/r"})).await;
        let a = post_linked(
            &t,
            "/v2/link/provider/password/zwift",
            Some(&tk),
            json!({"username": username, "password": password}),
        )
        .await;
        assert_link_error(&a, "zwift", error_type);
        assert_eq!(a.body["redirect_url"], "https://app.example/r");
        // A refusal leaves the token usable.
        assert_eq!(password_link(&t, "zwift", Some(&tk), "jane").await.body["state"], "success");
        t.delete(&format!("/v2/user/{user}/zwift")).await;
    }
}

#[tokio::test]
async fn region_is_checked_against_the_enum_and_the_provider() {
    let t = TestApp::embedded().await;
    let user = t.create_user("pw-3").await;
    let tk = link_token(&t, &user, json!({})).await;
    let path = "/v2/link/provider/password/abbott_libreview";
    let bad =
        post_linked(&t, path, Some(&tk), json!({"username": "j", "password": "p", "region": "atlantis"}))
            .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&bad.body), [["body", "region"]]);
    let a = post_linked(&t, path, Some(&tk), json!({"username": "j", "password": "p", "region": "in"})).await;
    assert_link_error(&a, "abbott_libreview", "unsupported_region");
    let ok =
        post_linked(&t, path, Some(&tk), json!({"username": "j", "password": "p", "region": "eu"})).await;
    assert_eq!(ok.body["state"], "success", "{}", ok.body);
    // Providers without regions ignore one.
    let tk = link_token(&t, &user, json!({})).await;
    let any = post_linked(
        &t,
        "/v2/link/provider/password/renpho",
        Some(&tk),
        json!({"username": "j", "password": "p", "region": "in"}),
    )
    .await;
    assert_eq!(any.body["state"], "success");
}

#[tokio::test]
async fn bad_input_unknown_providers_and_keys() {
    let t = TestApp::embedded().await;
    let user = t.create_user("pw-4").await;
    let tk = link_token(&t, &user, json!({})).await;
    for (body, loc) in [
        (json!({"password": "p"}), vec!["body", "username"]),
        (json!({"username": "u"}), vec!["body", "password"]),
        (json!({"username": 1, "password": "p"}), vec!["body", "username"]),
        (json!({"username": " ", "password": "p"}), vec!["body", "username"]),
        (json!({"username": "u", "password": ""}), vec!["body", "password"]),
    ] {
        let a = post_linked(&t, "/v2/link/provider/password/peloton", Some(&tk), body.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error_locs(&a.body), [loc], "{body}");
    }
    let unknown = password_link(&t, "myspace", Some(&tk), "u").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.body["detail"].as_str().unwrap().contains("myspace"));
    let oauth = password_link(&t, "oura", Some(&tk), "u").await;
    assert_eq!(oauth.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&oauth.body), [["path", "provider"]]);
    let body = json!({"username": "u", "password": "p"}).to_string();
    let no_key = t.send(Method::POST, "/v2/link/provider/password/peloton", None, Some(&body)).await;
    assert_eq!(no_key.status, StatusCode::UNAUTHORIZED);
    let mfa = t.send(Method::POST, "/v2/link/provider/password/peloton/complete_mfa", None, Some("{}")).await;
    assert_eq!(mfa.status, StatusCode::UNAUTHORIZED);
    // Nothing was consumed by the refusals.
    assert_eq!(password_link(&t, "peloton", Some(&tk), "u").await.body["state"], "success");
}

#[tokio::test]
async fn duplicate_connections_when_the_team_rejects_them() {
    let t = TestApp::embedded().await;
    let a_user = t.create_user("pw-5a").await;
    let b_user = t.create_user("pw-5b").await;
    // Allowed by default: relinking and sharing an account both work.
    assert_eq!(super::connect_password(&t, &a_user, "whoop", "shared").await["state"], "success");
    assert_eq!(super::connect_password(&t, &a_user, "whoop", "shared").await["state"], "success");
    assert_eq!(super::connect_password(&t, &b_user, "whoop", "shared").await["state"], "success");
    t.delete(&format!("/v2/user/{b_user}/whoop")).await;

    let cfg = t
        .send(
            Method::PATCH,
            "/v2/team/link_config",
            Some(&t.key),
            Some(r#"{"reject_duplicate_connection": true}"#),
        )
        .await;
    assert_eq!(cfg.status, StatusCode::OK);
    assert_eq!(cfg.body["reject_duplicate_connection"], true);
    // The same user again, and another user with the same provider account.
    let tk = link_token(&t, &a_user, json!({})).await;
    assert_link_error(
        &password_link(&t, "whoop", Some(&tk), "shared").await,
        "whoop",
        "duplicate_connection",
    );
    let tk = link_token(&t, &b_user, json!({})).await;
    assert_link_error(
        &password_link(&t, "whoop", Some(&tk), "shared").await,
        "whoop",
        "duplicate_connection",
    );
    // Another account is fine.
    assert_eq!(password_link(&t, "whoop", Some(&tk), "someone-else").await.body["state"], "success");
    // Removing the first connection frees the account.
    t.delete(&format!("/v2/user/{a_user}/whoop")).await;
    let c = t.get(&format!("/v2/user/providers/{b_user}")).await;
    assert_eq!(c.body["providers"].as_array().unwrap().len(), 1);
    assert_eq!(super::connect_password(&t, &a_user, "whoop", "shared").await["state"], "success");
}

mod mfa {
    use super::*;

    async fn complete(
        t: &TestApp,
        provider: &str,
        token: Option<&str>,
        code: &str,
    ) -> crate::helpers::Answer {
        post_linked(
            t,
            &format!("/v2/link/provider/password/{provider}/complete_mfa"),
            token,
            json!({"mfa_code": code}),
        )
        .await
    }

    #[tokio::test]
    async fn sms_round_trip_with_a_wrong_code_first() {
        let t = TestApp::embedded().await;
        let user = t.create_user("mfa-1").await;
        let tk = link_token(&t, &user, json!({"redirect_url": "https://app.example/r"})).await;
        let a = password_link(&t, "eight_sleep", Some(&tk), "jane-mfa-sms").await;
        assert_eq!(a.body["state"], "pending_provider_mfa", "{}", a.body);
        assert_eq!(a.body["provider_mfa"]["method"], "sms");
        let hint = a.body["provider_mfa"]["hint"].as_str().unwrap();
        assert!(hint.starts_with("+1 *** *** **"), "{hint}");
        assert_eq!(a.body["connected"], false);
        assert_eq!(a.body["error_type"], Value::Null);
        assert_eq!(a.body["redirect_url"], "https://app.example/r");

        let wrong = complete(&t, "eight_sleep", Some(&tk), "654321").await;
        assert_link_error(&wrong, "eight_sleep", "incorrect_mfa_code");
        let right = complete(&t, "eight_sleep", Some(&tk), "123456").await;
        assert_eq!(right.body["state"], "success", "{}", right.body);
        assert_eq!(right.body["connected"], true);
        assert_eq!(right.body["redirect_url"], "https://app.example/r");
        assert_link_error(
            &complete(&t, "eight_sleep", Some(&tk), "123456").await,
            "eight_sleep",
            "token_consumed",
        );
        let conns = t.get(&format!("/v2/user/providers/{user}")).await;
        assert_eq!(conns.body["providers"][0]["slug"], "eight_sleep");
    }

    #[tokio::test]
    async fn five_wrong_codes_drop_the_step() {
        let t = TestApp::embedded().await;
        let user = t.create_user("mfa-5").await;
        let tk = link_token(&t, &user, json!({})).await;
        assert_eq!(
            password_link(&t, "dexcom", Some(&tk), "mfa-sms").await.body["state"],
            "pending_provider_mfa"
        );
        for _ in 0..5 {
            assert_link_error(
                &complete(&t, "dexcom", Some(&tk), "111111").await,
                "dexcom",
                "incorrect_mfa_code",
            );
        }
        assert_link_error(
            &complete(&t, "dexcom", Some(&tk), "123456").await,
            "dexcom",
            "token_not_validated",
        );
        // The token itself is still good for a new login.
        assert_eq!(
            password_link(&t, "dexcom", Some(&tk), "mfa-sms").await.body["state"],
            "pending_provider_mfa"
        );
        assert_eq!(complete(&t, "dexcom", Some(&tk), "123456").await.body["state"], "success");
    }

    #[tokio::test]
    async fn email_hint_is_redacted() {
        let t = TestApp::embedded().await;
        let user = t.create_user("mfa-2").await;
        let tk = link_token(&t, &user, json!({})).await;
        let a = password_link(&t, "kardia", Some(&tk), "jane.mfa-email@example.com").await;
        assert_eq!(a.body["provider_mfa"]["method"], "email");
        let hint = a.body["provider_mfa"]["hint"].as_str().unwrap();
        assert!(hint.starts_with("j***") && hint.ends_with(".com") && !hint.contains("jane"), "{hint}");
        assert_link_error(&complete(&t, "kardia", Some(&tk), "000000").await, "kardia", "provider_api_error");
    }

    #[tokio::test]
    async fn completion_needs_the_token_of_the_pending_step() {
        let t = TestApp::embedded().await;
        let user = t.create_user("mfa-3").await;
        let other_user = t.create_user("mfa-4").await;
        let tk = link_token(&t, &user, json!({})).await;
        assert_eq!(
            password_link(&t, "whoop", Some(&tk), "mfa-sms").await.body["state"],
            "pending_provider_mfa"
        );
        // No token, a malformed one, another user's token, a token without a pending step.
        assert_link_error(&complete(&t, "whoop", None, "123456").await, "whoop", "invalid_token");
        assert_link_error(&complete(&t, "whoop", Some("lt_x"), "123456").await, "whoop", "invalid_token");
        let theirs = link_token(&t, &other_user, json!({})).await;
        assert_link_error(
            &complete(&t, "whoop", Some(&theirs), "123456").await,
            "whoop",
            "token_not_validated",
        );
        // Another provider than the pending one.
        assert_link_error(&complete(&t, "zwift", Some(&tk), "123456").await, "zwift", "token_not_validated");
        // Bad bodies and providers.
        let bad = complete(&t, "whoop", Some(&tk), "").await;
        assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error_locs(&bad.body), [["body", "mfa_code"]]);
        let missing =
            post_linked(&t, "/v2/link/provider/password/whoop/complete_mfa", Some(&tk), json!({})).await;
        assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(complete(&t, "myspace", Some(&tk), "1").await.status, StatusCode::NOT_FOUND);
        assert_eq!(complete(&t, "fitbit", Some(&tk), "1").await.status, StatusCode::UNPROCESSABLE_ENTITY);
        // Expired while pending.
        t.clock.advance(chrono::Duration::minutes(61));
        assert_link_error(&complete(&t, "whoop", Some(&tk), "123456").await, "whoop", "token_expired");
    }
}
