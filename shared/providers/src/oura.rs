//! Oura API v2 (https://api.ouraring.com): OAuth 2 with the client in the body and single-use
//! refresh tokens, `/v2/usercollection/*` pages by `next_token`, webhook subscriptions with a
//! GET handshake and HMAC-SHA256 signatures. Facts: Oura's published documents, listed under
//! "Sources" in the Oura section of `docs/PROVIDERS.md` (Oura's OpenAPI documents: repository
//! `api-evangelist/oura`, `openapi/_original/oura-oura-ring-api-openapi.yml`, and
//! `api-evangelist/oura-ring`, `openapi/_original/oura-api-openapi.json`); what is mapped to
//! what: that section too.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use wearlab_domain::common::signing::{constant_time_eq, hmac_sha256};
use wearlab_domain::ports::providers::{
    CodeExchange, DateRange, FetchedResource, NoLimit, OauthClient, ProviderAccount, ProviderCredentials,
    ProviderError, PushNotice, PushOutcome, PushRequest, RateWindow, RequestGate,
};
use wearlab_models::Resource;

use crate::adapter::Adapter;
use crate::config::{AppConfig, Endpoints};
use crate::description::{Api, ProviderDescription, Refresh};
use crate::http;
use crate::oauth::{self, ClientAuth};

pub const SLUG: &str = "oura";

/// What Wearlab asks for: the profile (`personal`, for the user id, age and height), daily
/// summaries, heart rate, workouts and SpO2. Not `email`: Wearlab keeps no contact data.
pub const SCOPES: &str = "personal daily heartrate workout spo2Daily";

/// Oura's FAQ: 5000 requests per 5 minutes (the layer per application).
const LIMITS: &[RateWindow] = &[RateWindow { requests: 5000, window_secs: 300 }];

/// The catalog resources this adapter fills (the catalog's other Oura resources come back
/// empty: Oura publishes no series for them).
const RESOURCES: &[Resource] = &[
    Resource::Profile,
    Resource::Activity,
    Resource::Sleep,
    Resource::Workouts,
    Resource::Heartrate,
    Resource::Hrv,
    Resource::RespiratoryRate,
    Resource::BloodOxygen,
    Resource::BodyTemperatureDelta,
];

/// Oura answers at most 30 days of heart rate per request.
const HEARTRATE_WINDOW_DAYS: u64 = 30;
/// A provider that keeps answering `next_token` is a bug, not data: stop there.
const MAX_PAGES: usize = 1000;
/// A signed push older (or newer) than this is refused: a replay, or a clock far off.
pub const PUSH_TOLERANCE_SECS: i64 = 300;
/// Each character of `sleep_phase_5_min` is five minutes.
const PHASE_SECS: i64 = 300;

/// Oura as its published documents describe it: the client in the token form's body, single-use
/// (rotating) refresh tokens.
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: LIMITS,
    user_limits: &[],
    authorize_url: "https://cloud.ouraring.com/oauth/authorize",
    token_url: "https://api.ouraring.com/oauth/token",
    api_url: "https://api.ouraring.com",
    scopes: SCOPES,
    authorize_extra: &[],
    client_auth: ClientAuth::Body,
    refresh: Refresh::Token { extra: &[] },
};

pub struct Oura {
    api: Api,
}

