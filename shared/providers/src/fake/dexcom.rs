//! The local fake of Dexcom's API v3: the consent page (`/v2/oauth2/login`, redirects back with
//! `code` and `state`), the token endpoint (client and `redirect_uri` in the body), and
//! `/v3/users/self/{egvs,dataRange}` serving `fixtures/dexcom_v3/`. `egvs` requires its
//! `startDate`/`endDate` (ISO 8601 without offset, compared with each reading's `systemTime`) and
//! answers the readings between them, bounds included; Dexcom does not page. The application's
//! calls are counted against an hourly limit (60,000 by default) and answered 429 past it;
//! switches make the data calls answer 401, 429 or 500.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::NaiveDateTime;
use serde_json::{Value, json};
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount};

use super::oauth::{Calls, Issuer};
use crate::config::Endpoints;

/// The user the fixtures belong to (the `userId` of Dexcom's egvs example).
pub const USER_ID: &str = "079a528d-7cf7-d4b4-7704-1efbd08f921d";
/// Dexcom's published limit: calls per application per hour (Dexcom's v2 endpoint overview,
/// https://developer.dexcom.com/docs/dexcomv2/endpoint-overview).
pub const HOURLY_LIMIT: u32 = 60_000;

const EGVS: &str = include_str!("../../fixtures/dexcom_v3/egvs.json");
const DATA_RANGE: &str = include_str!("../../fixtures/dexcom_v3/data_range.json");

/// How the data calls fail while a switch is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Unauthorized,
    /// 429, with `Retry-After` when given (Dexcom documents no reset header).
    RateLimited {
        retry_after: Option<u64>,
    },
    ServerError,
}

struct Inner {
    issuer: Issuer,
    calls: Calls,
    token_forms: Vec<HashMap<String, String>>,
    /// `redirect_uri` of each code the consent page issued (RFC 6749 4.1.3: the exchange must
    /// repeat it).
    code_redirects: HashMap<String, String>,
    failure: Option<Failure>,
    hourly_limit: u32,
    /// Data calls in the current hour.
    used: u32,
    /// Token answers carry no new refresh token.
    no_rotation: bool,
    /// The user's readings (the fixture's, and any added).
    egvs: Vec<Value>,
}

/// A running fake's handle: what it was asked, and its switches.
#[derive(Clone)]
pub struct FakeDexcom {
    inner: Arc<Mutex<Inner>>,
}

