//! The local fake of Strava's API v3: the consent page (redirects back with `code`, `state`
//! and the granted `scope`, which may be set narrower than asked), the token endpoint (client
//! in the body; the answer names the athlete; every refresh token works once and is replaced),
//! `/athlete`, `/athlete/activities` paged by `page`/`per_page` (at most 200) and filtered by
//! `after`/`before`, `/activities/{id}/streams`, `/oauth/deauthorize` and the application's one
//! push subscription. Like Strava, it hides "Only Me" activities from a token without
//! `activity:read_all`, refuses the activity paths to one without an activity scope, counts
//! every API call against the read limits (15 minutes, :00/:15/:30/:45, and the UTC day) with
//! Strava's usage headers, and answers 429 over them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::Utc;
use serde_json::{Value, json};
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount, PushRequest};

use super::oauth::{Calls, Issuer};
use crate::config::Endpoints;

/// The athlete the fixtures belong to (Strava's Swagger document's `/athlete` example).
pub const ATHLETE_ID: i64 = 1_234_567_890_987_654_321;
/// Strava's largest page.
pub const MAX_PER_PAGE: usize = 200;
/// Strava's read limits of one application: 15 minutes, one day.
pub const READ_LIMITS: (u32, u32) = (100, 1_000);

const ATHLETE: &str = include_str!("../../fixtures/strava/athlete.json");
const ACTIVITIES: &str = include_str!("../../fixtures/strava/activities.json");
const STREAMS: &str = include_str!("../../fixtures/strava/streams.json");
/// An activity created on 2026-11-23 (the fixtures' newest).
pub const WEBHOOK_ACTIVITY_CREATE: &str = include_str!("../../fixtures/strava/webhook_activity_create.json");
/// The athlete deauthorised the application.
pub const WEBHOOK_ATHLETE_DEAUTHORIZE: &str =
    include_str!("../../fixtures/strava/webhook_athlete_deauthorize.json");

type Params = Query<HashMap<String, String>>;

/// How the API calls fail while a switch is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Unauthorized,
    ServerError,
}

struct Inner {
    issuer: Issuer,
    calls: Calls,
    failure: Option<Failure>,
    /// What the consent grants instead of what was asked (the user unticked scopes).
    granted: Option<String>,
    /// Scopes of each live code, access token and refresh token. Tokens the fake issued
    /// directly (`account`) have none here and read everything.
    scopes: HashMap<String, Vec<String>>,
    read_limits: (u32, u32),
    /// (window number, requests) of the 15-minute window and of the UTC day.
    usage: [(i64, u32); 2],
    subscriptions: Vec<(u64, String, String)>,
    /// Generated activities served besides the fixtures' (to fill pages).
    extra: Vec<Value>,
}

impl Inner {
    /// New tokens carrying `scopes`: the access and refresh token.
    fn issue(&mut self, scopes: Vec<String>) -> (String, String) {
        let (access, refresh) = self.issuer.issue();
        self.scopes.insert(access.clone(), scopes.clone());
        self.scopes.insert(refresh.clone(), scopes);
        (access, refresh)
    }

    /// Counts one read against the limits: the usage headers, and whether it is over.
    fn take_read(&mut self) -> (Vec<(&'static str, String)>, bool) {
        let now = Utc::now().timestamp();
        let numbers = [now.div_euclid(900), now.div_euclid(86_400)];
        for (slot, number) in self.usage.iter_mut().zip(numbers) {
            if slot.0 != number {
                *slot = (number, 0);
            }
            slot.1 += 1;
        }
        let (short, daily) = self.read_limits;
        let used = format!("{},{}", self.usage[0].1, self.usage[1].1);
        let limit = format!("{short},{daily}");
        let headers = vec![
            ("x-ratelimit-limit", format!("{},{}", short * 2, daily * 2)),
            ("x-ratelimit-usage", used.clone()),
            ("x-readratelimit-limit", limit),
            ("x-readratelimit-usage", used),
        ];
        (headers, self.usage[0].1 > short || self.usage[1].1 > daily)
    }
}

/// A running fake's handle: what it was asked, and its switches.
#[derive(Clone)]
pub struct FakeStrava {
    inner: Arc<Mutex<Inner>>,
}

impl FakeStrava {
    /// A fake that knows one OAuth application.
    pub fn new(client: OauthClient) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                issuer: Issuer::new(&crate::strava::DESCRIPTION, "strava", client),
                calls: Calls::default(),
                failure: None,
                granted: None,
                scopes: HashMap::new(),
                read_limits: READ_LIMITS,
                usage: [(0, 0); 2],
                subscriptions: Vec::new(),
                extra: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves the fake on loopback; the endpoints an adapter is configured with.
    pub async fn start(&self) -> Endpoints {
        super::oauth::endpoints(&super::serve(self.router()).await, &crate::strava::DESCRIPTION)
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/oauth/authorize", get(authorize))
            .route("/oauth/token", post(token))
            .route("/oauth/deauthorize", post(deauthorize))
            .route("/api/v3/athlete", get(athlete))
            .route("/api/v3/athlete/activities", get(activities))
            .route("/api/v3/activities/{id}/streams", get(streams))
            .route("/api/v3/push_subscriptions", get(list_subscriptions).post(create_subscription))
            .with_state(self.clone())
    }

