//! The local fake of the Suunto API Zone: the consent page (redirects back with `code` and
//! `state`), the token endpoint (client by HTTP Basic; the grant in the form body or, as Suunto's
//! token page writes it, in the query; refresh tokens usable once and replaced; the user in
//! `user`), `/oauth/deauthorize`, and the data endpoints serving `fixtures/suunto/` (workouts paged
//! by `limit`/`offset` within `since`..`until`, the 24/7 samples within `from`..`to`, the daily
//! statistics within `startdate`..`enddate`, spans over 28 days refused). Every data call needs the
//! bearer token and the subscription key (`Ocp-Apim-Subscription-Key`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, NaiveDate};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount, ProviderCredentials, PushRequest};

use super::oauth::{Calls, Issuer, oauth_error};
use crate::config::Endpoints;
use crate::suunto::{MAX_SPAN_DAYS, SIGNATURE_HEADER, SUBSCRIPTION_HEADER, sign};

/// The user every code is for (the `username` of Suunto's webhook example).
pub const USERNAME: &str = "johndoe123";
/// Seconds an access token lasts here (Suunto's lifetime is not published: a value chosen).
pub const EXPIRES_IN: i64 = 86_400;

const WORKOUTS: &str = include_str!("../../fixtures/suunto/workouts.json");
const DAILY_STATISTICS: &str = include_str!("../../fixtures/suunto/daily_activity_statistics.json");
const SLEEP: &str = include_str!("../../fixtures/suunto/247_sleep.json");
const ACTIVITY: &str = include_str!("../../fixtures/suunto/247_activity.json");
/// The FIT export of the fixtures' one workout with a recording.
pub const FIT_FILE: &[u8] = include_bytes!("../../fixtures/fit/activity.fit");
/// The workout whose FIT export is [`FIT_FILE`] (the fourth of `workouts.json`).
pub const FIT_WORKOUT_KEY: &str = "6201470842d3ac5ba2b4d1f7";
/// Suunto's webhook example (a new workout), its time moved into the fixtures' days.
pub const WEBHOOK_WORKOUT_CREATED: &str = include_str!("../../fixtures/suunto/webhook_workout_created.json");
/// A 24/7 sleep notification carrying the fixtures' last night.
pub const WEBHOOK_SLEEP_CREATED: &str = include_str!("../../fixtures/suunto/webhook_247_sleep_created.json");

/// How the data calls fail while a switch is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Unauthorized,
    ServerError,
    /// 429 with `Retry-After`.
    RateLimited,
    /// 200 carrying `error{code, description}` and no data.
    ErrorInBody,
}

struct Inner {
    issuer: Issuer,
    calls: Calls,
    subscription_key: String,
    failure: Option<Failure>,
}

/// A running fake's handle: what it was asked, and its switches.
#[derive(Clone)]
pub struct FakeSuunto {
    inner: Arc<Mutex<Inner>>,
}

impl FakeSuunto {
    /// A fake that knows one OAuth client and one API Zone subscription key.
    pub fn new(client: OauthClient, subscription_key: &str) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                issuer: Issuer::new(&crate::suunto::DESCRIPTION, "suunto", client),
                calls: Calls::default(),
                subscription_key: subscription_key.to_owned(),
                failure: None,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves the fake on loopback; the endpoints an adapter is configured with.
    pub async fn start(&self) -> Endpoints {
        super::oauth::endpoints(&super::serve(self.router()).await, &crate::suunto::DESCRIPTION)
    }

    pub fn router(&self) -> Router {
        let samples = |route: &'static str, fixture: &'static str| {
            get(move |s: State<FakeSuunto>, h: HeaderMap, q: Params| sampled(s, h, q, route, fixture))
        };
        Router::new()
            .route("/oauth/authorize", get(authorize))
            .route("/oauth/token", post(token))
            .route("/oauth/deauthorize", get(deauthorize))
            .route("/v3/workouts", get(workouts))
            .route("/v2/workout/exportFit/{key}", get(export_fit))
            .route("/247/daily-activity-statistics", get(daily_statistics))
            .route("/247samples/sleep", samples("sleep", SLEEP))
            .route("/247samples/activity", samples("activity", ACTIVITY))
            .with_state(self.clone())
    }

    /// Calls that reached `route` (`authorize`, `token:authorization_code`, `token:refresh_token`,
    /// `deauthorize`, `workouts`, `fit`, `daily-activity-statistics`, `sleep`, `activity`).
    pub fn calls(&self, route: &str) -> u32 {
        self.lock().calls.of(route)
    }

