use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::json;
use wearlab_domain::common::language::Language;
use wearlab_domain::keys;
use wearlab_domain::linking::tokens;

use super::{assert_link_error, link_token, password_link};
use crate::helpers::{TestApp, error_locs};

#[tokio::test]
async fn creates_a_one_time_token_stored_as_a_hash() {
    let t = TestApp::embedded().await;
    let user = t.create_user("tok-1").await;
    let a =
        t.post("/v2/link/token/", json!({"user_id": user, "redirect_url": "https://app.example/done"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let token = a.body["link_token"].as_str().unwrap();
    assert!(token.starts_with("lt_") && token.len() == 67, "{token}");
    let web = a.body["link_web_url"].as_str().unwrap();
    assert!(web.starts_with("http://localhost/v2/link/web?token=lt_"), "{web}");
    let hash = wearlab_domain::teams::hash_key(token);
    let item = t.deps.table.get(&keys::linking::link_token(&hash)).await.unwrap().expect("stored by hash");
    assert!(!item.body.to_string().contains(token), "the token itself is not stored");
    assert!(item.expires_at.is_some(), "tokens expire from storage");
    let page = t.send(Method::GET, &web.replace("http://localhost", ""), None, None).await;
    assert_eq!(page.status, StatusCode::OK, "the hosted page opens with the token alone");
    assert!(page.body.as_str().unwrap().contains("/v2/link/web/oauth/oura?token="));
}

/// The team's choice of language is kept on the token for its pages; a regional tag chooses its
/// language, and a token without one has none (the page then follows the browser).
#[tokio::test]
async fn keeps_the_chosen_language_on_the_token() {
    let t = TestApp::embedded().await;
    let user = t.create_user("tok-lang").await;
    for (sent, kept) in [(Some("es"), Some(Language::Es)), (Some("pt-BR"), Some(Language::Pt)), (None, None)]
    {
        let extra = sent.map_or(json!({}), |l| json!({ "language": l }));
        let token = link_token(&t, &user, extra).await;
        let seen = tokens::peek(&t.deps, Some(&token)).await.unwrap().expect("a usable token");
        assert_eq!(seen.language(), kept, "{sent:?}");
        let item = t.deps.table.get(&seen.key).await.unwrap().unwrap();
        assert_eq!(item.body.get("language").and_then(|l| l.as_str()), kept.map(Language::tag), "{sent:?}");
    }
}

#[tokio::test]
async fn rejects_bad_bodies_with_422() {
    let t = TestApp::embedded().await;
    let user = t.create_user("tok-2").await;
    for (body, loc) in [
        (json!({}), vec!["body", "user_id"]),
        (json!({"user_id": "nope"}), vec!["body", "user_id"]),
        (json!({"user_id": 5}), vec!["body", "user_id"]),
        (json!({"user_id": user, "provider": "myspace"}), vec!["body", "provider"]),
        (json!({"user_id": user, "redirect_url": "not a url"}), vec!["body", "redirect_url"]),
        (json!({"user_id": user, "redirect_url": "javascript://x"}), vec!["body", "redirect_url"]),
        (
            json!({"user_id": user, "filter_on_providers": ["oura", "nope"]}),
            vec!["body", "filter_on_providers", "1"],
        ),
        (json!({"user_id": user, "filter_on_providers": "oura"}), vec!["body", "filter_on_providers"]),
        (json!({"user_id": user, "language": "klingon"}), vec!["body", "language"]),
        (json!({"user_id": user, "language": "it"}), vec!["body", "language"]),
        (json!({"user_id": user, "language": 7}), vec!["body", "language"]),
    ] {
        let a = t.post("/v2/link/token", body.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", a.body);
        assert_eq!(error_locs(&a.body), [loc], "{body}");
    }
    let a = t.send(Method::POST, "/v2/link/token", Some(&t.key), Some("[1]")).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn unknown_and_foreign_users_are_404_and_keys_are_required() {
    let t = TestApp::embedded().await;
    let a = t.post("/v2/link/token", json!({"user_id": uuid::Uuid::new_v4()})).await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let user = t.create_user("tok-3").await;
    let other = t.other_team_key().await;
    let body = json!({"user_id": user}).to_string();
    let foreign = t.send(Method::POST, "/v2/link/token", Some(&other), Some(&body)).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
    let none = t.send(Method::POST, "/v2/link/token", None, Some(&body)).await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    let deleted = t.create_user("tok-4").await;
    t.delete(&format!("/v2/user/{deleted}")).await;
    assert_eq!(t.post("/v2/link/token", json!({"user_id": deleted})).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bad_tokens_give_their_error_type() {
    let t = TestApp::embedded().await;
    let user = t.create_user("tok-5").await;
    // Absent, malformed, well-formed but unknown.
    assert_link_error(&password_link(&t, "peloton", None, "jane").await, "peloton", "invalid_token");
    assert_link_error(
        &password_link(&t, "peloton", Some("garbage"), "jane").await,
        "peloton",
        "invalid_token",
    );
    let unknown = format!("lt_{}", "a".repeat(64));
    assert_link_error(
        &password_link(&t, "peloton", Some(&unknown), "jane").await,
        "peloton",
        "invalid_token",
    );

    // Expired: 60 minutes on the manual clock.
    let tk = link_token(&t, &user, json!({"redirect_url": "https://app.example/r"})).await;
    t.clock.advance(Duration::minutes(60));
    let a = password_link(&t, "peloton", Some(&tk), "jane").await;
    assert_link_error(&a, "peloton", "token_expired");
    assert_eq!(a.body["redirect_url"], "https://app.example/r");

    // Consumed by a success.
    let tk = link_token(&t, &user, json!({})).await;
    assert_eq!(password_link(&t, "peloton", Some(&tk), "jane").await.body["state"], "success");
    assert_link_error(&password_link(&t, "zwift", Some(&tk), "jane").await, "zwift", "token_consumed");

    // Made for another provider.
    let tk = link_token(&t, &user, json!({"provider": "zwift"})).await;
    assert_link_error(&password_link(&t, "renpho", Some(&tk), "jane").await, "renpho", "token_not_validated");
    let tk = link_token(&t, &user, json!({"filter_on_providers": ["whoop", "zwift"]})).await;
    assert_link_error(&password_link(&t, "renpho", Some(&tk), "jane").await, "renpho", "token_not_validated");
    assert_eq!(password_link(&t, "zwift", Some(&tk), "jane").await.body["state"], "success");

    // Another team's token is unknown to this team.
    let other = crate::helpers::TestApp::on(t.deps.clone(), t.clock.clone()).await;
    let other_user = other.create_user("theirs").await;
    let theirs = link_token(&other, &other_user, json!({})).await;
    assert_link_error(&password_link(&t, "renpho", Some(&theirs), "jane").await, "renpho", "invalid_token");

    // The token's user was deleted.
    let doomed = t.create_user("tok-6").await;
    let tk = link_token(&t, &doomed, json!({})).await;
    t.delete(&format!("/v2/user/{doomed}")).await;
    assert_link_error(&password_link(&t, "renpho", Some(&tk), "jane").await, "renpho", "invalid_token");
}
