//! The local fake of Hammerhead's developer API: the consent page (redirects back with `code` and
//! `state`), the token endpoint (client in the form's body; the answer names the user in
//! `user_id`; every refresh token works once and is replaced), `/v1/api/activities` paged by
//! `page`/`perPage` from `startDate`, `/v1/api/activities/{id}` and `/v1/api/activities/{id}/file`
//! (the activity's FIT file), and `/v1/auth/oauth/deauthorize`. Errors carry Hammerhead's error
//! body `{message, statusCode}`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount, PushRequest};

use super::oauth::{Calls, Issuer};
use crate::config::Endpoints;
use crate::hammerhead::{SIGNATURE_HEADER, sign};

/// The user every code is for.
pub const USER_ID: &str = "user-5d8a1f";
/// The activity whose FIT file the fake serves.
pub const RECORDED_ACTIVITY: &str = "act-7c2e91";

const ACTIVITIES: &str = include_str!("../../fixtures/hammerhead/activities.json");
/// The recording of the fixtures' ride (see the fixtures' README for its source).
pub const FIT_FILE: &[u8] = include_bytes!("../../fixtures/fit/activity.fit");
/// A webhook delivery as Hammerhead sends it when the fixtures' ride syncs.
pub const WEBHOOK_ACTIVITY: &str = include_str!("../../fixtures/hammerhead/webhook_activity.json");

type Params = Query<HashMap<String, String>>;

/// How the API calls fail while a switch is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Unauthorized,
    ServerError,
    TooManyRequests,
}

struct Inner {
    issuer: Issuer,
    calls: Calls,
    failure: Option<Failure>,
}

#[derive(Clone)]
pub struct FakeHammerhead {
    inner: Arc<Mutex<Inner>>,
}

impl FakeHammerhead {
    pub fn new(client: OauthClient) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                issuer: Issuer::new(&crate::hammerhead::DESCRIPTION, "hammerhead", client),
                calls: Calls::default(),
                failure: None,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves the fake on loopback; the endpoints an adapter is configured with.
    pub async fn start(&self) -> Endpoints {
        super::oauth::endpoints(&super::serve(self.router()).await, &crate::hammerhead::DESCRIPTION)
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/v1/auth/oauth/authorize", get(authorize))
            .route("/v1/auth/oauth/token", post(token))
            .route("/v1/auth/oauth/deauthorize", post(deauthorize))
            .route("/v1/api/activities", get(activities))
            .route("/v1/api/activities/{id}", get(activity))
            .route("/v1/api/activities/{id}/file", get(file))
            .with_state(self.clone())
    }

    /// Calls that reached `route` (`authorize`, `token`, `deauthorize`, `activities`, `activity`,
    /// `file`).
    pub fn calls(&self, route: &str) -> u32 {
        self.lock().calls.of(route)
    }

    pub fn queries(&self, route: &str) -> Vec<HashMap<String, String>> {
        self.lock().calls.queries(route)
    }

    pub fn set_failure(&self, failure: Option<Failure>) {
        self.lock().failure = failure;
    }

    /// The fixtures' user with credentials issued directly, as if linked.
    pub fn account(&self) -> ProviderAccount {
        self.lock().issuer.account(USER_ID.to_owned())
    }

    /// Ends every access token (as when they expire).
    pub fn expire_access_tokens(&self) {
        self.lock().issuer.expire_access();
    }
}

/// A delivery as Hammerhead POSTs it, signed with `secret`.
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

/// Hammerhead's error body.
fn fault(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"message": message, "statusCode": status.as_u16()}))).into_response()
}

