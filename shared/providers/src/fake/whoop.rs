//! The local fake of WHOOP's API v2: the consent page (redirects back with `code` and
//! `state`), the token endpoint (client in the body; every refresh token works once and is
//! replaced), the collections of `fixtures/whoop_v2/` paged by `nextToken`, the body and
//! profile documents, and the revoke endpoint. Switches make the data calls answer 401, 429
//! (with WHOOP's rate headers) or 500.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use base64::Engine;
use serde_json::{Value, json};
use wearlab_domain::common::signing::hmac_sha256;
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount, PushRequest};

use super::oauth::{Calls, Issuer};
use crate::config::Endpoints;

/// The user the fixtures belong to (WHOOP's webhook example's `user_id`).
pub const USER_ID: i64 = 10129;
/// The largest page WHOOP serves; a larger `limit` is refused.
pub const MAX_LIMIT: usize = 25;

const SLEEP: &str = include_str!("../../fixtures/whoop_v2/sleep.json");
const WORKOUT: &str = include_str!("../../fixtures/whoop_v2/workout.json");
const RECOVERY: &str = include_str!("../../fixtures/whoop_v2/recovery.json");
const BODY: &str = include_str!("../../fixtures/whoop_v2/body_measurement.json");
const PROFILE: &str = include_str!("../../fixtures/whoop_v2/profile_basic.json");
/// WHOOP's example webhook body (`sleep.updated`).
pub const WEBHOOK_SLEEP_UPDATED: &str = include_str!("../../fixtures/whoop_v2/webhook_sleep_updated.json");

/// A query string, as the handlers read it.
type Params = Query<HashMap<String, String>>;

/// How the data calls fail while a switch is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Unauthorized,
    /// 429 with `X-RateLimit-Reset: reset_secs` (seconds until the window resets).
    RateLimited {
        reset_secs: u64,
    },
    ServerError,
}

struct Inner {
    issuer: Issuer,
    calls: Calls,
    failure: Option<Failure>,
    page_size: usize,
    /// The user unticked `offline` at the consent: no refresh token is issued.
    offline_refused: bool,
    /// Every page names the same next page (a provider bug the adapter must survive).
    stuck_paging: bool,
}

impl Inner {
    fn tokens(&mut self) -> Value {
        let (access, refresh) = self.issuer.issue();
        let mut answer = json!({"access_token": access, "expires_in": 3600, "scope": crate::whoop::SCOPES});
        if !self.offline_refused {
            answer["refresh_token"] = json!(refresh);
        }
        answer
    }
}

/// A running fake's handle: what it was asked, and its switches.
#[derive(Clone)]
pub struct FakeWhoop {
    inner: Arc<Mutex<Inner>>,
}

impl FakeWhoop {
    /// A fake that knows one OAuth application.
    pub fn new(client: OauthClient) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                issuer: Issuer::new(&crate::whoop::DESCRIPTION, "whoop", client),
                calls: Calls::default(),
                failure: None,
                page_size: MAX_LIMIT,
                offline_refused: false,
                stuck_paging: false,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves the fake on loopback; the endpoints an adapter is configured with.
    pub async fn start(&self) -> Endpoints {
        super::oauth::endpoints(&super::serve(self.router()).await, &crate::whoop::DESCRIPTION)
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/oauth/oauth2/auth", get(authorize))
            .route("/oauth/oauth2/token", post(token))
            .route(
                "/developer/v2/user/profile/basic",
                get(|s: State<FakeWhoop>, h: HeaderMap| document(s, h, "profile", PROFILE)),
            )
            .route(
                "/developer/v2/user/measurement/body",
                get(|s: State<FakeWhoop>, h: HeaderMap| document(s, h, "body", BODY)),
            )
            .route(
                "/developer/v2/activity/sleep",
                get(|s: State<FakeWhoop>, h: HeaderMap, q: Params| collection(s, h, q, "sleep", SLEEP)),
            )
            .route(
                "/developer/v2/activity/workout",
                get(|s: State<FakeWhoop>, h: HeaderMap, q: Params| collection(s, h, q, "workout", WORKOUT)),
            )
            .route(
                "/developer/v2/recovery",
                get(|s: State<FakeWhoop>, h: HeaderMap, q: Params| collection(s, h, q, "recovery", RECOVERY)),
            )
            .route("/developer/v2/user/access", delete(revoke))
            .with_state(self.clone())
    }

    /// Calls that reached `route` (`authorize`, `token`, `profile`, `body`, `sleep`, `workout`,
    /// `recovery`, `revoke`).
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

    /// Serves at most `n` records a page (fewer than the caller's `limit`), to test paging.
    pub fn set_page_size(&self, n: usize) {
        self.lock().page_size = n.max(1);
    }

    /// Token answers without a refresh token, as when the user did not grant `offline`.
    pub fn refuse_offline(&self) {
        self.lock().offline_refused = true;
    }

