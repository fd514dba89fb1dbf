//! A local Google Health API: Google's consent page (redirects straight back with a code), the
//! token endpoint (client in the body; a refresh answers no new refresh token),
//! `/v4/users/me/identity`, and `/v4/users/me/dataTypes/{type}/dataPoints` from
//! `fixtures/google_health/` with the AIP-160 civil-time `filter` checked and applied, newest
//! first, paged by `pageToken`, and Google's 300 requests a minute per user; Google's token
//! revocation; and a webhook signing keyset (a Tink JSON keyset of a P-256 key the fake makes
//! when it starts) with which it signs notifications. It counts calls,
//! keeps the queries and can be told to fail data calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount, PushRequest};

use super::oauth::{Calls, Issuer, oauth_error};
use crate::config::{AppConfig, Endpoints};
use crate::google_health::{self, GoogleUrls, Kind, PAGE_SIZE, SESSION_PAGE_SIZE};

/// The user every code is for (the fixture's `healthUserId`, the discovery document's
/// `users/abcd1234` example).
pub const USER_ID: &str = "abcd1234";
/// The user's requests a minute (https://developers.google.com/health/rate-limits).
pub const PER_USER_PER_MINUTE: usize = 300;

const IDENTITY: &str = include_str!("../../fixtures/google_health/identity.json");
/// The notification fixture (a `steps` change of the fixture user).
pub const NOTIFICATION: &str = include_str!("../../fixtures/google_health/notification.json");
const COLLECTIONS: [(&str, &str); 10] = [
    ("steps", include_str!("../../fixtures/google_health/steps.json")),
    ("distance", include_str!("../../fixtures/google_health/distance.json")),
    ("heart-rate", include_str!("../../fixtures/google_health/heart-rate.json")),
    ("weight", include_str!("../../fixtures/google_health/weight.json")),
    ("body-fat", include_str!("../../fixtures/google_health/body-fat.json")),
    (
        "daily-heart-rate-variability",
        include_str!("../../fixtures/google_health/daily-heart-rate-variability.json"),
    ),
    ("daily-oxygen-saturation", include_str!("../../fixtures/google_health/daily-oxygen-saturation.json")),
    ("daily-resting-heart-rate", include_str!("../../fixtures/google_health/daily-resting-heart-rate.json")),
    ("exercise", include_str!("../../fixtures/google_health/exercise.json")),
    ("sleep", include_str!("../../fixtures/google_health/sleep.json")),
];

struct Inner {
    /// Codes, tokens (refresh tokens stay valid when used) and the client check.
    issuer: Issuer,
    calls: Calls,
    queries: HashMap<String, Vec<HashMap<String, String>>>,
    authorize_queries: Vec<HashMap<String, String>>,
    failures: Vec<u16>,
    page_size: usize,
    added: HashMap<String, Vec<Value>>,
    /// Every token revoked at `/revoke`, in order.
    revoked: Vec<String>,
    /// The user's data calls in the current minute: (minute, count).
    minute: (i64, usize),
    per_user_limit: usize,
}

impl Inner {
    fn count(&mut self, what: &str) {
        self.calls.hit(what);
    }
}

type Shared = Arc<Mutex<Inner>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, Inner> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// The key id of the fake's signing key in its keyset.
pub const SIGNING_KEY_ID: u32 = 0x2f6e_8a11;

#[derive(Clone)]
pub struct GoogleHealthFake {
    base: String,
    inner: Shared,
    signing_key: Arc<p256::ecdsa::SigningKey>,
}

/// A signing key for this fake: from a hash of the time and a counter (a test key, not a
/// secret).
fn new_signing_key() -> p256::ecdsa::SigningKey {
    use sha2::Digest;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    for n in 0u32..100 {
        let seed = sha2::Sha256::digest(format!("{}-{n}", nanos.as_nanos()));
        if let Ok(key) = p256::ecdsa::SigningKey::from_slice(&seed) {
            return key;
        }
    }
    p256::ecdsa::SigningKey::from_slice(&[7u8; 32]).expect("a valid scalar")
}

