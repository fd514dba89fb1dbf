//! The local fake of Withings's Public Health Data API: the consent page (redirects back with
//! `code` and `state`), `/v2/oauth2` (`requesttoken` with rotating refresh tokens, each usable
//! once; `revoke` signed with a nonce from `/v2/signature getnonce`), `getmeas`,
//! `getactivity`, `getintradayactivity` (24 h at most), `getworkouts`, `sleep getsummary`
//! from `fixtures/withings/` paged by `more`/`offset`, and `notify subscribe`. As Withings does,
//! every answer is HTTP 200 with `status` in the body; a switch sets that status (or a real HTTP
//! error) for every API call.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount};

use super::oauth::{Calls, Issuer};
use crate::config::Endpoints;
use crate::withings::signature;

/// The user the fixtures belong to (Withings's notification example's `userid`).
pub const USER_ID: i64 = 12345;

const GETMEAS: &str = include_str!("../../fixtures/withings/getmeas.json");
const GETACTIVITY: &str = include_str!("../../fixtures/withings/getactivity.json");
const GETINTRADAY: &str = include_str!("../../fixtures/withings/getintradayactivity.json");
const GETWORKOUTS: &str = include_str!("../../fixtures/withings/getworkouts.json");
const SLEEP_SUMMARY: &str = include_str!("../../fixtures/withings/sleep_getsummary.json");
/// Withings's example notification form.
pub const NOTIFICATION: &str = include_str!("../../fixtures/withings/notification.txt");

/// The fields of an intraday sample that describe its device (the Withings API reference's
/// `$timestamp` object), not asked for by `data_fields`.
const INTRADAY_DEVICE_FIELDS: [&str; 3] = ["deviceid", "model", "model_id"];

/// How every API call answers while a switch is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// HTTP 200 with this `status` in the body (Withings's way).
    Status(i64),
    /// This HTTP status (a failure in front of the API, e.g. 503).
    Http(u16),
}

struct Inner {
    issuer: Issuer,
    nonces: HashSet<String>,
    calls: Calls,
    failure: Option<Failure>,
    page_size: usize,
    /// Every page says `more` with the same `offset` (a provider bug the adapter must survive).
    stuck_paging: bool,
    subscriptions: Vec<(String, String)>,
    /// The status `notify subscribe` answers instead of subscribing (as when Withings cannot
    /// reach the callback URL).
    subscribe_refusal: Option<i64>,
}

impl Inner {
    fn tokens(&mut self) -> Value {
        let (access, refresh) = self.issuer.issue();
        json!({
            "userid": USER_ID.to_string(),
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": 10800,
            "scope": crate::withings::SCOPES,
            "csrf_token": "csrf",
            "token_type": "Bearer",
        })
    }
}

#[derive(Clone)]
pub struct FakeWithings {
    inner: Arc<Mutex<Inner>>,
}

/// A refusal in the Withings API reference's envelope `{status, body}` (the document shows no error
/// text field).
fn status(code: i64) -> Response {
    axum::Json(json!({"status": code, "body": {}})).into_response()
}

fn ok(body: Value) -> Response {
    axum::Json(json!({"status": 0, "body": body})).into_response()
}

impl FakeWithings {
    pub fn new(client: OauthClient) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                issuer: Issuer::new(&crate::withings::DESCRIPTION, "withings", client),
                nonces: HashSet::new(),
                calls: Calls::default(),
                failure: None,
                page_size: 100,
                stuck_paging: false,
                subscriptions: Vec::new(),
                subscribe_refusal: None,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves the fake on loopback; the endpoints an adapter is configured with.
    pub async fn start(&self) -> Endpoints {
        super::oauth::endpoints(&super::serve(self.router()).await, &crate::withings::DESCRIPTION)
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/oauth2_user/authorize2", get(authorize))
            .route("/v2/oauth2", post(oauth2))
            .route("/v2/signature", post(signature_service))
            .route("/measure", post(data))
            .route("/v2/measure", post(data))
            .route("/v2/sleep", post(data))
            .route("/notify", post(data))
            .with_state(self.clone())
    }

    /// Calls of `action` (`requesttoken`, `revoke`, `getnonce`, `getmeas`, `getactivity`,
    /// `getintradayactivity`, `getworkouts`, `getsummary`, `subscribe`) or of `authorize`.
    pub fn calls(&self, action: &str) -> u32 {
        self.lock().calls.of(action)
    }

    /// The forms `action` received, in order.
    pub fn forms(&self, action: &str) -> Vec<HashMap<String, String>> {
        self.lock().calls.queries(action)
    }