    /// Every page names the same next page.
    pub fn stick_paging(&self) {
        self.lock().stuck_paging = true;
    }

    /// The fixtures' user with credentials issued directly (as if linked), for tests that
    /// start after the link.
    pub fn account(&self) -> ProviderAccount {
        self.lock().issuer.account(USER_ID.to_string())
    }

    /// Ends every access token (as WHOOP does after an hour).
    pub fn expire_access_tokens(&self) {
        self.lock().issuer.expire_access();
    }
}

/// A push as WHOOP sends it: signed with `secret` at `timestamp_ms`.
pub fn signed_push(secret: &str, timestamp_ms: i64, body: &[u8]) -> PushRequest {
    let ts = timestamp_ms.to_string();
    let mut message = ts.as_bytes().to_vec();
    message.extend_from_slice(body);
    let signature =
        base64::engine::general_purpose::STANDARD.encode(hmac_sha256(secret.as_bytes(), &message));
    PushRequest {
        method: "POST".into(),
        query: vec![],
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-whoop-signature".into(), signature),
            ("x-whoop-signature-timestamp".into(), ts),
        ],
        body: body.to_vec(),
    }
}

fn error(status: StatusCode, code: &str) -> Response {
    (status, axum::Json(json!({"error": code}))).into_response()
}

/// Counts the call, records its query, applies the failure switch and checks the bearer token:
/// the answer that refuses the call, if any.
fn refusal(
    fake: &FakeWhoop,
    headers: &HeaderMap,
    route: &'static str,
    query: HashMap<String, String>,
) -> Option<Response> {
    let mut inner = fake.lock();
    inner.calls.count(route, query);
    match inner.failure {
        Some(Failure::Unauthorized) => return Some(StatusCode::UNAUTHORIZED.into_response()),
        Some(Failure::RateLimited { reset_secs }) => {
            return Some(
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    [
                        ("x-ratelimit-limit", "100, 100;window=60, 10000;window=86400".to_owned()),
                        ("x-ratelimit-remaining", "0".to_owned()),
                        ("x-ratelimit-reset", reset_secs.to_string()),
                    ],
                )
                    .into_response(),
            );
        }
        Some(Failure::ServerError) => return Some(StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        None => {}
    }
    (!inner.issuer.admits(headers)).then(|| StatusCode::UNAUTHORIZED.into_response())
}

async fn authorize(State(fake): State<FakeWhoop>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = fake.lock();
    inner.calls.hit("authorize");
    inner.issuer.consent(&q)
}

async fn token(State(fake): State<FakeWhoop>, headers: HeaderMap, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let mut inner = fake.lock();
    inner.calls.hit("token");
    if !inner.issuer.authenticates(&form, &headers) {
        return error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if !inner.issuer.redeem(&form) {
        return error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    axum::Json(inner.tokens()).into_response()
}

async fn document(
    State(fake): State<FakeWhoop>,
    headers: HeaderMap,
    route: &'static str,
    fixture: &str,
) -> Response {
    if let Some(refused) = refusal(&fake, &headers, route, HashMap::new()) {
        return refused;
    }
    let value: Value = serde_json::from_str(fixture).unwrap_or(Value::Null);
    axum::Json(value).into_response()
}

/// One page of a collection fixture: `nextToken` is the index of the next record.
async fn collection(
    State(fake): State<FakeWhoop>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
    route: &'static str,
    fixture: &str,
) -> Response {
    if let Some(refused) = refusal(&fake, &headers, route, q.clone()) {
        return refused;
    }
    let limit = match q.get("limit").map(|l| l.parse::<usize>()) {
        None => 10,
        Some(Ok(l)) if (1..=MAX_LIMIT).contains(&l) => l,
        Some(_) => return error(StatusCode::BAD_REQUEST, "limit must be between 1 and 25"),
    };
    let from = match q.get("nextToken").map(|t| t.parse::<usize>()) {
        None => 0,
        Some(Ok(i)) => i,
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "unknown nextToken"),
    };
    let (page_size, stuck) = {
        let inner = fake.lock();
        (inner.page_size, inner.stuck_paging)
    };
    let all: Value = serde_json::from_str(fixture).unwrap_or(Value::Null);
    let records = all["records"].as_array().cloned().unwrap_or_default();
    let to = (from + limit.min(page_size)).min(records.len());
    let page = records.get(from..to).map(<[Value]>::to_vec).unwrap_or_default();
    let next = if stuck { Some("1".to_owned()) } else { (to < records.len()).then(|| to.to_string()) };
    axum::Json(json!({"records": page, "next_token": next})).into_response()
}

async fn revoke(State(fake): State<FakeWhoop>, headers: HeaderMap) -> Response {
    if let Some(refused) = refusal(&fake, &headers, "revoke", HashMap::new()) {
        return refused;
    }
    fake.lock().issuer.revoke_all();
    StatusCode::NO_CONTENT.into_response()
}