impl GoogleHealthFake {
    /// A fake Google Health API on a loopback port that knows the OAuth app `client`.
    pub async fn start(client: &OauthClient) -> Self {
        let issuer = Issuer::new(&crate::google_health::DESCRIPTION, "gh", client.clone()).reusable_refresh();
        let inner = Arc::new(Mutex::new(Inner {
            issuer,
            calls: Calls::default(),
            queries: HashMap::new(),
            authorize_queries: Vec::new(),
            failures: Vec::new(),
            page_size: 2,
            added: HashMap::new(),
            revoked: Vec::new(),
            minute: (0, 0),
            per_user_limit: PER_USER_PER_MINUTE,
        }));
        let signing_key = Arc::new(new_signing_key());
        let keyset = crate::tink::keyset_json(SIGNING_KEY_ID, signing_key.verifying_key());
        let keyset_calls = inner.clone();
        let app = Router::new()
            .route(
                "/webhooks_public_keyset.json",
                get(move || {
                    lock(&keyset_calls).count("signing_keys");
                    let keyset = keyset.clone();
                    async move { ([(header::CONTENT_TYPE, "application/json")], keyset).into_response() }
                }),
            )
            .route("/o/oauth2/v2/auth", get(authorize))
            .route("/token", post(token))
            .route("/revoke", post(revoke))
            .route("/v4/users/me/identity", get(identity))
            .route("/v4/users/me/dataTypes/{data_type}/dataPoints", get(data_points))
            .route("/v4/users/me/dataTypes/{data_type}/dataPoints:reconcile", get(reconciled_points))
            .with_state(inner.clone());
        Self { base: super::serve(app).await, inner, signing_key }
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub fn endpoints(&self) -> Endpoints {
        super::oauth::endpoints(&self.base, &crate::google_health::DESCRIPTION)
    }

    /// Google's other addresses ([`GoogleUrls`]) on this fake.
    pub fn urls(&self) -> GoogleUrls {
        GoogleUrls {
            revoke: format!("{}/revoke", self.base),
            signing_keys: format!("{}/webhooks_public_keyset.json", self.base),
        }
    }

    /// `X-HEALTHAPI-SIGNATURE` for `body` as Google sends it: base64 of a Tink signature (key
    /// id prefix, DER ECDSA P-256 SHA-256) over the raw body, by the key of this fake's keyset.
    pub fn signature(&self, body: &str) -> String {
        use base64::Engine;
        let signed = crate::tink::sign(SIGNING_KEY_ID, &self.signing_key, body.as_bytes());
        base64::engine::general_purpose::STANDARD.encode(signed)
    }

    /// A notification POST as Google sends it: [`push`] signed by this fake's key.
    pub fn signed_push(&self, authorization: Option<&str>, body: &str) -> PushRequest {
        let mut request = push(authorization, body);
        request.headers.push(("x-healthapi-signature".to_owned(), self.signature(body)));
        request
    }

    /// Every token revoked at Google's revocation endpoint, in order.
    pub fn revoked(&self) -> Vec<String> {
        self.lock().revoked.clone()
    }

    /// The adapter configuration pointing at this fake.
    pub fn config(&self, client: &OauthClient, push_token: Option<&str>) -> AppConfig {
        AppConfig {
            endpoints: self.endpoints(),
            platform_client: Some(client.clone()),
            push_token: push_token.map(Secret::new),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// How many calls reached `what`: `authorize`, `token:authorization_code`,
    /// `token:refresh_token`, `identity`, or a data type (`steps`, `heart-rate`, ...).
    pub fn calls(&self, what: &str) -> usize {
        self.lock().calls.of(what) as usize
    }

    /// The query of every call to a data type's `dataPoints`, in order.
    pub fn queries(&self, data_type: &str) -> Vec<HashMap<String, String>> {
        self.lock().queries.get(data_type).cloned().unwrap_or_default()
    }

    /// The query of every consent page request, in order.
    pub fn authorize_queries(&self) -> Vec<HashMap<String, String>> {
        self.lock().authorize_queries.clone()
    }

    /// The next `times` data calls answer `status`.
    pub fn fail_next(&self, status: u16, times: usize) {
        self.lock().failures.extend(std::iter::repeat_n(status, times));
    }

    /// Every access token issued so far is refused (401) from now on.
    pub fn expire_access_tokens(&self) {
        self.lock().issuer.expire_access();
    }

    /// Every refresh token issued so far is refused (the user removed the app's access).
    pub fn revoke_refresh_tokens(&self) {
        self.lock().issuer.revoke_refresh_tokens();
    }

    /// Data points per page (2 by default, so every fixture spans pages).
    pub fn set_page_size(&self, n: usize) {
        self.lock().page_size = n.max(1);
    }

    /// The user's data calls allowed a minute (Google's 300 by default).
    pub fn set_per_user_limit(&self, n: usize) {
        self.lock().per_user_limit = n;
    }

    /// New data at Google: `point` (a whole `DataPoint`) joins `data_type`.
    pub fn add_point(&self, data_type: &str, point: Value) {
        self.lock().added.entry(data_type.to_owned()).or_default().push(point);
    }

    /// An account as a code exchange would have linked it.
    pub fn account(&self) -> ProviderAccount {
        self.lock().issuer.account(USER_ID.into())
    }
}

/// A POST to the subscriber endpoint as Google sends it: JSON `body`, and `Authorization` when
/// given (the subscriber's secret, sent as the whole header value).
pub fn push(authorization: Option<&str>, body: &str) -> PushRequest {
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if let Some(a) = authorization {
        headers.push(("authorization".to_owned(), a.to_owned()));
    }
    PushRequest { method: "POST".into(), query: vec![], headers, body: body.as_bytes().to_vec() }
}

/// Google's verification POST (the discovery document's `subscribers.create`).
pub const VERIFICATION: &str = r#"{"type": "verification"}"#;

/// Google's error body (`Status`: code, message).
fn error(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"code": status.as_u16(), "message": message}});
    (status, axum::Json(body)).into_response()
}

