//! Tests of the hosted pages end users open in a browser (the link widget, the user portal),
//! driven in-process like a browser without script would: GET pages, POST their forms. The
//! flows themselves are in `linking::widget` and `lab::verification`; the real-browser tests
//! are in `infra/browser-tests`. Here: what every page shares (headers, labels, CSRF).

use axum::body::Body;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;
use wearlab_domain::linking::encode;

use crate::helpers::TestApp;
use crate::lab::{info_body, path_of as lab_path, place_order};
use crate::linking::link_token;

/// An answer whose body is kept as text (pages are HTML).
pub struct PageAnswer {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub html: String,
}

impl PageAnswer {
    pub fn location(&self) -> String {
        self.headers.get("location").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
    }
}

async fn send(t: &TestApp, req: Request<Body>) -> PageAnswer {
    let res = t.app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    PageAnswer { status, headers, html: String::from_utf8_lossy(&bytes).into_owned() }
}

/// GET a page as a browser (no API key), with optional cookies.
pub async fn get_page(t: &TestApp, path: &str, cookie: Option<&str>) -> PageAnswer {
    let mut req = Request::builder().method(Method::GET).uri(path).header("accept", "text/html");
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    send(t, req.body(Body::empty()).unwrap()).await
}

/// GET a page as a browser that names its languages (`Accept-Language`).
pub async fn get_page_in(t: &TestApp, path: &str, accept_language: &str) -> PageAnswer {
    let req = Request::builder()
        .method(Method::GET)
        .uri(path)
        .header("accept", "text/html")
        .header("accept-language", accept_language);
    send(t, req.body(Body::empty()).unwrap()).await
}

/// POST a form as a browser does (`application/x-www-form-urlencoded`, no API key).
pub async fn post_form(t: &TestApp, path: &str, fields: &[(&str, &str)], cookie: Option<&str>) -> PageAnswer {
    let body =
        fields.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&");
    let mut req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "text/html");
    if let Some(c) = cookie {
        req = req.header("cookie", c);
    }
    send(t, req.body(Body::from(body)).unwrap()).await
}

/// The value of the first `name="field"` input of the page.
pub fn field_value(html: &str, field: &str) -> Option<String> {
    let at = html.find(&format!("name=\"{field}\" value=\""))?;
    let rest = &html[at + field.len() + 15..];
    Some(rest[..rest.find('"')?].replace("&amp;", "&"))
}

/// The CSRF token of the page's forms.
pub fn csrf_of(page: &PageAnswer) -> String {
    field_value(&page.html, "csrf").unwrap_or_else(|| panic!("no CSRF field in {}", page.html))
}

/// The `action` of the page's first form.
pub fn form_action(html: &str) -> String {
    let at = html.find("<form method=\"post\" action=\"").expect("a form") + 28;
    html[at..at + html[at..].find('"').unwrap()].replace("&amp;", "&")
}