impl Oura {
    /// The real hosts.
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
    }

    pub fn new(config: AppConfig) -> Self {
        Self { api: Api::new(&DESCRIPTION, config) }
    }

    pub fn config(&self) -> &AppConfig {
        &self.api.config
    }

    /// Oura's revoke endpoint sits beside its token endpoint (`/oauth/revoke`).
    fn revoke_url(&self) -> String {
        self.api.config.endpoints.next_to_token("revoke")
    }

    /// Revokes one access token. Oura refuses a token it no longer honours (expired, or
    /// revoked already) with 400 or 401: that is `AccessTokenRefused`, so the caller refreshes
    /// and revokes the fresh one.
    async fn revoke_token(&self, credentials: &ProviderCredentials) -> Result<(), ProviderError> {
        let request = self
            .api
            .http
            .post(self.revoke_url())
            .query(&[("access_token", credentials.access_token.expose())]);
        let answer = http::send(SLUG, request).await?;
        match answer.status.as_u16() {
            400 | 401 => Err(ProviderError::AccessTokenRefused),
            _ => http::check(SLUG, answer).map(|_| ()),
        }
    }

    /// A webhook-subscription call: authenticated by the app's credentials in headers.
    async fn subscription_call(
        &self,
        client: &OauthClient,
        request: reqwest::RequestBuilder,
    ) -> Result<http::Answer, ProviderError> {
        let request = request
            .header("x-client-id", &client.client_id)
            .header("x-client-secret", client.client_secret.expose());
        http::check(SLUG, http::send(SLUG, request).await?)
    }

    /// Every document of a collection, `next_token` followed to the end.
    async fn collection(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        kind: &str,
        query: Vec<(&str, String)>,
    ) -> Result<Vec<Value>, ProviderError> {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            data: Vec<Value>,
            #[serde(default)]
            next_token: Option<String>,
        }
        let path = format!("/v2/usercollection/{kind}");
        let mut out = Vec::new();
        let mut next: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut q = query.clone();
            if let Some(t) = &next {
                q.push(("next_token", t.clone()));
            }
            let page: Page = serde_json::from_value(self.api.get_json(gate, token, &path, &q).await?)
                .map_err(|e| ProviderError::Api(format!("{SLUG} answered an unreadable page: {e}")))?;
            out.extend(page.data);
            match page.next_token.filter(|t| !t.is_empty()) {
                Some(t) => next = Some(t),
                None => return Ok(out),
            }
        }
        Err(ProviderError::Api(format!("{SLUG} kept paging {kind} past {MAX_PAGES} pages")))
    }

    /// Day documents of `range`. Oura reads the dates in the user's zone and its end bound's
    /// inclusiveness is not documented: ask one day more and keep the range's days.
    async fn days(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        kind: &str,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        let end = range.end + Duration::days(1);
        let docs = self
            .collection(
                gate,
                token,
                kind,
                vec![("start_date", range.start.to_string()), ("end_date", end.to_string())],
            )
            .await?;
        Ok(docs.into_iter().filter(|d| day(d).is_some_and(|d| d >= range.start && d <= range.end)).collect())
    }

    async fn personal_info(&self, gate: &dyn RequestGate, token: &str) -> Result<Value, ProviderError> {
        self.api.get_json(gate, token, "/v2/usercollection/personal_info", &[]).await
    }

    async fn heartrate(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut out = Vec::new();
        let mut start = range.start;
        while start <= range.end {
            let end =
                (start + chrono::Days::new(HEARTRATE_WINDOW_DAYS)).min(range.end + chrono::Days::new(1));
            let rows = self
                .collection(
                    gate,
                    token,
                    "heartrate",
                    vec![("start_datetime", midnight(start)), ("end_datetime", midnight(end))],
                )
                .await?;
            out.extend(rows.iter().filter_map(|r| {
                Some(json!({"timestamp": r.get("timestamp")?.as_str()?, "value": r.get("bpm")?.as_f64()?,
                    "unit": "bpm"}))
            }));
            start = end;
        }
        Ok(out)
    }
}

fn midnight(d: NaiveDate) -> String {
    format!("{d}T00:00:00Z")
}

fn day(doc: &Value) -> Option<NaiveDate> {
    doc.get("day")?.as_str()?.parse().ok()
}

fn num(doc: &Value, k: &str) -> Option<f64> {
    doc.get(k).and_then(Value::as_f64)
}

/// A day document's value without a time of its own is placed at noon UTC, so it lands on its
/// own day whatever the user's zone (within twelve hours of UTC).
fn noon(d: NaiveDate) -> String {
    format!("{d}T12:00:00Z")
}

/// Oura's sleep periods (`PublicSleepType`, Oura's OpenAPI document) that are sleeps: not `deleted`
/// ("deleted sleep by user") nor `rest` ("Falsely detected sleep / nap, rejected in confirm prompt
/// by user").
fn is_sleep(d: &Value) -> bool {
    !matches!(d.get("type").and_then(Value::as_str), Some("deleted" | "rest"))
}

