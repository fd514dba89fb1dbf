//! No password, token or secret in logs or answers: a whole linking session runs under a
//! subscriber that captures every log line at every level.

use std::io::Write;
use std::sync::{Arc, Mutex};

use http::{Method, StatusCode};
use serde_json::json;

use super::{link_token, post_linked};
use crate::helpers::TestApp;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const PASSWORD: &str = "Pw-that-must-never-leak-7731";
const USERNAME: &str = "secret.person.mfa-sms@example.com";
const CLIENT_SECRET: &str = "client-secret-never-shown-4412";

#[tokio::test]
async fn no_secret_in_logs_or_answers() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let t = TestApp::embedded().await;
    let user = t.create_user("secrets-1").await;
    let tk = link_token(&t, &user, json!({"redirect_url": "https://app.example/done"})).await;
    let mut answers = Vec::new();
    let body = json!({"username": USERNAME, "password": PASSWORD});
    // A refused login, a login asking for MFA, a wrong code, the right code.
    let refused = post_linked(
        &t,
        "/v2/link/provider/password/whoop",
        Some(&tk),
        json!({"username": "bad-credentials", "password": PASSWORD}),
    )
    .await;
    answers.push(refused.body.to_string());
    let pending = post_linked(&t, "/v2/link/provider/password/whoop", Some(&tk), body.clone()).await;
    assert_eq!(pending.body["state"], "pending_provider_mfa");
    answers.push(pending.body.to_string());
    for code in ["999999", "123456"] {
        let a = post_linked(
            &t,
            "/v2/link/provider/password/whoop/complete_mfa",
            Some(&tk),
            json!({"mfa_code": code}),
        )
        .await;
        answers.push(a.body.to_string());
    }
    assert_eq!(t.get(&format!("/v2/user/providers/{user}")).await.body["providers"][0]["slug"], "whoop");
    // A validation error on a password body.
    let bad =
        post_linked(&t, "/v2/link/provider/password/whoop", Some(&tk), json!({"password": PASSWORD})).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    answers.push(bad.body.to_string());
    // A team OAuth secret.
    let put = t
        .send(
            Method::PUT,
            "/v2/team/oauth_app/whoop_v2",
            Some(&t.key),
            Some(&json!({"client_id": "team-app", "client_secret": CLIENT_SECRET}).to_string()),
        )
        .await;
    answers.push(put.body.to_string());
    answers.push(t.get("/v2/team/oauth_app/whoop_v2").await.body.to_string());
    // An OAuth link on that app, end to end.
    let tk2 = link_token(&t, &user, json!({"redirect_url": "https://app.example/done"})).await;
    let start = t
        .send_with(
            Method::GET,
            "/v2/link/provider/oauth/whoop_v2",
            &[(wearlab_domain::linking::tokens::LINK_TOKEN_HEADER, &tk2)],
            None,
        )
        .await;
    let url = format!("{}&decision=allow", start.body["oauth_url"].as_str().unwrap());
    let to_callback = t.send(Method::GET, &super::path_of(&url), None, None).await;
    let callback = to_callback.headers["location"].to_str().unwrap().to_owned();
    let done = t.send(Method::GET, &super::path_of(&callback), None, None).await;
    assert!(done.headers["location"].to_str().unwrap().contains("state=success"));
    // Refresh and deletion use the stored credentials.
    answers.push(t.post_empty(&format!("/v2/user/refresh/{user}")).await.body.to_string());
    answers.push(t.delete(&format!("/v2/user/{user}")).await.body.to_string());

    let logged = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(logged.contains("connection created"), "the capture works: {logged}");
    for secret in [PASSWORD, USERNAME, "secret.person", CLIENT_SECRET, tk.as_str(), tk2.as_str(), "sim:whoop"]
    {
        assert!(!logged.contains(secret), "{secret} was logged");
        for a in &answers {
            assert!(!a.contains(secret), "{secret} in an answer: {a}");
        }
    }
}
