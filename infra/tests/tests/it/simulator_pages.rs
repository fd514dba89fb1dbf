//! The simulated providers' consent page: served only where simulation is configured, sends the
//! browser nowhere but this API's own OAuth callback, and carries the hosted pages' headers.

use http::{Method, StatusCode};

use crate::helpers::{Answer, TestApp};

const CALLBACK: &str = "http://localhost/v2/link/provider/oauth/oura/callback";

fn consent_path(redirect_uri: &str, decision: Option<&str>) -> String {
    let mut path = format!(
        "/v2/link/sim/oauth/oura/authorize?client_id=c&state=s&redirect_uri={}",
        redirect_uri.replace(':', "%3A").replace('/', "%2F")
    );
    if let Some(d) = decision {
        path.push_str(&format!("&decision={d}"));
    }
    path
}

async fn browse(t: &TestApp, path: &str) -> Answer {
    t.send(Method::GET, path, None, None).await
}

fn assert_hosted_headers(a: &Answer) {
    let h = |name: &str| a.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    assert!(h("content-security-policy").contains("frame-ancestors 'none'"), "{:?}", a.headers);
    assert_eq!(h("x-frame-options"), "DENY");
    assert_eq!(h("referrer-policy"), "no-referrer");
    assert_eq!(h("x-content-type-options"), "nosniff");
    assert_eq!(h("cache-control"), "no-store");
}

#[tokio::test]
async fn the_consent_page_redirects_only_to_this_apis_callback() {
    let t = TestApp::embedded().await;
    for elsewhere in [
        "https://evil.example/steal",
        "http://localhost/v2/link/provider/oauth/fitbit/callback",
        "http://evil.example/v2/link/provider/oauth/oura/callback",
        "http://localhost/v2/link/provider/oauth/oura/callback/../../../../x",
    ] {
        for decision in [Some("allow"), Some("deny"), None] {
            let a = browse(&t, &consent_path(elsewhere, decision)).await;
            assert_eq!(a.status, StatusCode::BAD_REQUEST, "{elsewhere} {decision:?}");
            assert!(a.headers.get("location").is_none(), "{elsewhere}");
            assert_hosted_headers(&a);
        }
    }
    let page = browse(&t, &consent_path(CALLBACK, None)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_hosted_headers(&page);
    let back = browse(&t, &consent_path(CALLBACK, Some("deny"))).await;
    assert_eq!(back.status, StatusCode::FOUND);
    assert!(back.headers["location"].to_str().unwrap().starts_with(CALLBACK), "{:?}", back.headers);
    assert_hosted_headers(&back);
}

#[tokio::test]
async fn a_deployed_link_api_serves_the_consent_page_only_when_simulation_is_configured() {
    let t = TestApp::embedded().await;
    let deployed = |t: &TestApp, pages: bool| {
        link_api::app(crate::helpers::state(&t.deps), t.ports.queue.clone(), pages)
    };
    let t = TestApp { app: deployed(&t, false), ..t };
    assert_eq!(browse(&t, &consent_path(CALLBACK, None)).await.status, StatusCode::NOT_FOUND);
    let t = TestApp { app: deployed(&t, true), ..t };
    assert_eq!(browse(&t, &consent_path(CALLBACK, None)).await.status, StatusCode::OK);
}
