//! The local fake of Wahoo's Cloud API: the consent page (redirects back with `code` and
//! `state`), the token endpoint (the client and every field in the query string, as Wahoo's
//! reference documents; a form body is read too), `/v1/user`, `/v1/workouts` paged newest first
//! without a date filter, the workout's FIT file at its summary's `file.url` (served without the
//! access token, as a pre-signed URL is), and `DELETE /v1/permissions`. Like Wahoo, a refresh
//! answers a new pair and the old pair stays usable until the new access token is first used,
//! then is revoked; API calls count against the 5-minute window of the app's limits and carry
//! Wahoo's `X-RateLimit-*` headers (day, hour, 5 minutes), 429 past it. Wahoo documents no error
//! body: errors are the status alone.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde_json::{Value, json};
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount, PushRequest};

use super::oauth::{Calls, Issuer, bearer, oauth_error};
use crate::config::Endpoints;

/// The user of Wahoo's reference's examples (`GET /v1/user`, the webhook).
pub const USER_ID: i64 = 60_462;
/// Access tokens last two hours (Wahoo's reference, "Authentication").
pub const EXPIRES_IN: i64 = 7_200;
/// A Sandbox app's limits (day, hour, 5 minutes), as Wahoo's headers list them.
pub const SANDBOX_LIMITS: (u32, u32, u32) = (250, 100, 25);
/// The path of the FIT file every summary with a recording points to (the reference's example
/// `file.url` is `https://server.com/4_Mile_Segment_.fit`; the fake serves that path on its own
/// host).
pub const FIT_PATH: &str = "/4_Mile_Segment_.fit";
const EXAMPLE_FILE_HOST: &str = "https://server.com";

const USER: &str = include_str!("../../fixtures/wahoo/user.json");
const WORKOUTS: &str = include_str!("../../fixtures/wahoo/workouts.json");
/// The recording of the fixtures' summarised ride (see the fixtures' README for its source).
pub const FIT_FILE: &[u8] = include_bytes!("../../fixtures/fit/activity.fit");
/// The reference's example `workout_summary` delivery, its workout moved into the fixtures' days
/// and its token the one the tests configure.
pub const WEBHOOK_WORKOUT_SUMMARY: &str = include_str!("../../fixtures/wahoo/webhook_workout_summary.json");

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
    /// The fake's own base URL, once served (the summaries' file URLs point there).
    base: String,
    /// The refresh token of each access token issued.
    pairs: HashMap<String, String>,
    /// An access token issued by a refresh -> the pair it replaces, revoked at its first use.
    replaces: HashMap<String, (String, String)>,
    /// The user's unrevoked access tokens, oldest first.
    live: Vec<String>,
    limits: (u32, u32, u32),
    window: (Instant, u32),
    /// Workouts served beside the fixtures'.
    extra: Vec<Value>,
}

/// A running fake's handle: what it was asked, and its switches.
#[derive(Clone)]
pub struct FakeWahoo {
    inner: Arc<Mutex<Inner>>,
}

impl FakeWahoo {
    /// A fake that knows one OAuth client.
    pub fn new(client: OauthClient) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                issuer: Issuer::new(&crate::wahoo::DESCRIPTION, "wahoo", client).reusable_refresh(),
                calls: Calls::default(),
                failure: None,
                base: String::new(),
                pairs: HashMap::new(),
                replaces: HashMap::new(),
                live: Vec::new(),
                limits: SANDBOX_LIMITS,
                window: (Instant::now(), 0),
                extra: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves the fake on loopback; the endpoints an adapter is configured with.
    pub async fn start(&self) -> Endpoints {
        let base = super::serve(self.router()).await;
        self.lock().base.clone_from(&base);
        super::oauth::endpoints(&base, &crate::wahoo::DESCRIPTION)
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/oauth/authorize", get(authorize))
            .route("/oauth/token", post(token))
            .route("/v1/user", get(user))
            .route("/v1/workouts", get(workouts))
            .route("/v1/permissions", delete(permissions))
            .route(FIT_PATH, get(fit_file))
            .with_state(self.clone())
    }

    /// Calls that reached `route` (`authorize`, `token`, `user`, `workouts`, `permissions`,
    /// `file`).
    pub fn calls(&self, route: &str) -> u32 {
        self.lock().calls.of(route)
    }

    /// The queries (or, for `token`, where the client came and the grant) `route` received.
    pub fn queries(&self, route: &str) -> Vec<HashMap<String, String>> {
        self.lock().calls.queries(route)
    }

    pub fn set_failure(&self, failure: Option<Failure>) {
        self.lock().failure = failure;
    }