/// The sleep type (Wearlab's, the upstream API's) of an Oura period: `long_sleep` ("sleep that is
/// long enough (>3h) to automatically contribute to daily scores") is one; `sleep` and
/// `late_nap` ("user confirmed sleep / nap, min 15 minutes", at most 3 hours or ended after
/// 6 pm) are acknowledged naps. A type Oura adds later names none: the pipeline types it by
/// its length.
fn sleep_type(d: &Value) -> Option<&'static str> {
    match d.get("type").and_then(Value::as_str)? {
        "long_sleep" => Some("long_sleep"),
        "sleep" | "late_nap" => Some("acknowledged_nap"),
        _ => None,
    }
}

/// Oura's main sleep period of each day (`long_sleep`, else the longest), whose nightly series
/// (HRV, breathing rate) are read.
fn main_sleeps(docs: Vec<Value>) -> Vec<Value> {
    let mut by_day: BTreeMap<NaiveDate, Value> = BTreeMap::new();
    let rank = |d: &Value| {
        let kind = d.get("type").and_then(Value::as_str).unwrap_or("");
        (kind == "long_sleep", num(d, "total_sleep_duration").unwrap_or(0.0) as i64)
    };
    for d in docs.into_iter().filter(is_sleep) {
        let Some(day) = day(&d) else { continue };
        match by_day.get(&day) {
            Some(kept) if rank(kept) >= rank(&d) => {}
            _ => {
                by_day.insert(day, d);
            }
        }
    }
    by_day.into_values().collect()
}

/// `sleep_phase_5_min` ('1' deep, '2' light, '3' REM, '4' awake) as stages of runs.
fn stages(phases: &str) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut run: Option<(char, i64, i64)> = None;
    for (i, c) in phases.chars().enumerate() {
        let (a, b) = (i as i64 * PHASE_SECS, (i as i64 + 1) * PHASE_SECS);
        match &mut run {
            Some((rc, _, end)) if *rc == c => *end = b,
            _ => {
                if let Some(r) = run.take() {
                    out.push(stage(r));
                }
                run = Some((c, a, b));
            }
        }
    }
    out.extend(run.map(stage));
    out
}

fn stage((c, a, b): (char, i64, i64)) -> Value {
    let name = match c {
        '1' => "deep",
        '2' => "light",
        '3' => "rem",
        '4' => "awake",
        _ => "unknown",
    };
    json!({"stage": name, "start_offset_s": a, "end_offset_s": b})
}

fn sleep_record(d: &Value) -> Option<Value> {
    let mut r = json!({
        "date": day(d)?.to_string(),
        "bedtime_start": d.get("bedtime_start")?.as_str()?,
        "bedtime_stop": d.get("bedtime_end")?.as_str()?,
        "type": sleep_type(d),
        "deep_s": num(d, "deep_sleep_duration"),
        "rem_s": num(d, "rem_sleep_duration"),
        "light_s": num(d, "light_sleep_duration"),
        "awake_s": num(d, "awake_time"),
        "duration_s": num(d, "time_in_bed"),
        "efficiency": num(d, "efficiency"),
        "hr_average": num(d, "average_heart_rate"),
    });
    if let Some(p) = d.get("sleep_phase_5_min").and_then(Value::as_str) {
        r["stages"] = Value::Array(stages(p));
    }
    Some(r)
}

/// A sampled series of a sleep period (`{interval (s), items[], timestamp}`) as rows; gaps
/// (`null` items) are skipped.
fn samples(series: &Value, unit: &str) -> Vec<Value> {
    let (Some(start), Some(interval), Some(items)) = (
        series.get("timestamp").and_then(Value::as_str).and_then(|s| DateTime::parse_from_rfc3339(s).ok()),
        num(series, "interval"),
        series.get("items").and_then(Value::as_array),
    ) else {
        return vec![];
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let t = start + Duration::milliseconds((interval * 1000.0) as i64 * i as i64);
            Some(json!({"timestamp": t.with_timezone(&Utc).to_rfc3339(), "value": v.as_f64()?, "unit": unit}))
        })
        .collect()
}

/// A daily activity document as the day's summary. Not its `equivalent_walking_distance`: Oura
/// defines it as "Equivalent walking distance (in meters) of energy expenditure" (Oura's OpenAPI
/// document `PublicDailyActivity`), a measure of energy, not a distance travelled; the day has no
/// `distance_m`.
fn activity_record(d: &Value) -> Option<Value> {
    Some(json!({
        "date": day(d)?.to_string(),
        "steps": num(d, "steps"),
        "calories_active": num(d, "active_calories"),
        "calories_total": num(d, "total_calories"),
        "low_minutes": num(d, "low_activity_time").map(|s| s / 60.0),
        "high_minutes": num(d, "high_activity_time").map(|s| s / 60.0),
    }))
}

