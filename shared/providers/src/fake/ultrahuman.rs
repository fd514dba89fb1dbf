//! The local fake of Ultrahuman's partner API: the consent page (`/authorise`, redirects back with
//! `code` and `state`), the token endpoint (client in the body; refresh tokens single-use, a new
//! one in every answer), the revoke endpoint (form `token, client_id, client_secret`), `user_info`
//! and the daily metrics document (`/user_data/metrics?date=YYYY-MM-DD`) serving
//! `fixtures/ultrahuman/` (a day without a fixture has an empty `metric_data`). Ultrahuman
//! publishes no limits, so none is played; switches make the data calls answer 401, 429 or 500.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::NaiveDate;
use serde_json::{Value, json};
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount};

use super::oauth::{Calls, Issuer, oauth_error};
use crate::config::Endpoints;

/// The user every code is for (the `user_id` of `fixtures/ultrahuman/user_info.json`).
pub const USER_ID: &str = "ultrahuman_user_12345";
/// Seconds an access token lasts: "valid for a week" (Ultrahuman's partner API page).
pub const EXPIRES_IN: i64 = 604_800;

const USER_INFO: &str = include_str!("../../fixtures/ultrahuman/user_info.json");
const DAYS: [(&str, &str); 2] = [
    ("2026-11-21", include_str!("../../fixtures/ultrahuman/metrics_2026-11-21.json")),
    ("2026-11-22", include_str!("../../fixtures/ultrahuman/metrics_2026-11-22.json")),
];

/// How the data calls fail while a switch is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Unauthorized,
    /// 429, with `Retry-After` when given (Ultrahuman documents no limit nor reset header).
    RateLimited {
        retry_after: Option<u64>,
    },
    ServerError,
}

struct Inner {
    issuer: Issuer,
    calls: Calls,
    token_forms: Vec<HashMap<String, String>>,
    revoke_forms: Vec<HashMap<String, String>>,
    failure: Option<Failure>,
    /// Each day's `metric_data` (the fixtures', and any added).
    days: HashMap<NaiveDate, Vec<Value>>,
}

/// A running fake's handle: what it was asked, and its switches.
#[derive(Clone)]
pub struct FakeUltrahuman {
    inner: Arc<Mutex<Inner>>,
}