    /// The queries `route` received, in order.
    pub fn queries(&self, route: &str) -> Vec<HashMap<String, String>> {
        self.lock().calls.queries(route)
    }

    pub fn set_failure(&self, failure: Option<Failure>) {
        self.lock().failure = failure;
    }

    /// Ends every access token, as when they expire.
    pub fn expire_access_tokens(&self) {
        self.lock().issuer.expire_access();
    }

    /// The fixtures' user with tokens issued directly (as if linked).
    pub fn account(&self) -> ProviderAccount {
        let mut inner = self.lock();
        let (access, refresh) = inner.issuer.issue();
        ProviderAccount {
            external_user_id: USERNAME.into(),
            credentials: ProviderCredentials {
                access_token: Secret::new(access),
                refresh_token: Some(Secret::new(refresh)),
                expires_at: None,
                scopes: vec![],
            },
        }
    }
}

type Params = Query<HashMap<String, String>>;

/// A notification as Suunto sends it, signed (hex) with the app's notification `secret`.
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

fn bad_request(message: &str) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({"error": {"code": "400", "description": message}})))
        .into_response()
}

/// Counts a data call, applies the failure switch, the bearer token and the subscription key:
/// the answer that refuses the call, if any.
fn refusal(
    fake: &FakeSuunto,
    headers: &HeaderMap,
    route: &'static str,
    query: HashMap<String, String>,
) -> Option<Response> {
    let mut inner = fake.lock();
    inner.calls.count(route, query);
    match inner.failure {
        Some(Failure::Unauthorized) => return Some(StatusCode::UNAUTHORIZED.into_response()),
        Some(Failure::ServerError) => return Some(StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        Some(Failure::RateLimited) => {
            return Some((StatusCode::TOO_MANY_REQUESTS, [("retry-after", "7")]).into_response());
        }
        Some(Failure::ErrorInBody) => {
            let body =
                json!({"error": {"code": "E1001", "description": "failure"}, "metadata": {}, "payload": []});
            return Some(axum::Json(body).into_response());
        }
        None => {}
    }
    let key = headers.get(SUBSCRIPTION_HEADER).and_then(|v| v.to_str().ok());
    if key != Some(inner.subscription_key.as_str()) || !inner.issuer.admits(headers) {
        return Some(StatusCode::UNAUTHORIZED.into_response());
    }
    None
}

async fn authorize(State(fake): State<FakeSuunto>, Query(q): Params) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("authorize", q.clone());
    inner.issuer.consent(&q)
}

