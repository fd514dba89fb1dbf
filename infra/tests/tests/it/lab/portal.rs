//! POST /v2/user/{user_id}/create_portal_url and the portal pages it opens.

use chrono::Duration;
use http::{Method, StatusCode};
use serde_json::json;

use super::{info_body, path_of, place_order};
use crate::helpers::{TestApp, error_locs};

async fn with_demographics(t: &TestApp, client_user_id: &str) -> (String, serde_json::Value) {
    let (user, order) = place_order(t, client_user_id).await;
    assert_eq!(t.patch(&format!("/v2/user/{user}/info"), info_body()).await.status, StatusCode::OK);
    (user, order)
}

#[tokio::test]
async fn no_demographics_is_422() {
    let t = TestApp::embedded().await;
    let user = t.create_user("portal-1").await;
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "launch"})).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&a.body), vec![vec!["path", "user_id"]]);
}

#[tokio::test]
async fn launch_link_opens_the_page_for_ten_minutes() {
    let t = TestApp::embedded().await;
    let (user, order) = with_demographics(&t, "portal-2").await;
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "launch"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["expires_in"], 600);
    let url = path_of(a.body["url"].as_str().unwrap());
    assert!(url.starts_with("/v3/portal?token="), "{url}");
    let page = t.send(Method::GET, &url, None, None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.body.as_str().unwrap();
    assert!(html.contains("Hello Ada"), "{html}");
    assert!(html.contains("Essential Health Panel"));
    assert!(html.contains(order["status"].as_str().unwrap()));
    assert!(html.contains(&format!("order-{}", order["id"].as_str().unwrap())));
    assert_eq!(page.headers["cache-control"], "no-store");

    t.clock.advance(Duration::minutes(10) + Duration::seconds(1));
    let expired = t.send(Method::GET, &url, None, None).await;
    assert_eq!(expired.status, StatusCode::GONE);
    assert!(expired.body.as_str().unwrap().contains("expired"));
}

#[tokio::test]
async fn communications_link_is_short_and_lives_four_weeks() {
    let t = TestApp::embedded().await;
    let (user, _) = with_demographics(&t, "portal-3").await;
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "communications"})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["expires_in"], 4 * 7 * 24 * 3600);
    let url = path_of(a.body["url"].as_str().unwrap());
    assert!(url.starts_with("/v3/p/") && url.len() == "/v3/p/".len() + 12, "{url}");
    assert!(a.body["url"].as_str().unwrap().len() < 60, "short");
    // A new device confirms it is the user's first (see `verification`).
    let cookie = super::verification::verify_device(&t, &url).await;
    t.clock.advance(Duration::weeks(4) - Duration::minutes(1));
    let page = crate::hosted::get_page(&t, &url, Some(&cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Hello Ada"), "{}", page.html);
    t.clock.advance(Duration::minutes(2));
    assert_eq!(crate::hosted::get_page(&t, &url, Some(&cookie)).await.status, StatusCode::GONE);
    assert_eq!(t.send(Method::GET, "/v3/p/AAAAAAAAAAAA", None, None).await.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn tampered_tokens_are_refused() {
    let t = TestApp::embedded().await;
    let (user, _) = with_demographics(&t, "portal-4").await;
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "launch"})).await;
    let url = path_of(a.body["url"].as_str().unwrap());
    let (head, sig) = url.rsplit_once('.').unwrap();
    let flipped = format!("{head}.{}{}", if sig.starts_with('A') { 'B' } else { 'A' }, &sig[1..]);
    assert_eq!(t.send(Method::GET, &flipped, None, None).await.status, StatusCode::FORBIDDEN);
    assert_eq!(
        t.send(Method::GET, "/v3/portal?token=nonsense", None, None).await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(t.send(Method::GET, "/v3/portal", None, None).await.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn order_id_must_be_an_order_of_the_user() {
    let t = TestApp::embedded().await;
    let (user, order) = with_demographics(&t, "portal-5").await;
    let (_, other_order) = place_order(&t, "portal-6").await;
    let path = format!("/v2/user/{user}/create_portal_url");
    let foreign = t.post(&path, json!({"context": "launch", "order_id": other_order["id"]})).await;
    assert_eq!(foreign.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_locs(&foreign.body), vec![vec!["body", "order_id"]]);
    // A second order of the user, which a link for the first does not show.
    let second = t.post("/v3/order", super::order_body(&user)).await.body["order"].clone();
    let own = t.post(&path, json!({"context": "launch", "order_id": order["id"]})).await;
    assert_eq!(own.status, StatusCode::OK);
    let html = t.send(Method::GET, &path_of(own.body["url"].as_str().unwrap()), None, None).await;
    let html = html.body.as_str().unwrap();
    assert!(html.contains(&format!("order-{}", order["id"].as_str().unwrap())));
    assert!(!html.contains(&format!("order-{}", second["id"].as_str().unwrap())));
}

#[tokio::test]
async fn unknown_user_and_context() {
    let t = TestApp::embedded().await;
    let a = t
        .post(&format!("/v2/user/{}/create_portal_url", uuid::Uuid::new_v4()), json!({"context": "launch"}))
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    let (user, _) = with_demographics(&t, "portal-7").await;
    let b = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "carrier_pigeon"})).await;
    assert_eq!(b.status, StatusCode::UNPROCESSABLE_ENTITY);
    let other = t.other_team_key().await;
    let body = json!({"context": "launch"}).to_string();
    let c =
        t.send(Method::POST, &format!("/v2/user/{user}/create_portal_url"), Some(&other), Some(&body)).await;
    assert_eq!(c.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn links_of_a_deleted_user_no_longer_open() {
    let t = TestApp::embedded().await;
    let (user, _) = with_demographics(&t, "portal-8").await;
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": "communications"})).await;
    let url = path_of(a.body["url"].as_str().unwrap());
    assert_eq!(t.delete(&format!("/v2/user/{user}")).await.status, StatusCode::OK);
    assert_eq!(t.send(Method::GET, &url, None, None).await.status, StatusCode::NOT_FOUND);
}