    /// Calls that reached `route` (`authorize`, `token`, `deauthorize`, `athlete`,
    /// `activities`, `streams`, `subscriptions`).
    pub fn calls(&self, route: &str) -> u32 {
        self.lock().calls.of(route)
    }

    /// The query strings (or forms) `route` received, in order.
    pub fn queries(&self, route: &str) -> Vec<HashMap<String, String>> {
        self.lock().calls.queries(route)
    }

    pub fn set_failure(&self, failure: Option<Failure>) {
        self.lock().failure = failure;
    }

    /// The consent grants `scope` (comma-separated) whatever was asked.
    pub fn grant_only(&self, scope: &str) {
        self.lock().granted = Some(scope.to_owned());
    }

    /// The read limits (15 minutes, daily) the fake enforces.
    pub fn set_read_limits(&self, short: u32, daily: u32) {
        self.lock().read_limits = (short, daily);
    }

    /// Serves `n` more activities, copies of the fixtures' oldest one a minute apart (new ids,
    /// no streams), so that the list fills more than one page: Strava's page is short only at
    /// the end.
    pub fn add_activities(&self, n: usize) {
        let all: Vec<Value> = serde_json::from_str(ACTIVITIES).unwrap_or_default();
        let Some(model) = all.last() else { return };
        let start: chrono::DateTime<Utc> =
            model["start_date"].as_str().and_then(|s| s.parse().ok()).unwrap_or_default();
        let extra = (1..=n).map(|i| {
            let mut a = model.clone();
            let at = start + chrono::Duration::minutes(i as i64);
            a["id"] = json!(9_000_000_000_i64 + i as i64);
            a["start_date"] = json!(at.format("%Y-%m-%dT%H:%M:%SZ").to_string());
            a["start_date_local"] =
                json!((at - chrono::Duration::hours(8)).format("%Y-%m-%dT%H:%M:%SZ").to_string());
            a
        });
        self.lock().extra.extend(extra);
    }

    /// The application's push subscriptions: (id, callback URL, verify token).
    pub fn subscriptions(&self) -> Vec<(u64, String, String)> {
        self.lock().subscriptions.clone()
    }

    /// The fixtures' athlete with credentials issued directly (as if linked, reading
    /// everything), for tests that start after the link.
    pub fn account(&self) -> ProviderAccount {
        self.lock().issuer.account(ATHLETE_ID.to_string())
    }

    /// The athlete deauthorised the app at Strava: every token of the athlete ends (access and
    /// refresh), as `POST /oauth/deauthorize` ends them.
    pub fn deauthorize_athlete(&self) {
        self.lock().issuer.revoke_all();
    }