    /// The app's limits (day, hour, 5 minutes); the fake enforces the 5-minute one.
    pub fn set_limits(&self, limits: (u32, u32, u32)) {
        self.lock().limits = limits;
    }

    /// How many access tokens of the user are unrevoked (Wahoo allows ten per user and app).
    pub fn unrevoked_tokens(&self) -> usize {
        self.lock().live.len()
    }

    /// Serves `n` more summarised workouts, copies of the fixtures' ride a day apart going back
    /// from the day before the fixtures' oldest workout (new ids, no file), so that the list
    /// fills more than one page.
    pub fn add_older_workouts(&self, n: usize) {
        let doc: Value = serde_json::from_str(WORKOUTS).unwrap_or_default();
        let all = doc["workouts"].as_array().cloned().unwrap_or_default();
        let starts =
            |w: &Value| w["starts"].as_str().and_then(|s| s.parse::<chrono::DateTime<chrono::Utc>>().ok());
        let (Some(model), Some(oldest)) =
            (all.iter().find(|w| !w["workout_summary"].is_null()), all.iter().filter_map(starts).min())
        else {
            return;
        };
        let mut inner = self.lock();
        for i in 1..=n {
            let mut w = model.clone();
            let at = oldest - chrono::Duration::days(i as i64);
            w["id"] = json!(900_000 + i as i64);
            w["starts"] = json!(at.format("%Y-%m-%dT%H:%M:%S.000Z").to_string());
            w["workout_summary"]["file"] = Value::Null;
            inner.extra.push(w);
        }
    }

    /// The fixtures' user with credentials issued directly, as if linked.
    pub fn account(&self) -> ProviderAccount {
        let mut inner = self.lock();
        let account = inner.issuer.account(USER_ID.to_string());
        let access = account.credentials.access_token.expose().to_owned();
        let refresh =
            account.credentials.refresh_token.as_ref().map(|r| r.expose().to_owned()).unwrap_or_default();
        inner.pairs.insert(access.clone(), refresh);
        inner.live.push(access);
        account
    }

    /// Ends every access token (as two hours do).
    pub fn expire_access_tokens(&self) {
        let mut inner = self.lock();
        inner.issuer.expire_access();
    }
}

/// A delivery as Wahoo POSTs it (JSON, unsigned).
pub fn delivery(body: &str) -> PushRequest {
    PushRequest {
        method: "POST".into(),
        query: vec![],
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.as_bytes().to_vec(),
    }
}

impl Inner {
    fn issue(&mut self) -> (String, String) {
        let (access, refresh) = self.issuer.issue();
        self.pairs.insert(access.clone(), refresh.clone());
        self.live.push(access.clone());
        (access, refresh)
    }