/// Every hosted page answer carries these, whatever its status.
pub fn assert_page_headers(p: &PageAnswer, what: &str) {
    let h = |n: &str| p.headers.get(n).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let csp = h("content-security-policy");
    assert!(csp.contains("default-src 'none'"), "{what}: CSP {csp:?}");
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
    // No inline script anywhere; a page may run its API's own script file (the widget's list).
    assert!(!csp.contains("unsafe-inline"), "{what}: {csp}");
    let scripts = p.html.matches("<script").count();
    let own = p.html.matches("<script src=\"/v2/link/web/assets/widget.js\" defer></script>").count();
    assert_eq!(scripts, own, "{what}: only the widget's own script file");
    if own > 0 {
        assert!(csp.contains("script-src 'self';"), "{what}: {csp}");
    } else {
        assert!(!csp.contains("script-src"), "{what}: no script allowed: {csp}");
    }
    assert_eq!(h("x-frame-options"), "DENY", "{what}");
    assert_eq!(h("referrer-policy"), "no-referrer", "{what}");
    assert_eq!(h("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(h("cache-control"), "no-store", "{what}");
    if p.status.is_success() || p.status.is_client_error() {
        assert!(h("content-type").starts_with("text/html"), "{what}: {}", h("content-type"));
        assert!(
            p.html.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"),
            "{what}"
        );
    }
}

/// Every visible input and select of the page has a `<label for>` naming it.
pub fn assert_labelled(html: &str, what: &str) {
    let mut n = 0;
    for tag in ["<input ", "<select "] {
        for (at, _) in html.match_indices(tag) {
            let end = at + html[at..].find('>').unwrap();
            let el = &html[at..end];
            if el.contains("type=\"hidden\"") {
                continue;
            }
            let id = el
                .split("id=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap_or_else(|| panic!("{what}: no id: {el}"));
            assert!(
                html.contains(&format!("<label for=\"{id}\"")) || html.contains(&format!("for=\"{id}\"")),
                "{what}: no label for {id}"
            );
            n += 1;
        }
    }
    assert!(n > 0, "{what}: the page has inputs");
}

/// A portal link of a user with demographics and an order.
pub async fn portal_link(
    t: &TestApp,
    client_user_id: &str,
    context: &str,
) -> (String, serde_json::Value, String) {
    let (user, order) = place_order(t, client_user_id).await;
    assert_eq!(t.patch(&format!("/v2/user/{user}/info"), info_body()).await.status, StatusCode::OK);
    let a = t.post(&format!("/v2/user/{user}/create_portal_url"), json!({"context": context})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    (user, order, lab_path(a.body["url"].as_str().unwrap()))
}

#[tokio::test]
async fn every_page_and_answer_sets_the_security_headers() {
    let t = TestApp::embedded().await;
    let user = t.create_user("hp-1").await;
    let tk = link_token(&t, &user, json!({"redirect_url": "https://app.example/done"})).await;
    let list = get_page(&t, &format!("/v2/link/web?token={tk}"), None).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_page_headers(&list, "provider list");
    let form = get_page(&t, &format!("/v2/link/web/provider/whoop?token={tk}"), None).await;
    assert_page_headers(&form, "password form");
    // A form that may end on the team's redirect URL allows exactly its origin.
    let csp = form.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("form-action 'self' https://app.example;"), "{csp}");
    let csrf = csrf_of(&form);
    let mfa = post_form(
        &t,
        "/v2/link/web/password/whoop",
        &[("token", &tk), ("csrf", &csrf), ("username", "jane.mfa-sms"), ("password", "pw")],
        None,
    )
    .await;
    assert_page_headers(&mfa, "code form");
    let done = post_form(
        &t,
        "/v2/link/web/password/whoop/mfa",
        &[("token", &tk), ("csrf", &csrf_of(&mfa)), ("mfa_code", "123456")],
        None,
    )
    .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER);
    assert_page_headers(&done, "redirect");
    let used = get_page(&t, &format!("/v2/link/web?token={tk}"), None).await;
    assert_eq!(used.status, StatusCode::GONE);
    assert_page_headers(&used, "consumed token");
    let bad = get_page(&t, "/v2/link/web?token=nonsense", None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_page_headers(&bad, "invalid token");
    let refused = post_form(&t, "/v2/link/web/password/whoop", &[("token", &tk)], None).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_page_headers(&refused, "CSRF refusal");
    let unknown = get_page(
        &t,
        &format!("/v2/link/web/provider/myspace?token={}", link_token(&t, &user, json!({})).await),
        None,
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_page_headers(&unknown, "unknown provider");

    let (_, order, launch) = portal_link(&t, "hp-2", "launch").await;
    let portal = get_page(&t, &launch, None).await;
    assert_eq!(portal.status, StatusCode::OK);
    assert_page_headers(&portal, "portal");
    let token = launch.split("token=").nth(1).unwrap();
    let detail =
        get_page(&t, &format!("/v3/portal/orders/{}?token={token}", order["id"].as_str().unwrap()), None)
            .await;
    assert_eq!(detail.status, StatusCode::OK);
    assert_page_headers(&detail, "portal order");
    let (_, _, short) = portal_link(&t, "hp-3", "communications").await;
    let check = get_page(&t, &short, None).await;
    assert_eq!(check.status, StatusCode::OK);
    assert_page_headers(&check, "identity check");
    assert_page_headers(&get_page(&t, "/v3/p/AAAAAAAAAAAA", None).await, "unknown short link");
    assert_page_headers(&get_page(&t, "/v3/portal?token=a.b", None).await, "bad portal token");
    t.clock.advance(chrono::Duration::minutes(11));
    let expired = get_page(&t, &launch, None).await;
    assert_eq!(expired.status, StatusCode::GONE);
    assert_page_headers(&expired, "expired portal link");
    // JSON answers of the API are not pages.
    assert!(t.get("/v2/providers").await.headers.get("content-security-policy").is_none());
}

#[tokio::test]
async fn every_input_of_every_page_has_a_label() {
    let t = TestApp::embedded().await;
    let user = t.create_user("hp-4").await;
    let tk = link_token(&t, &user, json!({})).await;
    // abbott_libreview has regions: the select is labelled too.
    for provider in ["whoop", "abbott_libreview"] {
        let page = get_page(&t, &format!("/v2/link/web/provider/{provider}?token={tk}"), None).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.html);
        assert_labelled(&page.html, provider);
    }
    let page = get_page(&t, &format!("/v2/link/web/provider/abbott_libreview?token={tk}"), None).await;
    assert!(page.html.contains("<select id=\"region\" name=\"region\" required>"));
    let form = get_page(&t, &format!("/v2/link/web/provider/whoop?token={tk}"), None).await;
    let mfa = post_form(
        &t,
        "/v2/link/web/password/whoop",
        &[("token", &tk), ("csrf", &csrf_of(&form)), ("username", "mfa-email"), ("password", "pw")],
        None,
    )
    .await;
    assert_labelled(&mfa.html, "code form");
    let (_, _, short) = portal_link(&t, "hp-5", "communications").await;
    let check = get_page(&t, &short, None).await;
    assert_labelled(&check.html, "identity check");
    let sent = post_form(
        &t,
        &format!("{short}/verify/send"),
        &[("csrf", &csrf_of(&check)), ("channel", "sms")],
        None,
    )
    .await;
    assert_labelled(&sent.html, "code entry");
    // Credentials and codes travel in POST bodies, never in a page address.
    for html in [&form.html, &mfa.html, &sent.html] {
        assert!(html.contains("<form method=\"post\""));
        assert!(!html.contains("method=\"get\""));
    }
}
