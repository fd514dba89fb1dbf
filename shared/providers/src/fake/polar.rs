//! The local fake of Polar AccessLink v3: the consent page (redirects back with `code` and
//! `state`), the token endpoint (client by HTTP Basic; a ten-year access token, no refresh token,
//! the user in `x_user_id`), user registration and deregistration, the non-transactional data
//! endpoints serving `fixtures/polar/` (the `from`/`to` ranges checked as Polar documents them),
//! and the webhook endpoints (client by HTTP Basic). Data calls count against the 15-minute
//! budget Polar publishes and answer 429 with its `RateLimit-*` headers past it; errors carry
//! Polar's error body `{timestamp, status, errorType, message, corrId}`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use chrono::{Duration, NaiveDate, Utc};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount, ProviderCredentials, PushRequest};

use super::oauth::{Calls, Issuer};
use crate::config::Endpoints;
use crate::polar::{MAX_DAYS_BACK, MAX_RANGE_DAYS, SIGNATURE_HEADER, sign};

/// The user every code is for (Polar's OpenAPI document's example user id).
pub const USER_ID: i64 = 475;
/// Polar's access tokens last about ten years (`expires_in: 315359999` in the token answer of
/// https://qiita.com/yaskitie/items/e658d4c8e6fbcba0ae18; `docs/PROVIDERS.md`, Polar, "Sources").
pub const EXPIRES_IN: i64 = 315_359_999;
/// Requests one client may make per 15 minutes with no registered user (Polar's base figure).
pub const WINDOW_BUDGET: u32 = 500;
const WINDOW_SECS: u64 = 900;

const EXERCISES: &str = include_str!("../../fixtures/polar/exercises.json");
const ACTIVITIES: &str = include_str!("../../fixtures/polar/activities.json");
const SLEEP: &str = include_str!("../../fixtures/polar/sleep.json");
const RECHARGE: &str = include_str!("../../fixtures/polar/nightly_recharge.json");
const HEART_RATE: &str = include_str!("../../fixtures/polar/continuous_heart_rate.json");
const PHYSICAL_INFO: &str = include_str!("../../fixtures/polar/physical_info.json");
/// Polar's OpenAPI document's example EXERCISE delivery, its time moved into the fixtures' days.
pub const WEBHOOK_EXERCISE: &str = include_str!("../../fixtures/polar/webhook_exercise.json");

type Params = Query<HashMap<String, String>>;

/// How the data calls fail while a switch is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Unauthorized,
    ServerError,
}

struct Inner {
    issuer: Issuer,
    calls: Calls,
    failure: Option<Failure>,
    /// The user has registered with the client (`POST /v3/users`).
    registered: bool,
    /// The user has not accepted Polar's mandatory consents: registration answers 403.
    consents_missing: bool,
    /// The member id registration was given.
    member_id: Option<String>,
    budget: u32,
    window: (Instant, u32),
    webhook: Option<Value>,
}

/// A running fake's handle: what it was asked, and its switches.
#[derive(Clone)]
pub struct FakePolar {
    inner: Arc<Mutex<Inner>>,
}

impl FakePolar {
    /// A fake that knows one OAuth client.
    pub fn new(client: OauthClient) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                issuer: Issuer::new(&crate::polar::DESCRIPTION, "polar", client),
                calls: Calls::default(),
                failure: None,
                registered: false,
                consents_missing: false,
                member_id: None,
                budget: WINDOW_BUDGET,
                window: (Instant::now(), 0),
                webhook: None,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves the fake on loopback; the endpoints an adapter is configured with.
    pub async fn start(&self) -> Endpoints {
        super::oauth::endpoints(&super::serve(self.router()).await, &crate::polar::DESCRIPTION)
    }

