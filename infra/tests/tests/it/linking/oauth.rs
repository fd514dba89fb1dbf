use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::linking::tokens::LINK_TOKEN_HEADER;

use super::{link_token, path_of, query_param};
use crate::helpers::{Answer, TestApp, error_locs};

async fn start(t: &TestApp, provider: &str, token: Option<&str>) -> Answer {
    let headers: Vec<(&str, &str)> = token.map(|tk| vec![(LINK_TOKEN_HEADER, tk)]).unwrap_or_default();
    t.send_with(Method::GET, &format!("/v2/link/provider/oauth/{provider}"), &headers, None).await
}

/// A browser: GET without API key, following redirects on this API, up to `hops`; stops at a
/// redirect off this API (returning its Location) or at an answer.
async fn browse(t: &TestApp, url: &str, hops: usize) -> (Answer, Option<String>) {
    let mut path = path_of(url);
    for _ in 0..hops {
        let a = t.send(Method::GET, &path, None, None).await;
        let Some(loc) = a.headers.get("location").and_then(|v| v.to_str().ok()).map(str::to_owned) else {
            return (a, None);
        };
        assert!(a.status.is_redirection(), "{}", a.status);
        if loc.starts_with("https://app.example") {
            return (a, Some(loc));
        }
        path = path_of(&loc);
    }
    panic!("too many redirects");
}

/// Runs a consent with `decision`, returning where the browser lands.
async fn consent(
    t: &TestApp,
    provider: &str,
    token: &str,
    decision: &str,
    account: Option<&str>,
) -> (Answer, Option<String>) {
    let a = start(t, provider, Some(token)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    let mut url = format!("{}&decision={decision}", a.body["oauth_url"].as_str().unwrap());
    if let Some(acc) = account {
        url.push_str(&format!("&account={acc}"));
    }
    browse(t, &url, 5).await
}

#[tokio::test]
async fn round_trip_over_http_following_redirects() {
    let t = TestApp::embedded().await;
    let user = t.create_user("oa-1").await;
    let tk = link_token(&t, &user, json!({"redirect_url": "https://app.example/done?from=wearlab"})).await;
    let a = start(&t, "oura", Some(&tk)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["slug"], "oura");
    assert_eq!(a.body["auth_type"], "oauth");
    let oauth_url = a.body["oauth_url"].as_str().unwrap();
    assert!(oauth_url.starts_with("http://localhost/v2/link/sim/oauth/oura/authorize?"), "{oauth_url}");
    assert_eq!(query_param(oauth_url, "client_id").unwrap(), "wearlab-sim-oura");
    assert_eq!(
        query_param(oauth_url, "redirect_uri").unwrap(),
        "http://localhost/v2/link/provider/oauth/oura/callback"
    );

    // The consent page itself, then the user's choice.
    let (page, _) = browse(&t, oauth_url, 1).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.as_str().unwrap().contains("decision=allow"));
    let (_, landed) = browse(&t, &format!("{oauth_url}&decision=allow"), 5).await;
    let landed = landed.expect("redirected to the app");
    assert!(landed.starts_with("https://app.example/done?from=wearlab&state=success"), "{landed}");
    assert_eq!(query_param(&landed, "provider").unwrap(), "oura");
    assert!(query_param(&landed, "error_type").is_none());

    let conns = t.get(&format!("/v2/user/providers/{user}")).await;
    assert_eq!(conns.body["providers"][0]["slug"], "oura");
    assert_eq!(
        t.get(&format!("/v2/user/{user}")).await.body["connected_sources"][0]["provider"]["slug"],
        "oura"
    );
    // The token is spent, and so is the consent's state.
    let again = start(&t, "fitbit", Some(&tk)).await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST);
    assert!(again.body["detail"].as_str().unwrap().starts_with("token_consumed"));
    let (replay, _) = browse(&t, &format!("{oauth_url}&decision=allow"), 5).await;
    assert_eq!(replay.body["state"], "error");
    assert_eq!(replay.body["error_type"], "invalid_token");
}