fn workout_record(d: &Value) -> Option<Value> {
    Some(json!({
        "date": day(d)?.to_string(),
        "time_start": d.get("start_datetime")?.as_str()?,
        "time_end": d.get("end_datetime")?.as_str()?,
        "sport": d.get("activity").and_then(Value::as_str).unwrap_or("other"),
        "calories": num(d, "calories"),
        "distance_m": num(d, "distance"),
    }))
}

/// `personal_info` as the profile. Oura states no units: a height under 3 is read as metres
/// (Oura's examples), else centimetres; the birth year is the current year less `age`.
fn profile_record(d: &Value, today: NaiveDate) -> Value {
    let height = num(d, "height").filter(|h| *h > 0.0);
    json!({
        "height_m": height.map(|h| if h < 3.0 { h } else { h / 100.0 }),
        "birth_year": d.get("age").and_then(Value::as_i64).map(|a| i64::from(today.year()) - a),
    })
}

/// The Oura data types Wearlab subscribes to (those [`resources_of`] maps), and the events:
/// deletions are not modelled.
const PUSH_DATA_TYPES: [&str; 5] = ["sleep", "daily_activity", "workout", "daily_spo2", "daily_readiness"];
const PUSH_EVENT_TYPES: [&str; 2] = ["create", "update"];
/// A subscription expiring sooner is renewed (Oura's last about 90 days).
const RENEW_BEFORE_DAYS: i64 = 30;

#[derive(Debug, Deserialize)]
struct Subscription {
    id: String,
    callback_url: String,
    event_type: String,
    data_type: String,
    #[serde(default)]
    expiration_time: Option<DateTime<chrono::FixedOffset>>,
}

/// The catalog resources a notice of `data_type` changes.
fn resources_of(data_type: &str) -> &'static [Resource] {
    match data_type {
        "sleep" => &[Resource::Sleep, Resource::Hrv, Resource::RespiratoryRate],
        "daily_activity" => &[Resource::Activity],
        "workout" => &[Resource::Workouts],
        "daily_spo2" => &[Resource::BloodOxygen],
        "daily_readiness" => &[Resource::BodyTemperatureDelta],
        _ => &[],
    }
}

/// Epoch values at or above this are milliseconds: as seconds it would be the year 5138, as
/// milliseconds it is March 1973, long before any Oura push.
const MILLIS_FROM: i64 = 100_000_000_000;

/// The push's `x-oura-timestamp` as epoch seconds. Oura's document does not say whether the
/// header counts seconds or milliseconds (its example code and third-party receivers differ), so
/// both are read; the signature is checked over the header as sent either way.
fn push_time_secs(header: &str) -> Option<i64> {
    let raw = header.trim().parse::<i64>().ok()?;
    Some(if raw.abs() >= MILLIS_FROM { raw / 1000 } else { raw })
}

/// Checks Oura's signature: upper-case hex HMAC-SHA256 with the client secret over the
/// timestamp header followed by the raw body; compared case-insensitively in constant time.
pub fn signature_ok(secret: &str, timestamp: &str, body: &[u8], signature: &str) -> bool {
    let mut message = timestamp.as_bytes().to_vec();
    message.extend_from_slice(body);
    let expected = hex::encode(hmac_sha256(secret.as_bytes(), &message));
    constant_time_eq(expected.as_bytes(), signature.trim().to_ascii_lowercase().as_bytes())
}

/// The signature Oura would send (for the fake and tests).
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let mut message = timestamp.as_bytes().to_vec();
    message.extend_from_slice(body);
    hex::encode_upper(hmac_sha256(secret.as_bytes(), &message))
}