    pub fn set_failure(&self, failure: Option<Failure>) {
        self.lock().failure = failure;
    }

    /// Serves at most `n` records a page, to test paging.
    pub fn set_page_size(&self, n: usize) {
        self.lock().page_size = n.max(1);
    }

    /// Every page says `more` with the same `offset`.
    pub fn stick_paging(&self) {
        self.lock().stuck_paging = true;
    }

    /// The fixtures' user with credentials issued directly (as if linked).
    pub fn account(&self) -> ProviderAccount {
        self.lock().issuer.account(USER_ID.to_string())
    }

    /// `notify subscribe` answers `status` and subscribes nothing; every other call works.
    pub fn refuse_subscriptions(&self, status: i64) {
        self.lock().subscribe_refusal = Some(status);
    }

    /// The `(callbackurl, appli)` subscriptions made.
    pub fn subscriptions(&self) -> Vec<(String, String)> {
        self.lock().subscriptions.clone()
    }
}

/// Reads the form, counts the call under its action and applies the failure switch.
fn admit(fake: &FakeWithings, body: &Bytes) -> Result<HashMap<String, String>, Box<Response>> {
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(body).unwrap_or_default();
    let action = form.get("action").cloned().unwrap_or_default();
    let mut inner = fake.lock();
    inner.calls.count(action, form.clone());
    match inner.failure {
        Some(Failure::Status(code)) => Err(Box::new(status(code))),
        Some(Failure::Http(code)) => {
            Err(Box::new(StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY).into_response()))
        }
        None => Ok(form),
    }
}

async fn authorize(State(fake): State<FakeWithings>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = fake.lock();
    inner.calls.hit("authorize");
    inner.issuer.consent(&q)
}