#[tokio::test]
async fn refusals_at_the_provider_redirect_with_their_error_type() {
    let t = TestApp::embedded().await;
    let user = t.create_user("oa-2").await;
    for (decision, error_type) in [
        ("deny", "user_cancelled"),
        ("partial", "required_scopes_not_granted"),
        ("error", "provider_api_error"),
    ] {
        let tk = link_token(&t, &user, json!({"redirect_url": "https://app.example/done"})).await;
        let (_, landed) = consent(&t, "withings", &tk, decision, None).await;
        let landed = landed.unwrap();
        assert_eq!(query_param(&landed, "state").unwrap(), "error", "{landed}");
        assert_eq!(query_param(&landed, "error_type").unwrap(), error_type, "{landed}");
        assert!(!query_param(&landed, "error").unwrap().is_empty());
        // The token stays usable after a refusal.
        let (_, ok) = consent(&t, "withings", &tk, "allow", None).await;
        assert_eq!(query_param(&ok.unwrap(), "state").unwrap(), "success");
        assert_eq!(t.delete(&format!("/v2/user/{user}/withings")).await.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn without_redirect_url_the_callback_answers_the_link_result() {
    let t = TestApp::embedded().await;
    let user = t.create_user("oa-3").await;
    let tk = link_token(&t, &user, json!({})).await;
    let (a, landed) = consent(&t, "polar", &tk, "allow", None).await;
    assert!(landed.is_none());
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body["state"], "success");
    assert_eq!(a.body["provider"], "polar");
    assert_eq!(a.body["redirect_url"], Value::Null);
    // A callback without a state, or with an unknown one.
    let bare = t.send(Method::GET, "/v2/link/provider/oauth/polar/callback?code=x", None, None).await;
    assert_eq!(bare.body["error_type"], "invalid_token");
    let forged =
        t.send(Method::GET, "/v2/link/provider/oauth/polar/callback?code=x&state=abc", None, None).await;
    assert_eq!(forged.body["error_type"], "invalid_token");
}

#[tokio::test]
async fn team_oauth_providers_need_the_teams_app() {
    let t = TestApp::embedded().await;
    let user = t.create_user("oa-4").await;
    let tk = link_token(&t, &user, json!({"redirect_url": "https://app.example/done"})).await;
    let a = start(&t, "strava", Some(&tk)).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.body["detail"].as_str().unwrap().contains("/v2/team/oauth_app/strava"));
    let put = t
        .send(
            Method::PUT,
            "/v2/team/oauth_app/strava",
            Some(&t.key),
            Some(r#"{"client_id": "team-strava-app", "client_secret": "team-secret-123"}"#),
        )
        .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    let a = start(&t, "strava", Some(&tk)).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(query_param(a.body["oauth_url"].as_str().unwrap(), "client_id").unwrap(), "team-strava-app");
    let (_, landed) =
        browse(&t, &format!("{}&decision=allow", a.body["oauth_url"].as_str().unwrap()), 5).await;
    assert_eq!(query_param(&landed.unwrap(), "state").unwrap(), "success");
}

#[tokio::test]
async fn bad_tokens_providers_and_keys() {
    let t = TestApp::embedded().await;
    let user = t.create_user("oa-5").await;
    for token in [None, Some("nonsense"), Some(&*format!("lt_{}", "b".repeat(64)))] {
        let a = start(&t, "oura", token).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{token:?}");
        assert!(a.body["detail"].as_str().unwrap().starts_with("invalid_token"));
    }
    let tk = link_token(&t, &user, json!({"provider": "fitbit"})).await;
    assert!(
        start(&t, "oura", Some(&tk)).await.body["detail"]
            .as_str()
            .unwrap()
            .starts_with("token_not_validated")
    );
    t.clock.advance(chrono::Duration::minutes(61));
    assert!(
        start(&t, "fitbit", Some(&tk)).await.body["detail"].as_str().unwrap().starts_with("token_expired")
    );
    let tk = link_token(&t, &user, json!({})).await;
    assert_eq!(start(&t, "myspace", Some(&tk)).await.status, StatusCode::NOT_FOUND);
    let pw = start(&t, "peloton", Some(&tk)).await;
    assert_eq!(pw.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&pw.body), [["path", "provider"]]);
    let no_key =
        t.send_as(Method::GET, "/v2/link/provider/oauth/oura", None, &[(LINK_TOKEN_HEADER, &tk)], None).await;
    assert_eq!(no_key.status, StatusCode::UNAUTHORIZED);
    // Another team's key with this team's token.
    let other = t.other_team_key().await;
    let foreign = t
        .send_as(Method::GET, "/v2/link/provider/oauth/oura", Some(&other), &[(LINK_TOKEN_HEADER, &tk)], None)
        .await;
    assert!(foreign.body["detail"].as_str().unwrap().starts_with("invalid_token"));
}

#[tokio::test]
async fn hosted_page_starts_a_consent_with_the_token_alone() {
    let t = TestApp::embedded().await;
    let user = t.create_user("oa-6").await;
    let tk = link_token(
        &t,
        &user,
        json!({"redirect_url": "https://app.example/done", "filter_on_providers": ["garmin"]}),
    )
    .await;
    let page = t.send(Method::GET, &format!("/v2/link/web?token={tk}"), None, None).await;
    assert_eq!(page.status, StatusCode::OK);
    let html = page.body.as_str().unwrap();
    assert!(html.contains("Garmin") && !html.contains("Fitbit"));
    let start = t.send(Method::GET, &format!("/v2/link/web/oauth/garmin?token={tk}"), None, None).await;
    let consent_url = start.headers["location"].to_str().unwrap().to_owned();
    let (_, landed) = browse(&t, &format!("{consent_url}&decision=allow"), 5).await;
    assert_eq!(query_param(&landed.unwrap(), "state").unwrap(), "success");
    let gone = t.send(Method::GET, &format!("/v2/link/web?token={tk}"), None, None).await;
    assert_eq!(gone.status, StatusCode::GONE, "a consumed token");
}