impl FakeDexcom {
    /// A fake that knows one OAuth application.
    pub fn new(client: OauthClient) -> Self {
        let all: Value = serde_json::from_str(EGVS).unwrap_or(Value::Null);
        Self {
            inner: Arc::new(Mutex::new(Inner {
                issuer: Issuer::new(&crate::dexcom::DESCRIPTION, "dexcom", client),
                calls: Calls::default(),
                token_forms: Vec::new(),
                code_redirects: HashMap::new(),
                failure: None,
                hourly_limit: HOURLY_LIMIT,
                used: 0,
                no_rotation: false,
                egvs: all["records"].as_array().cloned().unwrap_or_default(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves the fake on loopback; the endpoints an adapter is configured with (one host, as
    /// Dexcom's).
    pub async fn start(&self) -> Endpoints {
        crate::dexcom::Dexcom::endpoints_on(&super::serve(self.router()).await)
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/v2/oauth2/login", get(authorize))
            .route("/v2/oauth2/token", post(token))
            .route("/v3/users/self/egvs", get(egvs))
            .route("/v3/users/self/dataRange", get(data_range))
            .with_state(self.clone())
    }

    /// Calls that reached `route` (`authorize`, `token`, `egvs`, `dataRange`).
    pub fn calls(&self, route: &str) -> u32 {
        self.lock().calls.of(route)
    }

    /// Every call to Dexcom, whichever route.
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

    pub fn set_failure(&self, failure: Option<Failure>) {
        self.lock().failure = failure;
    }

    /// At most `n` data calls this hour (the counter starts again from zero).
    pub fn set_hourly_limit(&self, n: u32) {
        let mut inner = self.lock();
        inner.hourly_limit = n;
        inner.used = 0;
    }

    /// Refreshes answer without a new refresh token.
    pub fn stop_rotating(&self) {
        self.lock().no_rotation = true;
    }

    /// A new reading of the user (as the sensor uploads one).
    pub fn add_egv(&self, record: Value) {
        self.lock().egvs.push(record);
    }

    /// The fixtures' user with credentials issued directly (as if linked).
    pub fn account(&self) -> ProviderAccount {
        self.lock().issuer.account(USER_ID.to_owned())
    }

    /// Ends every access token (as Dexcom does after two hours).
    pub fn expire_access_tokens(&self) {
        self.lock().issuer.expire_access();
    }
}

fn error(status: StatusCode, code: &str) -> Response {
    (status, axum::Json(json!({"error": code}))).into_response()
}

/// Counts the call, records its query, applies the failure switch, the hourly limit and the
/// bearer token: the answer that refuses the call, if any.
fn refusal(
    fake: &FakeDexcom,
    headers: &HeaderMap,
    route: &'static str,
    query: &HashMap<String, String>,
) -> Option<Response> {
    let mut inner = fake.lock();
    inner.calls.count(route, query.clone());
    let too_many = |retry_after: Option<u64>| match retry_after {
        Some(s) => (StatusCode::TOO_MANY_REQUESTS, [("retry-after", s.to_string())]).into_response(),
        None => StatusCode::TOO_MANY_REQUESTS.into_response(),
    };
    match inner.failure {
        Some(Failure::Unauthorized) => return Some(StatusCode::UNAUTHORIZED.into_response()),
        Some(Failure::RateLimited { retry_after }) => return Some(too_many(retry_after)),
        Some(Failure::ServerError) => return Some(StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        None => {}
    }
    if inner.used >= inner.hourly_limit {
        return Some(too_many(None));
    }
    inner.used += 1;
    (!inner.issuer.admits(headers)).then(|| StatusCode::UNAUTHORIZED.into_response())
}

async fn authorize(State(fake): State<FakeDexcom>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("authorize", q.clone());
    if q.get("response_type").map(String::as_str) != Some("code") {
        return error(StatusCode::BAD_REQUEST, "unsupported_response_type");
    }
    let answer = inner.issuer.consent(&q);
    // Remember the callback the code was issued for.
    let code = answer
        .headers()
        .get(axum::http::header::LOCATION)
        .and_then(|l| url::Url::parse(l.to_str().ok()?).ok())
        .and_then(|u| u.query_pairs().find(|(k, _)| k == "code").map(|(_, v)| v.into_owned()));
    if let (Some(code), Some(redirect)) = (code, q.get("redirect_uri")) {
        inner.code_redirects.insert(code, redirect.clone());
    }
    answer
}

async fn token(State(fake): State<FakeDexcom>, headers: HeaderMap, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let mut inner = fake.lock();
    inner.calls.hit("token");
    inner.token_forms.push(form.clone());
    if !inner.issuer.authenticates(&form, &headers) {
        return error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if form.get("grant_type").map(String::as_str) == Some("authorization_code") {
        let issued_for = form.get("code").and_then(|c| inner.code_redirects.get(c));
        if issued_for.is_none() || issued_for != form.get("redirect_uri") {
            return error(StatusCode::BAD_REQUEST, "invalid_grant");
        }
    }
    if !inner.issuer.redeem(&form) {
        return error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    let (access, refresh) = inner.issuer.issue();
    // The shape of Dexcom's token example (api-evangelist/dexcom token response).
    let mut answer = json!({"access_token": access, "expires_in": 7200, "token_type": "Bearer"});
    let refreshing = form.get("grant_type").map(String::as_str) == Some("refresh_token");
    if !(refreshing && inner.no_rotation) {
        answer["refresh_token"] = json!(refresh);
    }
    axum::Json(answer).into_response()
}

fn date_param(q: &HashMap<String, String>, name: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(q.get(name)?, "%Y-%m-%dT%H:%M:%S").ok()
}

async fn egvs(
    State(fake): State<FakeDexcom>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refused) = refusal(&fake, &headers, "egvs", &q) {
        return refused;
    }
    let (Some(start), Some(end)) = (date_param(&q, "startDate"), date_param(&q, "endDate")) else {
        return error(StatusCode::BAD_REQUEST, "startDate and endDate are required (ISO 8601, no offset)");
    };
    if end <= start {
        return error(StatusCode::BAD_REQUEST, "endDate must be after startDate");
    }
    let records: Vec<Value> = fake
        .lock()
        .egvs
        .iter()
        .filter(|r| {
            r["systemTime"]
                .as_str()
                .and_then(|t| NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S").ok())
                .is_some_and(|t| t >= start && t <= end)
        })
        .cloned()
        .collect();
    axum::Json(json!({"recordType": "egv", "recordVersion": "3.0", "userId": USER_ID, "records": records}))
        .into_response()
}

async fn data_range(State(fake): State<FakeDexcom>, headers: HeaderMap) -> Response {
    if let Some(refused) = refusal(&fake, &headers, "dataRange", &HashMap::new()) {
        return refused;
    }
    let mut answer: Value = serde_json::from_str(DATA_RANGE).unwrap_or(Value::Null);
    // The first and last readings move with the ones added.
    let times: Vec<String> =
        fake.lock().egvs.iter().filter_map(|r| r["systemTime"].as_str().map(str::to_owned)).collect();
    if let (Some(first), Some(last)) = (times.iter().min(), times.iter().max()) {
        answer["egvs"]["start"] = json!({"systemTime": first, "displayTime": first});
        answer["egvs"]["end"] = json!({"systemTime": last, "displayTime": last});
    }
    axum::Json(answer).into_response()
}