impl FakeUltrahuman {
    /// A fake that knows one OAuth application.
    pub fn new(client: OauthClient) -> Self {
        let days = DAYS
            .iter()
            .map(|(day, doc)| {
                let doc: Value = serde_json::from_str(doc).unwrap_or(Value::Null);
                let metrics = doc["data"]["metric_data"].as_array().cloned().unwrap_or_default();
                (day.parse().expect("a fixture's day"), metrics)
            })
            .collect();
        Self {
            inner: Arc::new(Mutex::new(Inner {
                issuer: Issuer::new(&crate::ultrahuman::DESCRIPTION, "ultrahuman", client),
                calls: Calls::default(),
                token_forms: Vec::new(),
                revoke_forms: Vec::new(),
                failure: None,
                days,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves the fake on loopback; the endpoints an adapter is configured with.
    pub async fn start(&self) -> Endpoints {
        super::oauth::endpoints(&super::serve(self.router()).await, &crate::ultrahuman::DESCRIPTION)
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/authorise", get(authorize))
            .route("/api/partners/oauth/token", post(token))
            .route("/api/partners/oauth/revoke", post(revoke))
            .route("/api/partners/v1/user_data/user_info", get(user_info))
            .route("/api/partners/v1/user_data/metrics", get(metrics))
            .with_state(self.clone())
    }

    /// Calls that reached `route` (`authorize`, `token`, `revoke`, `user_info`, `metrics`).
    pub fn calls(&self, route: &str) -> u32 {
        self.lock().calls.of(route)
    }

    /// Every call to Ultrahuman, whichever route.
    pub fn total_calls(&self) -> u32 {
        self.lock().calls.total()
    }

    /// The query strings `route` received, in order.
    pub fn queries(&self, route: &str) -> Vec<HashMap<String, String>> {
        self.lock().calls.queries(route)
    }

    /// The forms the token endpoint received, in order.
    pub fn token_forms(&self) -> Vec<HashMap<String, String>> {
        self.lock().token_forms.clone()
    }

    /// The forms the revoke endpoint received, in order.
    pub fn revoke_forms(&self) -> Vec<HashMap<String, String>> {
        self.lock().revoke_forms.clone()
    }

    pub fn set_failure(&self, failure: Option<Failure>) {
        self.lock().failure = failure;
    }

    /// A metric of `day` (`{type, object}`), as the ring's next sync brings one.
    pub fn add_metric(&self, day: NaiveDate, metric: Value) {
        self.lock().days.entry(day).or_default().push(metric);
    }

    /// The fixtures' user with credentials issued directly (as if linked).
    pub fn account(&self) -> ProviderAccount {
        self.lock().issuer.account(USER_ID.to_owned())
    }

    /// Ends every access token (as when they expire).
    pub fn expire_access_tokens(&self) {
        self.lock().issuer.expire_access();
    }
}

fn form_of(body: &Bytes) -> HashMap<String, String> {
    serde_urlencoded::from_bytes(body).unwrap_or_default()
}

/// Counts the call, records its query, applies the failure switch and the bearer token: the
/// answer that refuses the call, if any.
fn refusal(
    fake: &FakeUltrahuman,
    headers: &HeaderMap,
    route: &'static str,
    query: &HashMap<String, String>,
) -> Option<Response> {
    let mut inner = fake.lock();
    inner.calls.count(route, query.clone());
    match inner.failure {
        Some(Failure::Unauthorized) => return Some(StatusCode::UNAUTHORIZED.into_response()),
        Some(Failure::RateLimited { retry_after: Some(s) }) => {
            return Some((StatusCode::TOO_MANY_REQUESTS, [("retry-after", s.to_string())]).into_response());
        }
        Some(Failure::RateLimited { retry_after: None }) => {
            return Some(StatusCode::TOO_MANY_REQUESTS.into_response());
        }
        Some(Failure::ServerError) => return Some(StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        None => {}
    }
    (!inner.issuer.admits(headers)).then(|| StatusCode::UNAUTHORIZED.into_response())
}

async fn authorize(State(fake): State<FakeUltrahuman>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("authorize", q.clone());
    inner.issuer.consent(&q)
}

async fn token(State(fake): State<FakeUltrahuman>, headers: HeaderMap, body: Bytes) -> Response {
    let form = form_of(&body);
    let mut inner = fake.lock();
    inner.calls.hit("token");
    inner.token_forms.push(form.clone());
    if !inner.issuer.authenticates(&form, &headers) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if !inner.issuer.redeem(&form) {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    let (access, refresh) = inner.issuer.issue();
    axum::Json(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": EXPIRES_IN,
        "refresh_token": refresh,
        "scope": crate::ultrahuman::SCOPES,
    }))
    .into_response()
}

/// RFC 7009: the token ends (a refresh token with the access tokens of its grant: the fake's one
/// user has one grant); an unknown token is answered 200 as well.
async fn revoke(State(fake): State<FakeUltrahuman>, body: Bytes) -> Response {
    let form = form_of(&body);
    let mut inner = fake.lock();
    inner.calls.hit("revoke");
    inner.revoke_forms.push(form.clone());
    if !inner.issuer.in_form(&form) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    let Some(token) = form.get("token") else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
    };
    if inner.issuer.revoke_refresh(token) {
        inner.issuer.revoke_all();
    } else {
        inner.issuer.revoke_access(token);
    }
    StatusCode::OK.into_response()
}

async fn user_info(State(fake): State<FakeUltrahuman>, headers: HeaderMap) -> Response {
    if let Some(refused) = refusal(&fake, &headers, "user_info", &HashMap::new()) {
        return refused;
    }
    let info: Value = serde_json::from_str(USER_INFO).unwrap_or(Value::Null);
    axum::Json(info).into_response()
}

async fn metrics(
    State(fake): State<FakeUltrahuman>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = refusal(&fake, &headers, "metrics", &q) {
        return refused;
    }
    let Some(day) = q.get("date").and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok()) else {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "date is required (YYYY-MM-DD)"})))
            .into_response();
    };
    let metrics = fake.lock().days.get(&day).cloned().unwrap_or_default();
    axum::Json(json!({"data": {"metric_data": metrics}})).into_response()
}