async fn oauth2(State(fake): State<FakeWithings>, body: Bytes) -> Response {
    let form = match admit(&fake, &body) {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let field = |k: &str| form.get(k).map(String::as_str);
    let mut inner = fake.lock();
    let client_id = inner.issuer.client.client_id.clone();
    if field("client_id") != Some(client_id.as_str()) {
        return status(100);
    }
    match field("action") {
        Some("requesttoken") => {
            if !inner.issuer.in_form(&form) {
                return status(100);
            }
            // An unknown or used code or refresh token: Withings's "invalid token".
            if !inner.issuer.redeem(&form) {
                return status(401);
            }
            ok(inner.tokens())
        }
        Some("revoke") => {
            let (Some(nonce), Some(sig), Some(_userid)) =
                (field("nonce"), field("signature"), field("userid"))
            else {
                return status(201);
            };
            let expected = signature(&inner.issuer.client.client_secret, &["revoke", &client_id, nonce]);
            if sig != expected || !inner.nonces.remove(nonce) {
                return status(100);
            }
            inner.issuer.revoke_all();
            ok(json!({}))
        }
        _ => status(201),
    }
}

async fn signature_service(State(fake): State<FakeWithings>, body: Bytes) -> Response {
    let form = match admit(&fake, &body) {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    let mut inner = fake.lock();
    let client = inner.issuer.client.clone();
    if field("action") != "getnonce" || field("client_id") != client.client_id {
        return status(201);
    }
    let expected = signature(&client.client_secret, &["getnonce", &client.client_id, field("timestamp")]);
    if field("signature") != expected {
        return status(100);
    }
    let nonce = inner.issuer.mint("nonce");
    inner.nonces.insert(nonce.clone());
    ok(json!({"nonce": nonce}))
}

fn fixture_body(fixture: &str) -> Value {
    serde_json::from_str::<Value>(fixture).map(|v| v["body"].clone()).unwrap_or(Value::Null)
}

/// The page of `records` at `offset`, with Withings's `more` (0/1 when `numeric_more`, else a boolean) and
/// the next `offset`.
fn page(
    records: Vec<Value>,
    offset: usize,
    page_size: usize,
    numeric_more: bool,
    stuck: bool,
) -> (Vec<Value>, Value, usize) {
    if stuck {
        let more = if numeric_more { json!(1) } else { json!(true) };
        return (records.into_iter().take(1).collect(), more, 1);
    }
    let to = (offset + page_size).min(records.len());
    let more = to < records.len();
    let slice = records.get(offset..to).map(<[Value]>::to_vec).unwrap_or_default();
    let more = if numeric_more { json!(i32::from(more)) } else { json!(more) };
    (slice, more, if to < records.len() { to } else { 0 })
}

fn number(form: &HashMap<String, String>, k: &str) -> Option<i64> {
    form.get(k).and_then(|v| v.parse().ok())
}

async fn data(State(fake): State<FakeWithings>, headers: HeaderMap, body: Bytes) -> Response {
    let form = match admit(&fake, &body) {
        Ok(form) => form,
        Err(refused) => return *refused,
    };
    let (page_size, stuck) = {
        let inner = fake.lock();
        if !inner.issuer.admits(&headers) {
            // Withings reports an invalid or expired token in the body, with HTTP 200.
            return status(401);
        }
        (inner.page_size, inner.stuck_paging)
    };
    let offset = number(&form, "offset").unwrap_or(0).max(0) as usize;
    let ymd = |r: &Value| {
        let d = r["date"].as_str().unwrap_or_default();
        form.get("startdateymd").is_none_or(|s| d >= s.as_str())
            && form.get("enddateymd").is_none_or(|e| d <= e.as_str())
    };
    match form.get("action").map(String::as_str) {
        Some("getmeas") => {
            let all = fixture_body(GETMEAS);
            let types: Vec<i64> = form
                .get("meastypes")
                .or(form.get("meastype"))
                .map(|t| t.split(',').filter_map(|x| x.trim().parse().ok()).collect())
                .unwrap_or_default();
            let (from, to) = (number(&form, "startdate"), number(&form, "enddate"));
            let category = number(&form, "category");
            let groups: Vec<Value> = all["measuregrps"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|g| {
                    let date = g["date"].as_i64().unwrap_or_default();
                    from.is_none_or(|f| date >= f)
                        && to.is_none_or(|t| date <= t)
                        && category.is_none_or(|c| g["category"].as_i64() == Some(c))
                })
                .filter_map(|mut g| {
                    if !types.is_empty() {
                        let kept: Vec<Value> = g["measures"]
                            .as_array()
                            .cloned()
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|m| m["type"].as_i64().is_some_and(|t| types.contains(&t)))
                            .collect();
                        if kept.is_empty() {
                            return None;
                        }
                        g["measures"] = Value::Array(kept);
                    }
                    Some(g)
                })
                .collect();
            let (groups, more, next) = page(groups, offset, page_size, true, stuck);
            ok(json!({"updatetime": all["updatetime"], "timezone": all["timezone"], "measuregrps": groups,
                "more": more, "offset": next}))
        }
        Some(action @ ("getactivity" | "getworkouts" | "getsummary")) => {
            let (fixture, key) = match action {
                "getactivity" => (GETACTIVITY, "activities"),
                "getworkouts" => (GETWORKOUTS, "series"),
                _ => (SLEEP_SUMMARY, "series"),
            };
            let all = fixture_body(fixture);
            let records: Vec<Value> =
                all[key].as_array().cloned().unwrap_or_default().into_iter().filter(ymd).collect();
            let (records, more, next) = page(records, offset, page_size, false, stuck);
            let mut body = json!({"more": more, "offset": next});
            body[key] = Value::Array(records);
            ok(body)
        }
        Some("getintradayactivity") => {
            let (Some(from), Some(to)) = (number(&form, "startdate"), number(&form, "enddate")) else {
                return status(201);
            };
            // Withings answers only the first 24 hours of a longer span.
            let to = to.min(from + 86_400);
            let fields: Vec<String> = form
                .get("data_fields")
                .map(|f| f.split(',').map(str::to_owned).collect())
                .unwrap_or_default();
            let all = fixture_body(GETINTRADAY);
            let mut series = serde_json::Map::new();
            for (at, sample) in all["series"].as_object().cloned().unwrap_or_default() {
                let secs: i64 = at.parse().unwrap_or(i64::MIN);
                if secs < from || secs > to {
                    continue;
                }
                let mut sample = sample;
                if let (false, Some(map)) = (fields.is_empty(), sample.as_object_mut()) {
                    // The device fields come with every sample; the data only as asked.
                    map.retain(|k, _| INTRADAY_DEVICE_FIELDS.contains(&k.as_str()) || fields.contains(k));
                    if !map.keys().any(|k| fields.contains(k)) {
                        continue;
                    }
                }
                series.insert(at, sample);
            }
            ok(json!({"series": Value::Object(series)}))
        }
        Some("subscribe") => {
            let (Some(url), Some(appli)) = (form.get("callbackurl"), form.get("appli")) else {
                return status(201);
            };
            if let Some(code) = fake.lock().subscribe_refusal {
                return status(code);
            }
            fake.lock().subscriptions.push((url.clone(), appli.clone()));
            ok(json!({}))
        }
        _ => status(201),
    }
}
