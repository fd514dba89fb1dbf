//! A local Oura: the consent page (redirects straight back with a code), the token endpoint
//! with single-use rotating refresh tokens, `/v2/usercollection/*` from `fixtures/oura/` paged
//! by `next_token`, and `/oauth/revoke`. It counts calls and can be told to fail data calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Value, json};
use wearlab_domain::ports::providers::OauthClient;

use super::oauth::{Calls, Issuer, oauth_error};
use crate::config::{AppConfig, Endpoints};

/// The user every code is for (the fixture's `personal_info.id`).
pub const USER_ID: &str = "8f9a5221-639e-4a85-81cb-4065ef23f979";

const PERSONAL_INFO: &str = include_str!("../../fixtures/oura/personal_info.json");
const COLLECTIONS: [(&str, &str); 6] = [
    ("daily_activity", include_str!("../../fixtures/oura/daily_activity.json")),
    ("sleep", include_str!("../../fixtures/oura/sleep.json")),
    ("workout", include_str!("../../fixtures/oura/workout.json")),
    ("heartrate", include_str!("../../fixtures/oura/heartrate.json")),
    ("daily_spo2", include_str!("../../fixtures/oura/daily_spo2.json")),
    ("daily_readiness", include_str!("../../fixtures/oura/daily_readiness.json")),
];

struct Inner {
    /// Codes, tokens (refresh tokens single use, replaced on use) and the client check.
    issuer: Issuer,
    /// Numbers the webhook subscriptions.
    serial: u64,
    calls: Calls,
    /// Data calls still to fail, and with which status.
    failures: Vec<u16>,
    page_size: usize,
    /// Documents added after the fixtures (new data at Oura), by collection.
    added: HashMap<String, Vec<Value>>,
    /// Webhook subscriptions.
    subscriptions: Vec<Value>,
}

impl Inner {
    fn count(&mut self, what: &str) {
        self.calls.hit(what);
    }

    fn tokens(&mut self) -> Value {
        let (access, refresh) = self.issuer.issue();
        json!({"access_token": access, "refresh_token": refresh, "expires_in": 86400,
            "token_type": "bearer", "scope": crate::oura::SCOPES})
    }
}

#[derive(Clone)]
pub struct OuraFake {
    base: String,
    inner: Arc<Mutex<Inner>>,
}

type Shared = Arc<Mutex<Inner>>;