    pub fn router(&self) -> Router {
        let doc = |route: &'static str, fixture: &'static str| {
            get(move |s: State<FakePolar>, h: HeaderMap| document(s, h, route, fixture))
        };
        let by_range = |route: &'static str, fixture: &'static str, key: &'static str| {
            get(move |s: State<FakePolar>, h: HeaderMap, q: Params| ranged(s, h, q, route, fixture, key))
        };
        Router::new()
            .route("/oauth2/authorization", get(authorize))
            .route("/v2/oauth2/token", post(token))
            .route("/v3/users", post(register))
            .route("/v3/users/{user_id}", delete(deregister))
            .route("/v3/exercises", doc("exercises", EXERCISES))
            .route("/v3/users/sleep", doc("sleep", SLEEP))
            .route("/v3/users/nightly-recharge", doc("nightly-recharge", RECHARGE))
            .route("/v3/users/physical-info", doc("physical-info", PHYSICAL_INFO))
            .route("/v3/users/activities", by_range("activities", ACTIVITIES, "start_time"))
            .route("/v3/users/continuous-heart-rate", by_range("continuous-heart-rate", HEART_RATE, "date"))
            .route("/v3/webhooks", get(webhooks).post(create_webhook))
            .route("/v3/webhooks/activate", post(activate_webhook))
            .with_state(self.clone())
    }

    /// Calls that reached `route` (`authorize`, `token`, `register`, `deregister`, `exercises`,
    /// `activities`, `sleep`, `nightly-recharge`, `continuous-heart-rate`, `physical-info`,
    /// `webhooks`, `create-webhook`, `activate-webhook`).
    pub fn calls(&self, route: &str) -> u32 {
        self.lock().calls.of(route)
    }

    /// The query strings `route` received, in order.
    pub fn queries(&self, route: &str) -> Vec<HashMap<String, String>> {
        self.lock().calls.queries(route)
    }

    pub fn set_failure(&self, failure: Option<Failure>) {
        self.lock().failure = failure;
    }

    /// Registration answers 403, as for a user who has not accepted Polar's consents.
    pub fn withhold_consents(&self) {
        self.lock().consents_missing = true;
    }

    /// Whether the user is registered with the client, and under which member id.
    pub fn registration(&self) -> (bool, Option<String>) {
        let inner = self.lock();
        (inner.registered, inner.member_id.clone())
    }

    /// Data calls allowed in the current 15-minute window ([`WINDOW_BUDGET`] unless changed).
    pub fn set_window_budget(&self, n: u32) {
        self.lock().budget = n;
    }

    /// The fixtures' user, registered, with a token issued directly (as if linked).
    pub fn account(&self) -> ProviderAccount {
        let mut inner = self.lock();
        inner.registered = true;
        let (access, _) = inner.issuer.issue();
        ProviderAccount {
            external_user_id: USER_ID.to_string(),
            credentials: ProviderCredentials {
                access_token: Secret::new(access),
                refresh_token: None,
                expires_at: None,
                scopes: vec![],
            },
        }
    }

    /// The webhook as Polar keeps it, when there is one.
    pub fn webhook(&self) -> Option<Value> {
        self.lock().webhook.clone()
    }

    /// Polar deactivates a webhook after seven days of failed deliveries.
    pub fn deactivate_webhook(&self) {
        if let Some(hook) = self.lock().webhook.as_mut() {
            hook["active"] = json!(false);
        }
    }
}

/// A delivery as Polar sends it, signed with the webhook's `secret`.
pub fn signed_push(secret: &str, body: &[u8]) -> PushRequest {
    PushRequest {
        method: "POST".into(),
        query: vec![],
        headers: vec![
            ("content-type".into(), "application/json".into()),
            (SIGNATURE_HEADER.into(), sign(secret, body)),
        ],
        body: body.to_vec(),
    }
}

/// Polar's error body (Polar's OpenAPI document `error`).
fn error(status: StatusCode, error_type: &str, message: &str) -> Response {
    let body = json!({"timestamp": Utc::now().to_rfc3339(), "status": status.as_u16(),
        "errorType": error_type, "message": message, "corrId": "fake-corr-id"});
    (status, axum::Json(body)).into_response()
}

