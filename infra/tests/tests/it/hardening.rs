//! Small refusals: paths that are not UTF-8, impossible birth dates, the local data file's
//! permissions.

use http::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{TestApp, error_locs};

#[tokio::test]
async fn a_path_that_is_not_utf8_gets_a_json_error() {
    let t = TestApp::embedded().await;
    for path in [
        "/v2/user/%FF",
        "/v2/user/resolve/%C3%28",
        "/v2/user/providers/%80abc",
        "/v2/link/provider/oauth/%FF",
        "/v3/order/%FE/result",
        "/v2/link/web/provider/%FF?token=x",
    ] {
        let a = t.send(Method::GET, path, Some(&t.key), None).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {}", a.body);
        assert_eq!(a.headers["content-type"], "application/json", "{path}");
        assert_eq!(error_locs(&a.body)[0], ["path"], "{path}");
    }
    // Percent-encoded UTF-8 is fine.
    let ok = t.get("/v2/user/resolve/caf%C3%A9").await;
    assert_eq!(ok.status, StatusCode::NOT_FOUND, "{}", ok.body);
}

#[tokio::test]
async fn birth_dates_before_1900_are_refused() {
    let t = TestApp::embedded().await;
    for date in ["1899-12-31", "0001-01-01", "-0001-01-01"] {
        let a = t.post("/v2/user", json!({"client_user_id": "old", "fallback_birth_date": date})).await;
        assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{date}: {}", a.body);
        assert_eq!(error_locs(&a.body)[0], ["body", "fallback_birth_date"], "{date}");
    }
    let user = t.create_user("born-1900").await;
    let patch = t.patch(&format!("/v2/user/{user}"), json!({"fallback_birth_date": "1850-06-01"})).await;
    assert_eq!(patch.status, StatusCode::UNPROCESSABLE_ENTITY);
    let ok = t.patch(&format!("/v2/user/{user}"), json!({"fallback_birth_date": "1900-01-01"})).await;
    assert_eq!(ok.status, StatusCode::NO_CONTENT, "{}", ok.body);
}

#[cfg(unix)]
#[tokio::test]
async fn the_local_data_file_is_the_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let root = std::env::temp_dir().join(format!("wearlab-perm-{}", uuid::Uuid::new_v4().simple()));
    let dir = root.join("data");
    let stack = wearlab_local::LocalStack::open(&dir).unwrap();
    drop(stack);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.join("wearlab.redb")), 0o600);
    assert_eq!(mode(&dir.join("data_key")), 0o600);
    assert_eq!(mode(&dir), 0o700);
    std::fs::remove_dir_all(&root).unwrap();
}

/// Every error is `{"detail": ...}` JSON, also where axum refuses a request before a handler
/// (a body over the limit, a query that does not parse) and for a URI longer than the API reads.
#[tokio::test]
async fn refusals_made_before_a_handler_are_json_too() {
    let t = TestApp::embedded().await;
    let json = |a: &crate::helpers::Answer, what: &str| {
        assert_eq!(a.headers["content-type"], "application/json", "{what}: {:?}", a.body);
        assert!(a.body["detail"].as_str().is_some_and(|d| !d.is_empty()), "{what}: {:?}", a.body);
    };
    let big = "a".repeat(7 * 1024 * 1024);
    let push = t.send(Method::POST, "/v2/provider_webhooks/oura", None, Some(&big)).await;
    assert_eq!(push.status, StatusCode::PAYLOAD_TOO_LARGE);
    json(&push, "a 7 MB push");

    // Longer ones (a 100,000-character cursor) never reach the app: the local stack's listener
    // answers them (`wearlab_local::listener`), API Gateway on AWS.
    let long = format!("/v2/user?cursor={}", "a".repeat(60_000));
    let a = t.get(&long).await;
    assert_eq!(a.status, StatusCode::URI_TOO_LONG);
    json(&a, "a 60,000-character cursor");
    let a = t.get(&format!("/v2/user/{}", "b".repeat(wearlab_web::MAX_URI_BYTES))).await;
    assert_eq!(a.status, StatusCode::URI_TOO_LONG);
    json(&a, "a long path");

    // The local stack's own routes too.
    let stack = t.stack.clone().unwrap();
    let local = TestApp { app: stack.app(crate::helpers::state(&t.deps)), ..t };
    let a = local.get("/local/events?limit=abc").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    json(&a, "a bad local parameter");
}