/// The token endpoint: the grant in the form body, or in the query as Suunto's token page writes
/// it (`/oauth/token?grant_type=refresh_token&refresh_token=...`).
async fn token(State(fake): State<FakeSuunto>, headers: HeaderMap, uri: Uri, body: Bytes) -> Response {
    let mut form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let query: HashMap<String, String> =
        uri.query().and_then(|q| serde_urlencoded::from_str(q).ok()).unwrap_or_default();
    for (k, v) in query {
        form.entry(k).or_insert(v);
    }
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    let mut inner = fake.lock();
    inner.calls.count(format!("token:{grant}"), HashMap::new());
    if !inner.issuer.authenticates(&form, &headers) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if !inner.issuer.redeem(&form) {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    let (access, refresh) = inner.issuer.issue();
    let mut answer = json!({"access_token": access, "token_type": "bearer", "refresh_token": refresh,
        "expires_in": EXPIRES_IN});
    // The refreshed answer has no `user` (the c2corg tracking service's `SuuntoRefreshAuth`).
    if grant == "authorization_code" {
        answer["user"] = json!(USERNAME);
    }
    axum::Json(answer).into_response()
}

async fn deauthorize(State(fake): State<FakeSuunto>, headers: HeaderMap, Query(q): Params) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("deauthorize", q.clone());
    if !inner.issuer.admits(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if q.get("client_id") != Some(&inner.issuer.client.client_id) {
        return StatusCode::BAD_REQUEST.into_response();
    }
    inner.issuer.revoke_all();
    StatusCode::OK.into_response()
}

fn number(q: &HashMap<String, String>, k: &str) -> Option<i64> {
    q.get(k).and_then(|v| v.parse().ok())
}

/// `/v3/workouts?since&until&limit&offset`: the fixture's workouts starting within
/// `since`..=`until` (epoch ms), the page `offset`..`offset + limit`, in the Workout API's
/// `{error, metadata, payload}`.
async fn workouts(State(fake): State<FakeSuunto>, headers: HeaderMap, Query(q): Params) -> Response {
    if let Some(refused) = refusal(&fake, &headers, "workouts", q.clone()) {
        return refused;
    }
    let since = number(&q, "since").unwrap_or(0);
    let until = number(&q, "until").unwrap_or(i64::MAX);
    let limit = number(&q, "limit").unwrap_or(50).clamp(1, 100) as usize;
    let offset = number(&q, "offset").unwrap_or(0).max(0) as usize;
    let document: Value = serde_json::from_str(WORKOUTS).unwrap_or(Value::Null);
    let all = document["payload"].as_array().cloned().unwrap_or_default();
    let page: Vec<Value> = all
        .into_iter()
        .filter(|w| w["startTime"].as_i64().is_some_and(|t| since <= t && t <= until))
        .skip(offset)
        .take(limit)
        .collect();
    axum::Json(json!({"error": null, "metadata": {}, "payload": page})).into_response()
}

/// `/v2/workout/exportFit/{workoutKey}`: the workout's FIT file, for the one fixture workout that
/// has a recording; 404 for the others.
async fn export_fit(
    State(fake): State<FakeSuunto>,
    headers: HeaderMap,
    axum::extract::Path(key): axum::extract::Path<String>,
) -> Response {
    if let Some(refused) = refusal(&fake, &headers, "fit", HashMap::new()) {
        return refused;
    }
    if key != FIT_WORKOUT_KEY {
        return StatusCode::NOT_FOUND.into_response();
    }
    ([(axum::http::header::CONTENT_TYPE, "application/octet-stream")], FIT_FILE).into_response()
}

/// A span's two ends as Suunto checks them: present, in order, at most 28 days apart.
fn span<T: Copy + PartialOrd>(
    from: Option<T>,
    to: Option<T>,
    days: impl Fn(T, T) -> i64,
) -> Result<(T, T), &'static str> {
    let (Some(from), Some(to)) = (from, to) else { return Err("both ends of the span are required") };
    if from > to || days(from, to) > MAX_SPAN_DAYS {
        return Err("Maximum fetch interval duration is 28 days");
    }
    Ok((from, to))
}

/// `/247samples/{kind}?from&to` (epoch ms): the fixture's samples whose `timestamp` is within.
async fn sampled(
    State(fake): State<FakeSuunto>,
    headers: HeaderMap,
    Query(q): Params,
    route: &'static str,
    fixture: &'static str,
) -> Response {
    if let Some(refused) = refusal(&fake, &headers, route, q.clone()) {
        return refused;
    }
    let (from, to) = match span(number(&q, "from"), number(&q, "to"), |a, b| (b - a) / 86_400_000) {
        Ok(span) => span,
        Err(message) => return bad_request(message),
    };
    let all: Vec<Value> = serde_json::from_str(fixture).unwrap_or_default();
    let within: Vec<Value> = all
        .into_iter()
        .filter(|s| {
            s["timestamp"]
                .as_str()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .is_some_and(|t| (from..=to).contains(&t.timestamp_millis()))
        })
        .collect();
    axum::Json(within).into_response()
}

/// `/247/daily-activity-statistics?startdate&enddate` (ISO 8601, UTC): each statistic with the
/// samples of the days within.
async fn daily_statistics(State(fake): State<FakeSuunto>, headers: HeaderMap, Query(q): Params) -> Response {
    if let Some(refused) = refusal(&fake, &headers, "daily-activity-statistics", q.clone()) {
        return refused;
    }
    let date = |k: &str| q.get(k).and_then(|v| v.get(..10)).and_then(|d| d.parse::<NaiveDate>().ok());
    let (from, to) = match span(date("startdate"), date("enddate"), |a, b| (b - a).num_days()) {
        Ok(span) => span,
        Err(message) => return bad_request(message),
    };
    let mut all: Vec<Value> = serde_json::from_str(DAILY_STATISTICS).unwrap_or_default();
    for stat in &mut all {
        for source in stat["Sources"].as_array_mut().into_iter().flatten() {
            if let Some(samples) = source["Samples"].as_array_mut() {
                samples.retain(|s| {
                    s["TimeISO8601"]
                        .as_str()
                        .and_then(|t| t.get(..10))
                        .and_then(|d| d.parse::<NaiveDate>().ok())
                        .is_some_and(|d| from <= d && d <= to)
                });
            }
        }
    }
    axum::Json(all).into_response()
}