/// Counts a data call, applies the failure switch, the 15-minute budget and the bearer token:
/// the answer that refuses the call, if any.
fn refusal(
    fake: &FakePolar,
    headers: &HeaderMap,
    route: &'static str,
    query: HashMap<String, String>,
) -> Option<Response> {
    let mut inner = fake.lock();
    inner.calls.count(route, query);
    match inner.failure {
        Some(Failure::Unauthorized) => return Some(error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "token")),
        Some(Failure::ServerError) => {
            return Some(error(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_SERVER_ERROR", "failure"));
        }
        None => {}
    }
    if !inner.issuer.admits(headers) {
        return Some(error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "invalid access token"));
    }
    let elapsed = inner.window.0.elapsed().as_secs();
    if elapsed >= WINDOW_SECS {
        inner.window = (Instant::now(), 0);
    }
    inner.window.1 += 1;
    if inner.window.1 > inner.budget {
        let reset = WINDOW_SECS - elapsed.min(WINDOW_SECS - 1);
        let mut answer = error(StatusCode::TOO_MANY_REQUESTS, "TOO_MANY_REQUESTS", "rate limit exceeded");
        let h = answer.headers_mut();
        h.insert("ratelimit-usage", inner.window.1.into());
        h.insert("ratelimit-limit", inner.budget.into());
        h.insert("ratelimit-reset", reset.into());
        return Some(answer);
    }
    None
}

async fn authorize(State(fake): State<FakePolar>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("authorize", q.clone());
    inner.issuer.consent(&q)
}

async fn token(State(fake): State<FakePolar>, headers: HeaderMap, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let mut inner = fake.lock();
    inner.calls.count("token", HashMap::new());
    if !inner.issuer.authenticates(&form, &headers) {
        return error(StatusCode::UNAUTHORIZED, "invalid_client", "client authentication failed");
    }
    if form.get("grant_type").map(String::as_str) != Some("authorization_code") || !inner.issuer.redeem(&form)
    {
        return error(StatusCode::BAD_REQUEST, "invalid_grant", "unknown or used code");
    }
    let (access, _) = inner.issuer.issue();
    axum::Json(json!({"access_token": access, "token_type": "bearer", "expires_in": EXPIRES_IN,
        "x_user_id": USER_ID}))
    .into_response()
}

async fn register(State(fake): State<FakePolar>, headers: HeaderMap, body: Bytes) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("register", HashMap::new());
    if !inner.issuer.admits(&headers) {
        return error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "invalid access token");
    }
    let member = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|b| b.get("member-id").and_then(Value::as_str).map(str::to_owned));
    let Some(member) = member.filter(|m| !m.is_empty()) else {
        return error(StatusCode::BAD_REQUEST, "BAD_REQUEST", "member-id is required");
    };
    if inner.consents_missing {
        return error(StatusCode::FORBIDDEN, "FORBIDDEN", "User has not accepted all mandatory consents.");
    }
    if inner.registered {
        return error(StatusCode::CONFLICT, "CONFLICT", "User already registered to partner.");
    }
    inner.registered = true;
    inner.member_id = Some(member.clone());
    axum::Json(json!({"polar-user-id": USER_ID, "member-id": member,
        "registration-date": Utc::now().to_rfc3339()}))
    .into_response()
}

async fn deregister(State(fake): State<FakePolar>, headers: HeaderMap, Path(user): Path<String>) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("deregister", HashMap::new());
    if !inner.issuer.admits(&headers) {
        return error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "invalid access token");
    }
    if user != USER_ID.to_string() || !inner.registered {
        return error(StatusCode::NOT_FOUND, "NOT_FOUND", "user not found");
    }
    // "This will revoke the access token authorized by user" (Polar's OpenAPI document
    // `deleteUser`).
    inner.registered = false;
    inner.issuer.revoke_all();
    StatusCode::NO_CONTENT.into_response()
}

async fn document(
    State(fake): State<FakePolar>,
    headers: HeaderMap,
    route: &'static str,
    fixture: &'static str,
) -> Response {
    if let Some(refused) = refusal(&fake, &headers, route, HashMap::new()) {
        return refused;
    }
    let value: Value = serde_json::from_str(fixture).unwrap_or(Value::Null);
    axum::Json(value).into_response()
}