/// Hosted pages' 404 and 405 carry the pages' security headers; the requisition PDF (the
/// patient's name, date of birth and address) is never kept by a cache.
#[tokio::test]
async fn hosted_page_refusals_and_the_requisition_are_not_cached_or_framed() {
    let t = TestApp::embedded().await;
    for (method, path) in [
        (Method::POST, "/v2/link/web?token=x"),
        (Method::GET, "/v2/link/web/nothing/here"),
        (Method::GET, "/v3/p/abc/nothing"),
        (Method::DELETE, "/v3/portal"),
    ] {
        let a = t.send(method.clone(), path, None, None).await;
        assert!(
            a.status == StatusCode::NOT_FOUND || a.status == StatusCode::METHOD_NOT_ALLOWED,
            "{path}: {}",
            a.status
        );
        assert_eq!(a.headers["cache-control"], "no-store", "{method} {path}");
        assert!(
            a.headers["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"),
            "{path}"
        );
        assert_eq!(a.headers["x-frame-options"], "DENY", "{path}");
    }
    let (_, order) = crate::lab::place_order(&t, "pdf-cache").await;
    let id = order["id"].as_str().unwrap();
    let pdf = t.get(&format!("/v3/order/{id}/requisition/pdf")).await;
    assert_eq!(pdf.status, StatusCode::OK);
    assert_eq!(pdf.headers["content-type"], "application/pdf");
    assert_eq!(pdf.headers["cache-control"], "no-store");
}

/// With a public URL in the settings (a deployment's `WEARLAB_PUBLIC_URL`, read once at start)
/// every link points there, whatever host the request came to.
#[tokio::test]
async fn links_follow_the_configured_public_url() {
    let t = TestApp::embedded().await;
    let settings = wearlab_domain::common::settings::Settings::from_vars(|name| {
        (name == "WEARLAB_PUBLIC_URL").then(|| "https://api.example.com/".to_owned())
    })
    .unwrap();
    let t = TestApp { app: t.app_on(wearlab_web::AppState::new(t.deps.clone(), settings)), ..t };
    let user = t.create_user("links-public").await;
    let body = serde_json::json!({"user_id": user}).to_string();
    for headers in [vec![("host", "127.0.0.1:9999")], vec![("host", "evil.test")], vec![]] {
        let a = t.send_with(Method::POST, "/v2/link/token", &headers, Some(&body)).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        let url = a.body["link_web_url"].as_str().unwrap();
        assert!(url.starts_with("https://api.example.com/"), "{headers:?}: {url}");
    }
}

/// Without `WEARLAB_PUBLIC_URL` (the local stack) links follow the request's own loopback
/// `Host`; `X-Forwarded-Host` and other hosts never decide where a user is sent.
#[tokio::test]
async fn links_never_follow_a_forwarded_or_foreign_host() {
    let t = TestApp::embedded().await;
    let user = t.create_user("links-host").await;
    let body = serde_json::json!({"user_id": user}).to_string();
    for (headers, expected) in [
        (vec![("host", "127.0.0.1:9999"), ("x-forwarded-host", "evil.test")], "http://127.0.0.1:9999/"),
        (vec![("host", "evil.test")], "http://localhost/"),
        (vec![("host", "localhost:8080"), ("x-forwarded-proto", "https")], "https://localhost:8080/"),
    ] {
        let a = t.send_with(Method::POST, "/v2/link/token", &headers, Some(&body)).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        let url = a.body["link_web_url"].as_str().unwrap();
        assert!(url.starts_with(expected), "{headers:?}: {url}");
    }
}