async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = lock(&s);
    inner.count("authorize");
    inner.authorize_queries.push(q.clone());
    inner.issuer.consent(&q)
}

async fn token(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let mut inner = lock(&s);
    let grant = form.get("grant_type").cloned().unwrap_or_default();
    inner.count(&format!("token:{grant}"));
    // Google takes the client in the body ("Token auth: body").
    if !inner.issuer.authenticates(&form, &headers) {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if !matches!(grant.as_str(), "authorization_code" | "refresh_token") {
        return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type");
    }
    // A refresh token only when the consent asked for offline access.
    let offline = form
        .get("code")
        .and_then(|c| inner.issuer.consent_of(c))
        .map(|q| q.get("access_type").map(String::as_str) == Some("offline"));
    if !inner.issuer.redeem(&form) {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    let (access, refresh) = inner.issuer.issue();
    let mut answer = json!({"access_token": access, "expires_in": 3599, "token_type": "Bearer",
        "scope": google_health::SCOPES});
    // A refresh answers no new refresh token: the one the client holds stays valid.
    if offline == Some(true) {
        answer["refresh_token"] = json!(refresh);
    }
    axum::Json(answer).into_response()
}

/// Google's token revocation (https://developers.google.com/identity/protocols/oauth2/web-server,
/// "Revoking a token"): `token` (form encoded) is an access or a refresh token; revoking a
/// refresh token ends the grant, its access tokens with it. 200 with an empty body; an unknown
/// token is 400 `invalid_token`. The fake has one user and one app, so one grant: revoking its
/// refresh token ends every token it issued.
async fn revoke(State(s): State<Shared>, body: Bytes) -> Response {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let mut inner = lock(&s);
    inner.count("revoke");
    let token = form.get("token").cloned().unwrap_or_default();
    if inner.issuer.revoke_refresh(&token) {
        inner.issuer.revoke_all();
    } else if !inner.issuer.revoke_access(&token) {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_token");
    }
    inner.revoked.push(token);
    StatusCode::OK.into_response()
}

/// The bearer check, the configured failures and the per-user minute every call goes through.
fn admit(inner: &mut Inner, headers: &HeaderMap, what: &str) -> Result<(), Box<Response>> {
    inner.count(what);
    if !inner.failures.is_empty() {
        let status = inner.failures.remove(0);
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return Err(Box::new(error(code, "fake failure")));
    }
    if !inner.issuer.admits(headers) {
        return Err(Box::new(error(
            StatusCode::UNAUTHORIZED,
            "Request had invalid authentication credentials.",
        )));
    }
    let minute = Utc::now().timestamp() / 60;
    if inner.minute.0 != minute {
        inner.minute = (minute, 0);
    }
    inner.minute.1 += 1;
    if inner.minute.1 > inner.per_user_limit {
        return Err(Box::new(error(StatusCode::TOO_MANY_REQUESTS, "Quota exceeded")));
    }
    Ok(())
}

async fn identity(State(s): State<Shared>, headers: HeaderMap) -> Response {
    let mut inner = lock(&s);
    if let Err(r) = admit(&mut inner, &headers, "identity") {
        return *r;
    }
    axum::Json(serde_json::from_str::<Value>(IDENTITY).unwrap_or_default()).into_response()
}

/// A data point's local (civil) time that `kind`'s filter compares, from its physical time and
/// UTC offset.
fn civil(value: &Value, kind: Kind) -> Option<NaiveDateTime> {
    let at = |v: &Value, t: &str, o: &str| -> Option<NaiveDateTime> {
        let physical = DateTime::parse_from_rfc3339(v.get(t)?.as_str()?).ok()?;
        let offset = google_health::parse_offset(v.get(o))?;
        Some(physical.with_timezone(&offset).naive_local())
    };
    match kind {
        Kind::Interval | Kind::Session => at(value.get("interval")?, "startTime", "startUtcOffset"),
        Kind::Sleep => at(value.get("interval")?, "endTime", "endUtcOffset"),
        Kind::Sample => at(value.get("sampleTime")?, "physicalTime", "utcOffset"),
        Kind::Daily => {
            let d = value.get("date")?;
            let part = |k: &str| d.get(k).and_then(Value::as_u64);
            NaiveDate::from_ymd_opt(part("year")? as i32, part("month")? as u32, part("day")? as u32)?
                .and_hms_opt(0, 0, 0)
        }
    }
}

/// A civil literal: `YYYY-MM-DD[THH:mm:ss]`.
fn literal(s: &str) -> Option<NaiveDateTime> {
    let s = s.trim().strip_prefix('"')?.strip_suffix('"')?;
    s.parse::<NaiveDateTime>().ok().or_else(|| s.parse::<NaiveDate>().ok()?.and_hms_opt(0, 0, 0))
}

/// `field >= "a" AND field < "b"` (either bound alone too), for the one field the discovery
/// document allows for this data type; anything else is Google's 400.
fn bounds(filter: &str, field: &str) -> Option<(Option<NaiveDateTime>, Option<NaiveDateTime>)> {
    let (mut from, mut to) = (None, None);
    for term in filter.split(" AND ") {
        let rest = term.trim().strip_prefix(field)?.trim_start();
        if let Some(v) = rest.strip_prefix(">=") {
            from = Some(literal(v)?);
        } else if let Some(v) = rest.strip_prefix('<') {
            to = Some(literal(v)?);
        } else {
            return None;
        }
    }
    Some((from, to))
}

/// `dataPoints.list`: every source's points as recorded, each with its `dataSource`.
async fn data_points(
    State(s): State<Shared>,
    Path(data_type): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    points_answer(&s, data_type, q, &headers, false)
}

/// `dataPoints.reconcile` (the discovery document: "Reconcile data points from multiple data
/// sources into a single data stream", response `ReconcileDataPointsResponse` of
/// `ReconciledDataPoint`s, which carry no `dataSource`). Google does not document how it merges;
/// the fake's rule: where points of the collection overlap in time (an interval, or the same sample
/// time), the one recorded by a device (`dataSource.device`, the wearable's sync) is kept, else the
/// first listed.
async fn reconciled_points(
    State(s): State<Shared>,
    Path(data_type): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    points_answer(&s, data_type, q, &headers, true)
}

/// The physical span a point covers (a sample: one instant).
fn span(value: &Value, kind: Kind) -> Option<(DateTime<chrono::FixedOffset>, DateTime<chrono::FixedOffset>)> {
    let t = |v: &Value, k: &str| DateTime::parse_from_rfc3339(v.get(k)?.as_str()?).ok();
    match kind {
        Kind::Interval | Kind::Session | Kind::Sleep => {
            let i = value.get("interval")?;
            Some((t(i, "startTime")?, t(i, "endTime")?))
        }
        Kind::Sample => {
            let at = t(value.get("sampleTime")?, "physicalTime")?;
            Some((at, at))
        }
        Kind::Daily => {
            let day = civil(value, kind)?.and_utc().fixed_offset();
            Some((day, day))
        }
    }
}

/// The fake's reconciliation (see [`reconciled_points`]): one point where several overlap, the
/// device's first; `dataSource` dropped.
fn reconcile(points: Vec<Value>, key: &str, kind: Kind) -> Vec<Value> {
    let from_device = |p: &Value| p.get("dataSource").and_then(|d| d.get("device")).is_some();
    let mut ranked: Vec<(usize, Value)> = points.into_iter().enumerate().collect();
    ranked.sort_by_key(|(i, p)| (!from_device(p), *i));
    let mut kept: Vec<(usize, Value)> = Vec::new();
    for (i, p) in ranked {
        let Some((a, b)) = p.get(key).and_then(|v| span(v, kind)) else { continue };
        let overlaps = kept.iter().any(|(_, k)| {
            k.get(key)
                .and_then(|v| span(v, kind))
                .is_some_and(|(c, d)| if a == b || c == d { a <= d && c <= b } else { a < d && c < b })
        });
        if !overlaps {
            kept.push((i, p));
        }
    }
    kept.sort_by_key(|(i, _)| *i);
    kept.into_iter()
        .map(|(_, mut p)| {
            if let Some(map) = p.as_object_mut() {
                map.remove("dataSource");
            }
            p
        })
        .collect()
}

fn points_answer(
    s: &Shared,
    data_type: String,
    q: HashMap<String, String>,
    headers: &HeaderMap,
    reconciled: bool,
) -> Response {
    let mut inner = lock(s);
    if reconciled {
        inner.count(&format!("{data_type}:reconcile"));
    }
    let Some(kind) = google_health::DATA_TYPES.iter().find(|(t, _)| *t == data_type).map(|(_, k)| *k) else {
        return error(StatusCode::NOT_FOUND, "unknown data type");
    };
    inner.queries.entry(data_type.clone()).or_default().push(q.clone());
    if let Err(r) = admit(&mut inner, headers, &data_type) {
        return *r;
    }
    let field = google_health::filter_field(&data_type).unwrap_or_default();
    let (from, to) = match q.get("filter").map(|f| bounds(f, &field)) {
        None => (None, None),
        Some(Some(b)) => b,
        Some(None) => return error(StatusCode::BAD_REQUEST, "invalid filter"),
    };
    let max =
        if kind == Kind::Session || kind == Kind::Sleep { SESSION_PAGE_SIZE } else { PAGE_SIZE } as usize;
    let asked = q.get("pageSize").and_then(|v| v.parse::<usize>().ok()).unwrap_or(max).min(max);
    let size = asked.min(inner.page_size).max(1);
    let key = google_health::value_key(&data_type);
    let fixture = COLLECTIONS.iter().find(|(t, _)| *t == data_type).map(|(_, f)| *f).unwrap_or("{}");
    let all: Value = serde_json::from_str(fixture).unwrap_or_default();
    let added = inner.added.get(&data_type).cloned().unwrap_or_default();
    let listed: Vec<Value> =
        all["dataPoints"].as_array().into_iter().flatten().chain(added.iter()).cloned().collect();
    let listed = if reconciled { reconcile(listed, &key, kind) } else { listed };
    let mut points: Vec<(NaiveDateTime, Value)> = listed
        .iter()
        .filter_map(|p| Some((civil(p.get(&key)?, kind)?, p.clone())))
        .filter(|(t, _)| from.is_none_or(|f| *t >= f) && to.is_none_or(|e| *t < e))
        .collect();
    // The discovery document: "ordered by the interval start time in descending order".
    points.sort_by_key(|p| std::cmp::Reverse(p.0));
    let offset: usize = match q.get("pageToken").map(|t| t.parse()) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => return error(StatusCode::BAD_REQUEST, "invalid page token"),
    };
    let end = (offset + size).min(points.len());
    let page: Vec<Value> =
        points.get(offset..end).unwrap_or_default().iter().map(|(_, p)| p.clone()).collect();
    let mut body = json!({"dataPoints": page});
    if end < points.len() {
        body["nextPageToken"] = json!(end.to_string());
    }
    axum::Json(body).into_response()
}