/// `from` and `to` as Polar checks them: dates, `from` not after `to`, at most
/// [`MAX_RANGE_DAYS`] apart, `from` at most [`MAX_DAYS_BACK`] days back; else the 400's message.
fn range_of(q: &HashMap<String, String>) -> Result<(NaiveDate, NaiveDate), &'static str> {
    let date = |k: &str| q.get(k).and_then(|v| v.parse::<NaiveDate>().ok());
    let (Some(from), Some(to)) = (date("from"), date("to")) else {
        return Err("from and to are required dates");
    };
    if from > to || (to - from).num_days() > MAX_RANGE_DAYS {
        return Err("the range is longer than 28 days");
    }
    if from < Utc::now().date_naive() - Duration::days(MAX_DAYS_BACK) {
        return Err("Invalid or too old date. Cannot be older than 365 days.");
    }
    Ok((from, to))
}

/// The fixture's documents whose day (`key`'s first ten characters) is in `from..=to`.
fn days(fixture: &str, key: &str, (from, to): (NaiveDate, NaiveDate)) -> Vec<Value> {
    let all: Vec<Value> = serde_json::from_str(fixture).unwrap_or_default();
    all.into_iter()
        .filter(|d| {
            d[key]
                .as_str()
                .and_then(|s| s.get(..10))
                .and_then(|s| s.parse::<NaiveDate>().ok())
                .is_some_and(|day| from <= day && day <= to)
        })
        .collect()
}

/// A `from`/`to` endpoint: the fixture's documents of the range, whose day is `key`'s. For
/// continuous heart rate, Polar's OpenAPI document's `continuous-heartrate` day objects as a list
/// (the document does not show a range answer with several days).
async fn ranged(
    State(fake): State<FakePolar>,
    headers: HeaderMap,
    Query(q): Params,
    route: &'static str,
    fixture: &'static str,
    key: &'static str,
) -> Response {
    if let Some(refused) = refusal(&fake, &headers, route, q.clone()) {
        return refused;
    }
    match range_of(&q) {
        Ok(range) => axum::Json(days(fixture, key, range)).into_response(),
        Err(message) => error(StatusCode::BAD_REQUEST, "BAD_REQUEST", message),
    }
}

async fn webhooks(State(fake): State<FakePolar>, headers: HeaderMap) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("webhooks", HashMap::new());
    if !inner.issuer.basic(&headers) {
        return error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "client authentication failed");
    }
    let data: Vec<Value> = inner
        .webhook
        .iter()
        .map(|h| json!({"id": h["id"], "events": h["events"], "url": h["url"], "active": h["active"]}))
        .collect();
    axum::Json(json!({"data": data})).into_response()
}

/// Creates the client's one webhook; its secret is in this answer only. (Polar first pings the
/// URL; the fake does not call out.)
async fn create_webhook(State(fake): State<FakePolar>, headers: HeaderMap, body: Bytes) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("create-webhook", HashMap::new());
    if !inner.issuer.basic(&headers) {
        return error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "client authentication failed");
    }
    if inner.webhook.is_some() {
        return error(StatusCode::CONFLICT, "CONFLICT", "Webhook already exists.");
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "BAD_REQUEST", "Webhook cannot be created.");
    };
    let (Some(events), Some(url)) = (request["events"].as_array(), request["url"].as_str()) else {
        return error(StatusCode::BAD_REQUEST, "BAD_REQUEST", "events and url are required");
    };
    let secret = inner.issuer.mint("signature-secret");
    let hook = json!({"id": "abdf33", "events": events, "url": url, "active": true});
    inner.webhook = Some(hook.clone());
    let mut data = hook;
    data["signature_secret_key"] = json!(secret);
    if let Some(map) = data.as_object_mut() {
        map.remove("active");
    }
    (StatusCode::CREATED, axum::Json(json!({"data": data}))).into_response()
}

async fn activate_webhook(State(fake): State<FakePolar>, headers: HeaderMap) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("activate-webhook", HashMap::new());
    if !inner.issuer.basic(&headers) {
        return error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "client authentication failed");
    }
    match inner.webhook.as_mut() {
        Some(hook) => {
            hook["active"] = json!(true);
            StatusCode::OK.into_response()
        }
        None => error(StatusCode::NOT_FOUND, "NOT_FOUND", "Webhook not found."),
    }
}