/// Counts an API call, applies the switches, checks the bearer token.
fn admit(
    fake: &FakeHammerhead,
    headers: &HeaderMap,
    route: &'static str,
    query: HashMap<String, String>,
) -> Option<Response> {
    let mut inner = fake.lock();
    inner.calls.count(route, query);
    match inner.failure {
        Some(Failure::Unauthorized) => return Some(fault(StatusCode::UNAUTHORIZED, "Unauthorized")),
        Some(Failure::ServerError) => {
            return Some(fault(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"));
        }
        Some(Failure::TooManyRequests) => {
            return Some(fault(StatusCode::TOO_MANY_REQUESTS, "Too Many Requests"));
        }
        None => {}
    }
    (!inner.issuer.admits(headers)).then(|| fault(StatusCode::UNAUTHORIZED, "Unauthorized"))
}

async fn authorize(State(fake): State<FakeHammerhead>, Query(q): Params) -> Response {
    let mut inner = fake.lock();
    inner.calls.count("authorize", q.clone());
    inner.issuer.consent(&q)
}

async fn token(State(fake): State<FakeHammerhead>, headers: HeaderMap, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let mut inner = fake.lock();
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    inner.calls.count("token", HashMap::from([("grant_type".to_owned(), grant)]));
    if !inner.issuer.authenticates(&form, &headers) {
        return fault(StatusCode::UNAUTHORIZED, "invalid client");
    }
    if !inner.issuer.redeem(&form) {
        return fault(StatusCode::BAD_REQUEST, "invalid grant");
    }
    let (access, refresh) = inner.issuer.issue();
    axum::Json(json!({"access_token": access, "refresh_token": refresh, "expires_in": 3600,
        "token_type": "Bearer", "user_id": USER_ID}))
    .into_response()
}

async fn deauthorize(State(fake): State<FakeHammerhead>, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let mut inner = fake.lock();
    inner.calls.count("deauthorize", HashMap::new());
    if !inner.issuer.in_form(&form) {
        return fault(StatusCode::UNAUTHORIZED, "invalid client");
    }
    let token = form.get("token").cloned().unwrap_or_default();
    if !inner.issuer.revoke_access(&token) {
        return fault(StatusCode::UNAUTHORIZED, "Unauthorized");
    }
    inner.issuer.revoke_all();
    StatusCode::OK.into_response()
}

fn all_activities() -> Vec<Value> {
    let doc: Value = serde_json::from_str(ACTIVITIES).unwrap_or_default();
    doc["data"].as_array().cloned().unwrap_or_default()
}

async fn activities(State(fake): State<FakeHammerhead>, headers: HeaderMap, Query(q): Params) -> Response {
    if let Some(refused) = admit(&fake, &headers, "activities", q.clone()) {
        return refused;
    }
    let number = |k: &str, default: usize| q.get(k).map_or(Ok(default), |v| v.parse::<usize>());
    let (Ok(page), Ok(per_page)) = (number("page", 1), number("perPage", 10)) else {
        return fault(StatusCode::BAD_REQUEST, "Bad Request");
    };
    if page == 0 || per_page == 0 {
        return fault(StatusCode::BAD_REQUEST, "Bad Request");
    }
    let from = q.get("startDate").cloned().unwrap_or_default();
    let mut matching: Vec<Value> = all_activities()
        .into_iter()
        .filter(|a| a["createdAt"].as_str().is_some_and(|c| c.get(..10).is_some_and(|d| d >= from.as_str())))
        .collect();
    matching.sort_by(|a, b| b["createdAt"].as_str().cmp(&a["createdAt"].as_str()));
    let total = matching.len();
    let pages = total.div_ceil(per_page).max(1);
    let items: Vec<Value> = matching.into_iter().skip((page - 1) * per_page).take(per_page).collect();
    axum::Json(json!({"totalItems": total, "totalPages": pages, "perPage": per_page, "currentPage": page,
        "data": items}))
    .into_response()
}

async fn activity(
    State(fake): State<FakeHammerhead>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(refused) = admit(&fake, &headers, "activity", HashMap::new()) {
        return refused;
    }
    match all_activities().into_iter().find(|a| a["id"] == id.as_str()) {
        Some(a) => axum::Json(a).into_response(),
        None => fault(StatusCode::NOT_FOUND, "Not Found"),
    }
}

async fn file(State(fake): State<FakeHammerhead>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if let Some(refused) = admit(&fake, &headers, "file", HashMap::new()) {
        return refused;
    }
    if id != RECORDED_ACTIVITY {
        return fault(StatusCode::NOT_FOUND, "Not Found");
    }
    ([(header::CONTENT_TYPE, "application/vnd.ant.fit")], FIT_FILE).into_response()
}
