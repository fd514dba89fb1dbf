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
