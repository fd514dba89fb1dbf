//! Tests of provider linking: the catalog, link tokens, password linking with MFA, OAuth over
//! HTTP, demo connections, connections and their deletion, refresh, team OAuth apps, events
//! (embedded bus and EventBridge -> SQS on moto), and that no secret reaches logs or answers.

mod backfill;
mod catalog;
mod connections;
mod events;
mod oauth;
mod password;
mod refresh;
mod revokes;
mod secrets;
mod team;
mod tokens;
mod widget;

use http::{Method, StatusCode};
use serde_json::{Value, json};
use wearlab_domain::linking::tokens::LINK_TOKEN_HEADER;

use crate::helpers::{Answer, TestApp};

/// A link token for `user` with extra fields of the request body.
pub async fn link_token(t: &TestApp, user: &str, extra: Value) -> String {
    let mut body = json!({ "user_id": user });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    let a = t.post("/v2/link/token", body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body["link_token"].as_str().unwrap().to_owned()
}

/// POST with this team's key and an optional link token.
pub async fn post_linked(t: &TestApp, path: &str, token: Option<&str>, body: Value) -> Answer {
    let headers: Vec<(&str, &str)> = token.map(|tk| vec![(LINK_TOKEN_HEADER, tk)]).unwrap_or_default();
    t.send_with(Method::POST, path, &headers, Some(&body.to_string())).await
}

/// A password link attempt.
pub async fn password_link(t: &TestApp, provider: &str, token: Option<&str>, username: &str) -> Answer {
    post_linked(
        t,
        &format!("/v2/link/provider/password/{provider}"),
        token,
        json!({"username": username, "password": "correct horse battery staple"}),
    )
    .await
}

/// Links `provider` (a password provider) for `user` with a fresh token; returns the result.
pub async fn connect_password(t: &TestApp, user: &str, provider: &str, username: &str) -> Value {
    let tk = link_token(t, user, json!({})).await;
    let a = password_link(t, provider, Some(&tk), username).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body
}

/// Connects a demo account.
pub async fn connect_demo(t: &TestApp, user: &str, provider: &str) {
    let a = t.post("/v2/link/connect/demo", json!({"user_id": user, "provider": provider})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
}

/// Asserts a Link result error of `error_type`, with the deprecated fields filled.
pub fn assert_link_error(a: &Answer, provider: &str, error_type: &str) {
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["state"], "error", "{}", a.body);
    assert_eq!(a.body["error_type"], error_type, "{}", a.body);
    assert!(a.body["error"].as_str().is_some_and(|e| !e.is_empty()), "{}", a.body);
    assert_eq!(a.body["provider"], provider);
    assert_eq!(a.body["connected"], false);
    assert_eq!(a.body["provider_id"], Value::Null);
    assert_eq!(a.body["provider_mfa"], Value::Null);
}

/// The path (and query) of an absolute or relative URL, to follow a redirect in-process.
pub fn path_of(url: &str) -> String {
    match url.split_once("://") {
        Some((_, rest)) => rest.find('/').map(|i| rest[i..].to_owned()).unwrap_or_else(|| "/".into()),
        None => url.to_owned(),
    }
}

/// The value of query parameter `name` in `url`, decoded.
pub fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1.split('#').next()?;
    form_urlencoded_pairs(query).into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

fn form_urlencoded_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (decode(k), decode(v))).collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap_or(b'?'));
            i += 3;
        } else {
            out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