    /// The rate-limit headers after one more call in the 5-minute window; whether it was over.
    fn take(&mut self) -> (Vec<(&'static str, String)>, bool) {
        if self.window.0.elapsed().as_secs() >= 300 {
            self.window = (Instant::now(), 0);
        }
        self.window.1 += 1;
        let (day, hour, five) = self.limits;
        let used = self.window.1;
        let remaining = five.saturating_sub(used);
        let over = used > five;
        let reset = if over { 300 - self.window.0.elapsed().as_secs().min(299) } else { 0 };
        let headers = vec![
            ("x-ratelimit-limit", format!("{day}, {hour}, {five}")),
            (
                "x-ratelimit-remaining",
                format!("{}, {}, {remaining}", day.saturating_sub(used), hour.saturating_sub(used)),
            ),
            ("x-ratelimit-reset", reset.to_string()),
        ];
        (headers, over)
    }

    /// The first call with an access token a refresh issued revokes the pair it replaced.
    fn first_use(&mut self, token: &str) {
        if let Some((access, refresh)) = self.replaces.remove(token) {
            self.issuer.revoke_access(&access);
            self.issuer.revoke_refresh(&refresh);
            self.live.retain(|t| *t != access);
        }
    }
}

fn with_headers(mut response: Response, pairs: &[(&'static str, String)]) -> Response {
    for (k, v) in pairs {
        if let Ok(v) = v.parse() {
            response.headers_mut().insert(*k, v);
        }
    }
    response
}

/// Counts an API call, applies the switches and the limit, checks the bearer token: the limit
/// headers to answer with, or the refusal.
fn admit(
    fake: &FakeWahoo,
    headers: &HeaderMap,
    route: &'static str,
    query: HashMap<String, String>,
) -> Result<Vec<(&'static str, String)>, Box<Response>> {
    let mut inner = fake.lock();
    inner.calls.count(route, query);
    match inner.failure {
        Some(Failure::Unauthorized) => return Err(Box::new(StatusCode::UNAUTHORIZED.into_response())),
        Some(Failure::ServerError) => {
            return Err(Box::new(StatusCode::INTERNAL_SERVER_ERROR.into_response()));
        }
        None => {}
    }
    let (limit_headers, over) = inner.take();
    if over {
        return Err(Box::new(with_headers(StatusCode::TOO_MANY_REQUESTS.into_response(), &limit_headers)));
    }
    if !inner.issuer.admits(headers) {
        return Err(Box::new(with_headers(StatusCode::UNAUTHORIZED.into_response(), &limit_headers)));
    }
    if let Some(token) = bearer(headers).map(str::to_owned) {
        inner.first_use(&token);
    }
    Ok(limit_headers)
}

async fn authorize(State(fake): State<FakeWahoo>, Query(q): Params) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("authorize", q.clone());
    inner.issuer.consent(&q)
}

async fn token(State(fake): State<FakeWahoo>, headers: HeaderMap, Query(q): Params, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let in_query = q.contains_key("client_secret");
    let mut params = form;
    params.extend(q);
    let mut inner = fake.lock();
    let grant = params.get("grant_type").cloned().unwrap_or_default();
    let place = if in_query { "query" } else { "body" };
    inner.calls.count(
        "token",
        HashMap::from([("grant_type".to_owned(), grant.clone()), ("client".to_owned(), place.to_owned())]),
    );
    if !inner.issuer.authenticates(&params, &headers) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if !inner.issuer.redeem(&params) {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    let (access, refresh) = inner.issue();
    if grant == "refresh_token" {
        let old_refresh = params.get("refresh_token").cloned().unwrap_or_default();
        let old_access =
            inner.pairs.iter().find(|(_, r)| **r == old_refresh).map(|(a, _)| a.clone()).unwrap_or_default();
        inner.replaces.insert(access.clone(), (old_access, old_refresh));
    }
    axum::Json(json!({"access_token": access, "refresh_token": refresh, "expires_in": EXPIRES_IN}))
        .into_response()
}

async fn user(State(fake): State<FakeWahoo>, headers: HeaderMap) -> Response {
    match admit(&fake, &headers, "user", HashMap::new()) {
        Ok(limits) => with_headers(
            axum::Json(serde_json::from_str::<Value>(USER).unwrap_or_default()).into_response(),
            &limits,
        ),
        Err(refused) => *refused,
    }
}

async fn workouts(State(fake): State<FakeWahoo>, headers: HeaderMap, Query(q): Params) -> Response {
    let limits = match admit(&fake, &headers, "workouts", q.clone()) {
        Ok(limits) => limits,
        Err(refused) => return *refused,
    };
    let number = |k: &str, default: usize| q.get(k).map_or(Ok(default), |v| v.parse::<usize>());
    let (Ok(page), Ok(per_page)) = (number("page", 1), number("per_page", 30)) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if page == 0 || per_page == 0 {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let (base, extra) = {
        let inner = fake.lock();
        (inner.base.clone(), inner.extra.clone())
    };
    let doc: Value = serde_json::from_str(&WORKOUTS.replace(EXAMPLE_FILE_HOST, &base)).unwrap_or_default();
    let mut all: Vec<Value> = doc["workouts"].as_array().cloned().unwrap_or_default();
    all.extend(extra);
    // Newest `starts` first, always (the reference: "sorted by the starts field in descending order").
    all.sort_by(|a, b| b["starts"].as_str().cmp(&a["starts"].as_str()));
    let total = all.len();
    let items: Vec<Value> = all.into_iter().skip((page - 1) * per_page).take(per_page).collect();
    let body = json!({"workouts": items, "total": total, "page": page, "per_page": per_page,
        "order": "descending", "sort": "starts"});
    with_headers(axum::Json(body).into_response(), &limits)
}

async fn permissions(State(fake): State<FakeWahoo>, headers: HeaderMap) -> Response {
    if let Err(refused) = admit(&fake, &headers, "permissions", HashMap::new()) {
        return *refused;
    }
    let mut inner = fake.lock();
    inner.issuer.revoke_all();
    inner.live.clear();
    StatusCode::NO_CONTENT.into_response()
}

/// The pre-signed file: no access token, no limit.
async fn fit_file(State(fake): State<FakeWahoo>) -> Response {
    fake.lock().calls.hit("file");
    ([(header::CONTENT_TYPE, "application/octet-stream")], FIT_FILE).into_response()
}