impl OuraFake {
    /// A fake Oura on a loopback port that knows the OAuth app `client`.
    pub async fn start(client: &OauthClient) -> Self {
        let inner = Arc::new(Mutex::new(Inner {
            issuer: Issuer::new(&crate::oura::DESCRIPTION, "oura", client.clone()),
            serial: 0,
            calls: Calls::default(),
            failures: Vec::new(),
            page_size: 2,
            added: HashMap::new(),
            subscriptions: Vec::new(),
        }));
        let app = Router::new()
            .route("/oauth/authorize", get(authorize))
            .route("/oauth/token", post(token))
            .route("/oauth/revoke", post(revoke))
            .route("/v2/usercollection/personal_info", get(personal_info))
            .route("/v2/usercollection/{kind}", get(collection))
            .route("/v2/webhook/subscription", get(list_subscriptions).post(create_subscription))
            .route("/v2/webhook/subscription/renew/{id}", axum::routing::put(renew_subscription))
            .with_state(inner.clone());
        Self { base: super::serve(app).await, inner }
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub fn endpoints(&self) -> Endpoints {
        super::oauth::endpoints(&self.base, &crate::oura::DESCRIPTION)
    }

    /// The adapter configuration pointing at this fake.
    pub fn config(&self, client: &OauthClient, push_token: Option<&str>) -> AppConfig {
        AppConfig {
            endpoints: self.endpoints(),
            platform_client: Some(client.clone()),
            push_token: push_token.map(wearlab_domain::common::crypto::Secret::new),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many calls reached `what`: `authorize`, `token:authorization_code`,
    /// `token:refresh_token`, `revoke`, `personal_info`, or a collection (`sleep`, ...).
    pub fn calls(&self, what: &str) -> usize {
        self.lock().calls.of(what) as usize
    }

    /// The next `times` data calls answer `status` (429 with Oura's rate-limit headers).
    pub fn fail_next(&self, status: u16, times: usize) {
        self.lock().failures.extend(std::iter::repeat_n(status, times));
    }

    /// Every access token issued so far is refused (401) from now on, as after an early expiry.
    pub fn expire_access_tokens(&self) {
        self.lock().issuer.expire_access();
    }

    /// Documents per page (2 by default, so every fixture spans pages).
    pub fn set_page_size(&self, n: usize) {
        self.lock().page_size = n.max(1);
    }

    /// New data at Oura: `doc` joins the collection `kind` (e.g. a new day's `daily_activity`).
    pub fn add_document(&self, kind: &str, doc: Value) {
        self.lock().added.entry(kind.to_owned()).or_default().push(doc);
    }

    /// The webhook subscriptions held, as Oura lists them.
    pub fn subscriptions(&self) -> Vec<Value> {
        self.lock().subscriptions.clone()
    }

    /// Moves every subscription's expiry to `at` (e.g. close, so that it is renewed).
    pub fn expire_subscriptions(&self, at: DateTime<Utc>) {
        for s in &mut self.lock().subscriptions {
            s["expiration_time"] = json!(at.to_rfc3339());
        }
    }

    /// Credentials as a code exchange would have issued them: `(access, refresh)`.
    pub fn issue_tokens(&self) -> (String, String) {
        let t = self.lock().tokens();
        (
            t["access_token"].as_str().unwrap_or_default().into(),
            t["refresh_token"].as_str().unwrap_or_default().into(),
        )
    }
}

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, Inner> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = lock(&s);
    inner.count("authorize");
    inner.issuer.consent(&q)
}

async fn token(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let mut inner = lock(&s);
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    inner.count(&format!("token:{grant}"));
    // Oura takes the client in the body.
    if !inner.issuer.authenticates(&form, &headers) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if !matches!(grant.as_str(), "authorization_code" | "refresh_token") {
        return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type");
    }
    // A code works once; so does a refresh token (a second use is refused).
    if !inner.issuer.redeem(&form) {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    axum::Json(inner.tokens()).into_response()
}

async fn revoke(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = lock(&s);
    inner.count("revoke");
    match q.get("access_token").is_some_and(|t| inner.issuer.revoke_access(t)) {
        true => StatusCode::OK.into_response(),
        false => oauth_error(StatusCode::BAD_REQUEST, "invalid_token"),
    }
}

/// The bearer check and the configured failures every data call goes through.
fn admit(inner: &mut Inner, headers: &HeaderMap, what: &str) -> Result<(), Box<Response>> {
    inner.count(what);
    if !inner.failures.is_empty() {
        let status = inner.failures.remove(0);
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut res = (code, axum::Json(json!({"status": status, "title": "fake failure"}))).into_response();
        if status == 429 {
            let reset = (Utc::now().timestamp() + 7).to_string();
            for (k, v) in [
                ("retry-after", "7".to_owned()),
                ("x-ratelimit-reset", reset),
                ("x-ratelimit-window", "300".into()),
            ] {
                if let Ok(v) = v.parse() {
                    res.headers_mut().insert(k, v);
                }
            }
        }
        return Err(Box::new(res));
    }
    if !inner.issuer.admits(headers) {
        return Err(unauthorized());
    }
    Ok(())
}

async fn personal_info(State(s): State<Shared>, headers: HeaderMap) -> Response {
    let mut inner = lock(&s);
    if let Err(r) = admit(&mut inner, &headers, "personal_info") {
        return *r;
    }
    let doc: Value = serde_json::from_str(PERSONAL_INFO).unwrap_or_default();
    axum::Json(doc).into_response()
}

fn in_range(doc: &Value, q: &HashMap<String, String>) -> bool {
    if let Some(day) = doc.get("day").and_then(Value::as_str).and_then(|d| d.parse::<NaiveDate>().ok()) {
        let bound = |k: &str| q.get(k).and_then(|v| v.get(..10)).and_then(|v| v.parse::<NaiveDate>().ok());
        return bound("start_date").is_none_or(|s| day >= s) && bound("end_date").is_none_or(|e| day <= e);
    }
    let at = |v: Option<&str>| v.and_then(|s| DateTime::parse_from_rfc3339(s).ok());
    match at(doc.get("timestamp").and_then(Value::as_str)) {
        Some(t) => {
            at(q.get("start_datetime").map(String::as_str)).is_none_or(|s| t >= s)
                && at(q.get("end_datetime").map(String::as_str)).is_none_or(|e| t < e)
        }
        None => false,
    }
}

async fn collection(
    State(s): State<Shared>,
    Path(kind): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let mut inner = lock(&s);
    let Some((_, fixture)) = COLLECTIONS.iter().find(|(k, _)| *k == kind) else {
        return (StatusCode::NOT_FOUND, axum::Json(json!({"status": 404, "title": "Not Found"})))
            .into_response();
    };
    if let Err(r) = admit(&mut inner, &headers, &kind) {
        return *r;
    }
    let all: Value = serde_json::from_str(fixture).unwrap_or_default();
    let added = inner.added.get(&kind).cloned().unwrap_or_default();
    let docs: Vec<&Value> = all["data"]
        .as_array()
        .map(|a| a.iter().chain(added.iter()).filter(|d| in_range(d, &q)).collect())
        .unwrap_or_default();
    let offset: usize = match q.get("next_token").map(|t| t.parse()) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            return (StatusCode::BAD_REQUEST, axum::Json(json!({"status": 400, "title": "bad next_token"})))
                .into_response();
        }
    };
    let end = (offset + inner.page_size).min(docs.len());
    let page: Vec<&Value> = docs.get(offset..end).map(|p| p.to_vec()).unwrap_or_default();
    let next = (end < docs.len()).then(|| end.to_string());
    axum::Json(json!({"data": page, "next_token": next})).into_response()
}

/// Oura's 401 (RFC 7807 body).
fn unauthorized() -> Box<Response> {
    Box::new(
        (StatusCode::UNAUTHORIZED, axum::Json(json!({"status": 401, "title": "Unauthorized"})))
            .into_response(),
    )
}

/// The app's credentials in `x-client-id` / `x-client-secret`, as Oura's subscription API takes them.
fn app_admitted(inner: &mut Inner, headers: &HeaderMap, what: &str) -> Result<(), Box<Response>> {
    inner.count(what);
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let client = &inner.issuer.client;
    if header("x-client-id") != client.client_id || header("x-client-secret") != client.client_secret.expose()
    {
        return Err(unauthorized());
    }
    Ok(())
}

async fn list_subscriptions(State(s): State<Shared>, headers: HeaderMap) -> Response {
    let mut inner = lock(&s);
    if let Err(r) = app_admitted(&mut inner, &headers, "subscription:list") {
        return *r;
    }
    axum::Json(inner.subscriptions.clone()).into_response()
}

async fn create_subscription(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let mut inner = lock(&s);
    if let Err(r) = app_admitted(&mut inner, &headers, "subscription:create") {
        return *r;
    }
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    let field = |k: &str| req.get(k).and_then(Value::as_str).map(str::to_owned);
    let (Some(callback_url), Some(_), Some(event_type), Some(data_type)) =
        (field("callback_url"), field("verification_token"), field("event_type"), field("data_type"))
    else {
        return (StatusCode::UNPROCESSABLE_ENTITY, axum::Json(json!({"status": 422}))).into_response();
    };
    inner.serial += 1;
    let sub = json!({"id": format!("sub-{}", inner.serial), "callback_url": callback_url, "event_type": event_type,
        "data_type": data_type, "expiration_time": (Utc::now() + chrono::Duration::days(90)).to_rfc3339()});
    inner.subscriptions.push(sub.clone());
    (StatusCode::CREATED, axum::Json(sub)).into_response()
}

async fn renew_subscription(State(s): State<Shared>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let mut inner = lock(&s);
    if let Err(r) = app_admitted(&mut inner, &headers, "subscription:renew") {
        return *r;
    }
    match inner.subscriptions.iter_mut().find(|s| s["id"] == id.as_str()) {
        Some(sub) => {
            sub["expiration_time"] = json!((Utc::now() + chrono::Duration::days(90)).to_rfc3339());
            axum::Json(sub.clone()).into_response()
        }
        None => (StatusCode::NOT_FOUND, axum::Json(json!({"status": 404}))).into_response(),
    }
}