    /// Ends every access token (as Strava does after six hours).
    pub fn expire_access_tokens(&self) {
        self.lock().issuer.expire_access();
    }
}

/// Strava's subscription handshake as it sends it.
pub fn handshake(verify_token: &str, challenge: &str) -> PushRequest {
    PushRequest {
        method: "GET".into(),
        query: vec![
            ("hub.mode".into(), "subscribe".into()),
            ("hub.challenge".into(), challenge.into()),
            ("hub.verify_token".into(), verify_token.into()),
        ],
        headers: vec![],
        body: vec![],
    }
}

/// An event as Strava POSTs it (unsigned).
pub fn event(body: &str) -> PushRequest {
    PushRequest {
        method: "POST".into(),
        query: vec![],
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.as_bytes().to_vec(),
    }
}

/// Strava's error body (`Fault`).
fn fault(status: StatusCode, message: &str, resource: &str, field: &str, code: &str) -> Response {
    let body = json!({"message": message, "errors": [{"resource": resource, "field": field, "code": code}]});
    (status, axum::Json(body)).into_response()
}

fn unauthorized() -> Response {
    fault(StatusCode::UNAUTHORIZED, "Authorization Error", "Athlete", "access_token", "invalid")
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(str::to_owned)
}

/// An API call let through: the usage headers to answer with, and the token's scopes (`None`:
/// reads everything).
struct Admitted {
    usage: Vec<(&'static str, String)>,
    scopes: Option<Vec<String>>,
}

/// The answer refusing a call.
type Refusal = Box<Response>;

/// Counts an API call, applies the switches and the limits, checks the bearer token.
fn admit(
    fake: &FakeStrava,
    headers: &HeaderMap,
    route: &'static str,
    query: HashMap<String, String>,
) -> Result<Admitted, Refusal> {
    let mut inner = fake.lock();
    inner.calls.count(route, query);
    match inner.failure {
        Some(Failure::Unauthorized) => return Err(Box::new(unauthorized())),
        Some(Failure::ServerError) => {
            return Err(Box::new(StatusCode::INTERNAL_SERVER_ERROR.into_response()));
        }
        None => {}
    }
    let (usage, over) = inner.take_read();
    if over {
        let mut response = fault(
            StatusCode::TOO_MANY_REQUESTS,
            "Rate Limit Exceeded",
            "Application",
            "rate limit",
            "exceeded",
        );
        with_headers(&mut response, &usage);
        return Err(Box::new(response));
    }
    if !inner.issuer.admits(headers) {
        return Err(Box::new(unauthorized()));
    }
    let scopes = bearer(headers).and_then(|t| inner.scopes.get(&t).cloned());
    Ok(Admitted { usage, scopes })
}

fn with_headers(response: &mut Response, pairs: &[(&'static str, String)]) {
    for (k, v) in pairs {
        if let Ok(v) = v.parse() {
            response.headers_mut().insert(*k, v);
        }
    }
}

fn json_with(usage: &[(&'static str, String)], body: Value) -> Response {
    let mut response = axum::Json(body).into_response();
    with_headers(&mut response, usage);
    response
}

/// The activity paths' scope rule, Strava's own ([`crate::strava::activity_access`]): a
/// token the fake issued directly reads everything.
fn activity_scope(scopes: &Option<Vec<String>>) -> Result<bool, Refusal> {
    let Some(scopes) = scopes else { return Ok(true) };
    crate::strava::activity_access(scopes).map_err(|_| {
        let missing = "activity:read_permission";
        Box::new(fault(StatusCode::UNAUTHORIZED, "Authorization Error", "AccessToken", missing, "missing"))
    })
}

async fn authorize(State(fake): State<FakeStrava>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("authorize", q.clone());
    let mut response = inner.issuer.consent(&q);
    let Some(location) = response.headers().get(header::LOCATION).and_then(|l| l.to_str().ok()) else {
        return response;
    };
    let Ok(mut target) = url::Url::parse(location) else { return response };
    let code =
        target.query_pairs().find(|(k, _)| k == "code").map(|(_, v)| v.into_owned()).unwrap_or_default();
    let granted = inner.granted.clone().or_else(|| q.get("scope").cloned()).unwrap_or_default();
    target.query_pairs_mut().append_pair("scope", &granted);
    inner.scopes.insert(code, granted.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect());
    if let Ok(v) = target.as_str().parse() {
        response.headers_mut().insert(header::LOCATION, v);
    }
    response
}

async fn token(State(fake): State<FakeStrava>, headers: HeaderMap, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let mut inner = fake.lock();
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    inner.calls.count("token", HashMap::from([("grant_type".to_owned(), grant.clone())]));
    if !inner.issuer.authenticates(&form, &headers) {
        return fault(StatusCode::UNAUTHORIZED, "Bad Request", "Application", "client_id", "invalid");
    }
    let used = match grant.as_str() {
        "authorization_code" => form.get("code"),
        _ => form.get("refresh_token"),
    }
    .cloned()
    .unwrap_or_default();
    if !inner.issuer.redeem(&form) {
        return fault(StatusCode::BAD_REQUEST, "Bad Request", "RefreshToken", "refresh_token", "invalid");
    }
    let scopes = inner.scopes.remove(&used).unwrap_or_default();
    let (access, refresh) = inner.issue(scopes);
    let expires_in = 21_600;
    let mut answer = json!({"token_type": "Bearer", "access_token": access, "refresh_token": refresh,
        "expires_in": expires_in, "expires_at": Utc::now().timestamp() + expires_in});
    if grant == "authorization_code" {
        answer["athlete"] = json!({"id": ATHLETE_ID, "resource_state": 1});
    }
    axum::Json(answer).into_response()
}

async fn deauthorize(State(fake): State<FakeStrava>, headers: HeaderMap, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let token = form.get("access_token").cloned().or_else(|| bearer(&headers));
    let mut inner = fake.lock();
    inner.calls.count("deauthorize", HashMap::new());
    let mut as_bearer = HeaderMap::new();
    if let Some(v) = token.as_ref().and_then(|t| format!("Bearer {t}").parse().ok()) {
        as_bearer.insert(header::AUTHORIZATION, v);
    }
    if !inner.issuer.admits(&as_bearer) {
        return unauthorized();
    }
    inner.issuer.revoke_all();
    axum::Json(json!({"access_token": token})).into_response()
}

async fn athlete(State(fake): State<FakeStrava>, headers: HeaderMap) -> Response {
    match admit(&fake, &headers, "athlete", HashMap::new()) {
        Ok(admitted) => json_with(&admitted.usage, serde_json::from_str(ATHLETE).unwrap_or(Value::Null)),
        Err(refused) => *refused,
    }
}

async fn activities(State(fake): State<FakeStrava>, headers: HeaderMap, Query(q): Params) -> Response {
    let Admitted { usage, scopes } = match admit(&fake, &headers, "activities", q.clone()) {
        Ok(admitted) => admitted,
        Err(refused) => return *refused,
    };
    let read_all = match activity_scope(&scopes) {
        Ok(r) => r,
        Err(refused) => return *refused,
    };
    let number = |k: &str, default: i64| q.get(k).map_or(Ok(default), |v| v.parse::<i64>());
    let (Ok(after), Ok(before), Ok(page), Ok(per_page)) =
        (number("after", i64::MIN), number("before", i64::MAX), number("page", 1), number("per_page", 30))
    else {
        return fault(StatusCode::BAD_REQUEST, "Bad Request", "Activity", "query", "invalid");
    };
    if page < 1 || !(1..=MAX_PER_PAGE as i64).contains(&per_page) {
        return fault(StatusCode::BAD_REQUEST, "Bad Request", "Activity", "per_page", "invalid");
    }
    let mut all: Vec<Value> = serde_json::from_str(ACTIVITIES).unwrap_or_default();
    all.extend(fake.lock().extra.iter().cloned());
    let started = |a: &Value| {
        a["start_date"].as_str().and_then(|s| s.parse::<chrono::DateTime<Utc>>().ok()).map(|t| t.timestamp())
    };
    let matching: Vec<Value> = all
        .into_iter()
        .filter(|a| started(a).is_some_and(|t| t > after && t < before))
        .filter(|a| read_all || a["private"] != json!(true))
        .collect();
    let from = (page as usize - 1) * per_page as usize;
    let items = matching.iter().skip(from).take(per_page as usize).cloned().collect::<Vec<_>>();
    json_with(&usage, Value::Array(items))
}

async fn streams(
    State(fake): State<FakeStrava>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Params,
) -> Response {
    let Admitted { usage, scopes } = match admit(&fake, &headers, "streams", q.clone()) {
        Ok(admitted) => admitted,
        Err(refused) => return *refused,
    };
    if let Err(refused) = activity_scope(&scopes) {
        return *refused;
    }
    let Some(keys) = q.get("keys").filter(|k| !k.is_empty()) else {
        return fault(StatusCode::BAD_REQUEST, "Bad Request", "Stream", "keys", "missing");
    };
    if q.get("key_by_type").map(String::as_str) != Some("true") {
        return fault(StatusCode::BAD_REQUEST, "Bad Request", "Stream", "key_by_type", "invalid");
    }
    let all: HashMap<String, serde_json::Map<String, Value>> =
        serde_json::from_str(STREAMS).unwrap_or_default();
    let Some(set) = all.get(&id) else {
        return fault(StatusCode::NOT_FOUND, "Record Not Found", "Activity", "id", "invalid");
    };
    let wanted: Vec<&str> = keys.split(',').collect();
    let asked: serde_json::Map<String, Value> = set
        .iter()
        .filter(|(k, _)| wanted.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    json_with(&usage, Value::Object(asked))
}

/// Whether `params` name the application with its secret.
fn app_named(fake: &FakeStrava, params: &HashMap<String, String>) -> bool {
    fake.lock().issuer.in_form(params)
}

async fn list_subscriptions(State(fake): State<FakeStrava>, Query(q): Params) -> Response {
    fake.lock().calls.count("subscriptions", HashMap::new());
    if !app_named(&fake, &q) {
        return unauthorized();
    }
    let subs: Vec<Value> = fake
        .lock()
        .subscriptions
        .iter()
        .map(|(id, url, _)| json!({"id": id, "resource_state": 2, "callback_url": url}))
        .collect();
    axum::Json(Value::Array(subs)).into_response()
}

async fn create_subscription(State(fake): State<FakeStrava>, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    fake.lock().calls.count("subscriptions", HashMap::new());
    if !app_named(&fake, &form) {
        return unauthorized();
    }
    let (Some(url), Some(verify)) = (form.get("callback_url"), form.get("verify_token")) else {
        return fault(StatusCode::BAD_REQUEST, "Bad Request", "PushSubscription", "callback_url", "missing");
    };
    let mut inner = fake.lock();
    // One subscription per application.
    if !inner.subscriptions.is_empty() {
        return fault(StatusCode::BAD_REQUEST, "Bad Request", "PushSubscription", "", "already exists");
    }
    let id = 120_475 + inner.subscriptions.len() as u64;
    inner.subscriptions.push((id, url.clone(), verify.clone()));
    (StatusCode::CREATED, axum::Json(json!({"id": id}))).into_response()
}