#[async_trait]
impl Adapter for Oura {
    fn api(&self) -> &Api {
        &self.api
    }

    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let credentials = self.api.exchange(exchange).await?;
        let info = self.personal_info(&NoLimit, credentials.access_token.expose()).await?;
        let id = info
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ProviderError::Api(format!("{SLUG} personal_info has no id")))?;
        Ok(ProviderAccount { external_user_id: id.to_owned(), credentials })
    }

    async fn fetch(
        &self,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        let token = account.credentials.access_token.expose();
        let records = match resource {
            Resource::Profile => {
                vec![profile_record(&self.personal_info(gate, token).await?, Utc::now().date_naive())]
            }
            Resource::Activity => self
                .days(gate, token, "daily_activity", range)
                .await?
                .iter()
                .filter_map(activity_record)
                .collect(),
            // Every sleep period, naps too: each is its own sleep summary.
            Resource::Sleep => self
                .days(gate, token, "sleep", range)
                .await?
                .iter()
                .filter(|d| is_sleep(d))
                .filter_map(sleep_record)
                .collect(),
            Resource::Hrv => main_sleeps(self.days(gate, token, "sleep", range).await?)
                .iter()
                .flat_map(|d| d.get("hrv").map(|s| samples(s, "ms")).unwrap_or_default())
                .collect(),
            Resource::RespiratoryRate => main_sleeps(self.days(gate, token, "sleep", range).await?)
                .iter()
                .filter_map(|d| {
                    Some(json!({"timestamp": d.get("bedtime_start")?.as_str()?,
                        "value": num(d, "average_breath")?, "unit": "bpm"}))
                })
                .collect(),
            Resource::Workouts => {
                self.days(gate, token, "workout", range).await?.iter().filter_map(workout_record).collect()
            }
            Resource::Heartrate => self.heartrate(gate, token, range).await?,
            Resource::BloodOxygen => self
                .days(gate, token, "daily_spo2", range)
                .await?
                .iter()
                .filter_map(|d| {
                    let avg = d.get("spo2_percentage")?.get("average")?.as_f64()?;
                    Some(json!({"timestamp": noon(day(d)?), "value": avg, "unit": "%"}))
                })
                .collect(),
            Resource::BodyTemperatureDelta => self
                .days(gate, token, "daily_readiness", range)
                .await?
                .iter()
                .filter_map(|d| {
                    let v = num(d, "temperature_deviation")?;
                    Some(json!({"timestamp": noon(day(d)?), "value": v, "unit": "°C"}))
                })
                .collect(),
            // The catalog's other Oura resources (sleep_stream, stress_level, steps,
            // calories_active, connection) have no Oura series: nothing, not an error.
            _ => vec![],
        };
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    /// `POST /oauth/revoke?access_token=`, an expired access token refreshed first
    /// ([`oauth::revoke_refreshing`]): revoking a dead access token alone would leave the grant
    /// (its refresh token) alive.
    async fn revoke(&self, client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError> {
        oauth::revoke_refreshing(
            &account.credentials,
            |c| async move { self.revoke_token(&c).await },
            || self.refresh(client, &account.credentials),
        )
        .await
    }

    async fn ensure_subscriptions(
        &self,
        client: &OauthClient,
        callback_url: &str,
        verification_token: Option<&str>,
    ) -> Result<usize, ProviderError> {
        let Some(token) = verification_token else {
            return Err(ProviderError::Unsupported(format!(
                "{SLUG} needs a push verification token to subscribe"
            )));
        };
        let base = format!("{}/v2/webhook/subscription", self.api.config.endpoints.api);
        let existing: Vec<Subscription> =
            self.subscription_call(client, self.api.http.get(&base)).await?.json(SLUG)?;
        let renew_before = Utc::now() + Duration::days(RENEW_BEFORE_DAYS);
        let mut changed = 0;
        for data_type in PUSH_DATA_TYPES {
            for event_type in PUSH_EVENT_TYPES {
                let found = existing.iter().find(|s| {
                    s.callback_url == callback_url && s.data_type == data_type && s.event_type == event_type
                });
                match found {
                    Some(s) if s.expiration_time.is_some_and(|t| t > renew_before) => continue,
                    Some(s) => {
                        let url = format!("{base}/renew/{}", s.id);
                        self.subscription_call(client, self.api.http.put(url)).await?;
                    }
                    None => {
                        let body = json!({"callback_url": callback_url, "verification_token": token,
                            "event_type": event_type, "data_type": data_type});
                        let request = self
                            .api
                            .http
                            .post(&base)
                            .header("content-type", "application/json")
                            .body(body.to_string());
                        self.subscription_call(client, request).await?;
                    }
                }
                changed += 1;
            }
        }
        Ok(changed)
    }

    fn push(
        &self,
        client: &OauthClient,
        verification_token: Option<&str>,
        request: &PushRequest,
    ) -> PushOutcome {
        if request.method.eq_ignore_ascii_case("GET") {
            let (Some(expected), Some(given), Some(challenge)) =
                (verification_token, request.query("verification_token"), request.query("challenge"))
            else {
                return PushOutcome::Refused("handshake without verification token or challenge".into());
            };
            if !constant_time_eq(expected.as_bytes(), given.as_bytes()) {
                return PushOutcome::Refused("handshake with a wrong verification token".into());
            }
            return PushOutcome::Handshake { status: 200, body: Some(json!({"challenge": challenge})) };
        }
        let (Some(signature), Some(timestamp)) =
            (request.header("x-oura-signature"), request.header("x-oura-timestamp"))
        else {
            return PushOutcome::Refused("unsigned push".into());
        };
        let Some(at) = push_time_secs(timestamp) else {
            return PushOutcome::Refused("unreadable push timestamp".into());
        };
        if (Utc::now().timestamp() - at).abs() > PUSH_TOLERANCE_SECS {
            return PushOutcome::Refused("stale push timestamp".into());
        }
        if !signature_ok(client.client_secret.expose(), timestamp.trim(), &request.body, signature) {
            return PushOutcome::Refused("bad push signature".into());
        }
        #[derive(Deserialize)]
        struct Notice {
            data_type: String,
            user_id: String,
            #[serde(default)]
            event_time: Option<DateTime<chrono::FixedOffset>>,
        }
        let Ok(n) = serde_json::from_slice::<Notice>(&request.body) else {
            return PushOutcome::Refused("unreadable push body".into());
        };
        let resources = resources_of(&n.data_type).to_vec();
        if resources.is_empty() {
            return PushOutcome::Notices(vec![]);
        }
        // The notice names the document, not its day: the day of the event and the one before
        // (a night's sleep belongs to the day it ends).
        let range = n.event_time.map(|t| {
            let end = t.date_naive();
            DateRange { start: end - Duration::days(1), end }
        });
        PushOutcome::Notices(vec![PushNotice { external_user_id: n.user_id, resources, range }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_become_runs_of_stages() {
        let s = stages("11224");
        assert_eq!(s.len(), 3);
        assert_eq!(s[0], json!({"stage": "deep", "start_offset_s": 0, "end_offset_s": 600}));
        assert_eq!(s[1], json!({"stage": "light", "start_offset_s": 600, "end_offset_s": 1200}));
        assert_eq!(s[2], json!({"stage": "awake", "start_offset_s": 1200, "end_offset_s": 1500}));
    }

    #[test]
    fn signatures_compare_case_insensitively() {
        let sig = sign("secret", "1700000000", b"{}");
        assert!(signature_ok("secret", "1700000000", b"{}", &sig));
        assert!(signature_ok("secret", "1700000000", b"{}", &sig.to_ascii_lowercase()));
        assert!(!signature_ok("secret", "1700000001", b"{}", &sig));
        assert!(!signature_ok("other", "1700000000", b"{}", &sig));
    }

    #[test]
    fn sleep_periods_are_typed_as_oura_defines_them() {
        let doc = |kind: &str| json!({"day": "2026-11-20", "type": kind});
        assert_eq!(sleep_type(&doc("long_sleep")), Some("long_sleep"));
        assert_eq!(sleep_type(&doc("sleep")), Some("acknowledged_nap"), "user confirmed, at most 3 h");
        assert_eq!(sleep_type(&doc("late_nap")), Some("acknowledged_nap"));
        assert_eq!(sleep_type(&doc("something_new")), None, "typed by its length in the pipeline");
        assert!(is_sleep(&doc("late_nap")) && is_sleep(&doc("something_new")));
        assert!(!is_sleep(&doc("deleted")) && !is_sleep(&doc("rest")), "deleted, or rejected by the user");
    }

    #[test]
    fn the_main_sleep_of_a_day_wins_over_naps() {
        let docs = vec![
            json!({"day": "2026-11-20", "type": "late_nap", "total_sleep_duration": 1800}),
            json!({"day": "2026-11-20", "type": "long_sleep", "total_sleep_duration": 25000}),
            json!({"day": "2026-11-21", "type": "deleted", "total_sleep_duration": 25000}),
        ];
        let kept = main_sleeps(docs);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0]["type"], "long_sleep");
    }
}
