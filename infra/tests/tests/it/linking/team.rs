use http::{Method, StatusCode};
use wearlab_domain::keys;

use crate::helpers::{TestApp, error_locs};

const APP: &str = r#"{"client_id": "my-app", "client_secret": "very-secret-value"}"#;

#[tokio::test]
async fn oauth_app_put_get_delete_never_shows_the_secret() {
    let t = TestApp::embedded().await;
    let path = "/v2/team/oauth_app/dexcom_v3";
    assert_eq!(t.get(path).await.status, StatusCode::NOT_FOUND);
    let put = t.send(Method::PUT, path, Some(&t.key), Some(APP)).await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    assert_eq!(put.body["provider"], "dexcom_v3");
    assert_eq!(put.body["client_id"], "my-app");
    assert_eq!(put.body["client_secret_set"], true);
    assert!(!put.body.to_string().contains("very-secret-value"));
    let got = t.get(path).await;
    assert_eq!(got.body, put.body);
    // Stored sealed.
    let item = t.deps.table.get(&keys::linking::team_oauth_app(t.team, "dexcom_v3")).await.unwrap().unwrap();
    assert!(!item.body.to_string().contains("very-secret-value"));
    // Replacing keeps created_on.
    t.clock.advance(chrono::Duration::hours(1));
    let again = t
        .send(Method::PUT, path, Some(&t.key), Some(r#"{"client_id": "my-app-2", "client_secret": "s"}"#))
        .await;
    assert_eq!(again.body["created_on"], put.body["created_on"]);
    assert_ne!(again.body["updated_on"], put.body["updated_on"]);
    // Another team does not see it.
    let other = t.other_team_key().await;
    assert_eq!(t.send(Method::GET, path, Some(&other), None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.delete(path).await.body["success"], true);
    assert_eq!(t.delete(path).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.get(path).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn oauth_app_refuses_bad_input() {
    let t = TestApp::embedded().await;
    let path = "/v2/team/oauth_app/strava";
    for (body, loc) in [
        (r#"{"client_id": "x"}"#, vec!["body", "client_secret"]),
        (r#"{"client_id": "", "client_secret": "s"}"#, vec!["body", "client_id"]),
        (r#"{"client_id": "x", "client_secret": "  "}"#, vec!["body", "client_secret"]),
        (r#"{"client_id": 3, "client_secret": "s"}"#, vec!["body", "client_id"]),
    ] {
        let a = t.send(Method::PUT, path, Some(&t.key), Some(body)).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error_locs(&a.body), [loc], "{body}");
    }
    assert_eq!(
        t.send(Method::PUT, "/v2/team/oauth_app/myspace", Some(&t.key), Some(APP)).await.status,
        StatusCode::NOT_FOUND
    );
    let pw = t.send(Method::PUT, "/v2/team/oauth_app/peloton", Some(&t.key), Some(APP)).await;
    assert_eq!(pw.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(t.send(Method::PUT, path, None, Some(APP)).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(t.send(Method::GET, path, None, None).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(t.send(Method::DELETE, path, None, None).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn link_config_defaults_and_changes() {
    let t = TestApp::embedded().await;
    let a = t.get("/v2/team/link_config").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body["reject_duplicate_connection"], false);
    let p = t.patch("/v2/team/link_config", serde_json::json!({"reject_duplicate_connection": true})).await;
    assert_eq!(p.body["reject_duplicate_connection"], true);
    assert_eq!(
        t.patch("/v2/team/link_config", serde_json::json!({})).await.body["reject_duplicate_connection"],
        true
    );
    let bad =
        t.patch("/v2/team/link_config", serde_json::json!({"reject_duplicate_connection": "yes"})).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    let other = t.other_team_key().await;
    let theirs = t.send(Method::GET, "/v2/team/link_config", Some(&other), None).await;
    assert_eq!(theirs.body["reject_duplicate_connection"], false);
    assert_eq!(
        t.send(Method::GET, "/v2/team/link_config", None, None).await.status,
        StatusCode::UNAUTHORIZED
    );
}

/// A client id is one team's: another team cannot register it as its own app (it would have the
/// first team's pushes checked with its own secret), until the first team removes its app.
async fn a_client_id_belongs_to_one_team(t: &TestApp) {
    let path = "/v2/team/oauth_app/whoop_v2";
    let theirs = r#"{"client_id": "team-a-whoop", "client_secret": "team-a-secret"}"#;
    let a = t.send(Method::PUT, path, Some(&t.key), Some(theirs)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    // Registering it again (a new secret) is the same team's right.
    let again = r#"{"client_id": "team-a-whoop", "client_secret": "rotated"}"#;
    assert_eq!(t.send(Method::PUT, path, Some(&t.key), Some(again)).await.status, StatusCode::OK);

    let other = t.other_team_key().await;
    let forged = r#"{"client_id": "team-a-whoop", "client_secret": "attacker-secret"}"#;
    let a = t.send(Method::PUT, path, Some(&other), Some(forged)).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.body);
    assert!(a.body["detail"].as_str().unwrap_or_default().contains("another team"), "{}", a.body);
    assert_eq!(t.send(Method::GET, path, Some(&other), None).await.status, StatusCode::NOT_FOUND);
    // Its own client id it may register, and then not move it onto the first team's.
    let own = r#"{"client_id": "team-b-whoop", "client_secret": "b"}"#;
    assert_eq!(t.send(Method::PUT, path, Some(&other), Some(own)).await.status, StatusCode::OK);
    assert_eq!(t.send(Method::PUT, path, Some(&other), Some(forged)).await.status, StatusCode::BAD_REQUEST);

    // Moving the first team's app to another client id releases the old one; removing an app
    // releases its client id.
    let moved = r#"{"client_id": "team-a-whoop-2", "client_secret": "s"}"#;
    assert_eq!(t.send(Method::PUT, path, Some(&t.key), Some(moved)).await.status, StatusCode::OK);
    let b_again = r#"{"client_id": "team-a-whoop", "client_secret": "b"}"#;
    assert_eq!(t.send(Method::PUT, path, Some(&other), Some(b_again)).await.status, StatusCode::OK);
    let taken = r#"{"client_id": "team-b-whoop", "client_secret": "a"}"#;
    assert_eq!(t.send(Method::PUT, path, Some(&t.key), Some(taken)).await.status, StatusCode::OK, "released");
    assert_eq!(t.send(Method::DELETE, path, Some(&other), None).await.status, StatusCode::OK);
    let back = r#"{"client_id": "team-a-whoop", "client_secret": "a"}"#;
    assert_eq!(t.send(Method::PUT, path, Some(&t.key), Some(back)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_client_id_belongs_to_one_team_on_embedded_storage() {
    a_client_id_belongs_to_one_team(&TestApp::embedded().await).await;
}

#[tokio::test]
async fn a_client_id_belongs_to_one_team_on_dynamodb() {
    let (t, _, _) = crate::users_on_dynamodb::on_moto().await;
    a_client_id_belongs_to_one_team(&t).await;
}

/// The widget's order and hidden providers: set, kept by a PATCH that leaves them out, refused
/// (422 at the offending item) for an unknown or repeated slug, another team's untouched.
async fn widget_settings_are_kept(t: &TestApp) {
    let path = "/v2/team/link_config";
    let fresh = t.get(path).await;
    assert_eq!(fresh.body["provider_order"], serde_json::json!([]));
    assert_eq!(fresh.body["hidden_providers"], serde_json::json!([]));
    let set = t
        .patch(
            path,
            serde_json::json!({"provider_order": ["withings", "oura"], "hidden_providers": ["garmin"]}),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    assert_eq!(set.body["provider_order"], serde_json::json!(["withings", "oura"]));
    assert_eq!(set.body["hidden_providers"], serde_json::json!(["garmin"]));
    let kept = t.patch(path, serde_json::json!({"reject_duplicate_connection": true})).await;
    assert_eq!(kept.body["provider_order"], serde_json::json!(["withings", "oura"]));
    assert_eq!(t.get(path).await.body, kept.body);

    for (body, loc) in [
        (serde_json::json!({"provider_order": ["oura", "myspace"]}), vec!["body", "provider_order", "1"]),
        (
            serde_json::json!({"hidden_providers": ["garmin", "oura", "garmin"]}),
            vec!["body", "hidden_providers", "2"],
        ),
        (serde_json::json!({"provider_order": "oura"}), vec!["body", "provider_order"]),
    ] {
        let a = t.patch(path, body.clone()).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error_locs(&a.body), [loc], "{body}");
    }
    // A refused PATCH changes nothing.
    assert_eq!(t.get(path).await.body, kept.body);
    let cleared = t.patch(path, serde_json::json!({"provider_order": [], "hidden_providers": []})).await;
    assert_eq!(cleared.body["provider_order"], serde_json::json!([]));
    assert_eq!(cleared.body["hidden_providers"], serde_json::json!([]));
    let other = t.other_team_key().await;
    let theirs = t.send(Method::GET, path, Some(&other), None).await;
    assert_eq!(theirs.body["provider_order"], serde_json::json!([]));
}

#[tokio::test]
async fn widget_settings_are_kept_on_embedded_storage() {
    widget_settings_are_kept(&TestApp::embedded().await).await;
}

#[tokio::test]
async fn widget_settings_are_kept_on_dynamodb() {
    let (t, _, _) = crate::users_on_dynamodb::on_moto().await;
    widget_settings_are_kept(&t).await;
}
