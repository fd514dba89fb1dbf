//! Polar AccessLink v3 (https://www.polaraccesslink.com), catalog slug `polar`: OAuth 2 with the
//! client by HTTP Basic, a ten-year access token and no refresh token, a user registration call
//! after the consent, the non-transactional data endpoints (the transactional ones are
//! deprecated), one webhook per client signed with hex HMAC-SHA256. Facts:
//! Polar's published documents, listed under "Sources" in the Polar section of
//! `docs/PROVIDERS.md`; shapes from Polar's AccessLink API v3 OpenAPI document (repository
//! `api-evangelist/polar`, `openapi/_original/polar-accesslink-api-openapi.yml`) and its webhooks
//! AsyncAPI document (`openapi/polar-accesslink-webhooks-asyncapi.yml`).
//!
//! What is mapped (units: seconds, kcal, metres, bpm, ms):
//! - `workouts`: `/v3/exercises` (Polar keeps the last 30 days there); local start time plus
//!   `start_time_utc_offset` (minutes) as UTC, the ISO 8601 `duration` to the end time, kcal,
//!   metres, average heart rate.
//! - `activity`: `/v3/users/activities?from&to`, steps, kcal (total and active), distance from
//!   steps (m); ranges split into 28-day windows, nothing asked older than 365 days. Its
//!   `start_time` is UTC without a zone: the day is the local one in the user's time zone.
//! - `sleep`: `/v3/users/sleep` (last 28 days), stage seconds, interruptions as awake time, the
//!   hypnogram as stages.
//! - `heartrate`: `/v3/users/continuous-heart-rate?from&to` (5-minute samples). `sample_time` is
//!   the device's local clock without an offset: each day's samples are anchored with the UTC
//!   offset of the user's sleep on that day (or the nearest day with a sleep, as a sleep's times
//!   carry the device's offset), else read as UTC.
//! - `hrv`: `/v3/users/nightly-recharge` (last 28 days), the night's RMSSD average (ms), stamped
//!   at the end of that date's sleep, else at noon UTC of the date.
//! - `profile` and `body`: `/v3/users/physical-info`, height (cm), birth year, weight (kg);
//!   Polar keeps only the current weight, dated today (never written into past days).

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Datelike, Duration, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use wearlab_domain::common::signing::{hex_hmac_matches, hex_hmac_sha256};
use wearlab_domain::ports::providers::{
    CodeExchange, DateRange, FetchedResource, OauthClient, ProviderAccount, ProviderError, PushNotice,
    PushOutcome, PushRequest, RateWindow, RequestGate,
};
use wearlab_models::Resource;

use crate::adapter::{Adapter, sport_slug};
use crate::config::{AppConfig, Endpoints};
use crate::description::{Api, ProviderDescription, Refresh};
use crate::http;
use crate::oauth::{ClientAuth, TokenAnswer};
use crate::whoop::{etc_zone, in_range, rfc3339, with_zone};

pub const SLUG: &str = "polar";

/// Polar's single scope (Polar's OpenAPI document `securitySchemes.OAuth2`).
pub const SCOPES: &str = "accesslink.read_all";

/// The header a webhook delivery is signed in (webhooks AsyncAPI `WebhookHeaders`).
pub const SIGNATURE_HEADER: &str = "polar-webhook-signature";

/// The catalog resources `fetch` fills.
const RESOURCES: &[Resource] = &[
    Resource::Profile,
    Resource::Body,
    Resource::Activity,
    Resource::Sleep,
    Resource::Workouts,
    Resource::Heartrate,
    Resource::Hrv,
];

/// Polar's published limits are 500 requests per 15 minutes and 5,000 per 24 hours, each grown
/// by 20 and 100 per registered user (the Open Wearables project's Polar page,
/// github.com/the-momentum/open-wearables, `docs/providers/polar-api-integration.mdx`; Polar's
/// own page was not found; `docs/PROVIDERS.md`, Polar, "Sources"). Only the
/// base figures are enforced: always within the real limit, whatever the number of users.
const LIMITS: &[RateWindow] =
    &[RateWindow { requests: 500, window_secs: 900 }, RateWindow { requests: 5_000, window_secs: 86_400 }];

/// The longest `from`..`to` range Polar answers (Polar's OpenAPI document
/// `listActivitiesWithoutTransaction`: "the maximum range between from and to is 28 days").
pub const MAX_RANGE_DAYS: i64 = 28;
/// How far back `from` may be (same source: "cannot be older than 365 days from today").
pub const MAX_DAYS_BACK: i64 = 365;
/// The days the lists without a range cover: sleep and Nightly Recharge the last 28
/// (Polar's OpenAPI document `listNights`, `listNightlyRecharge`), exercises the last 30
/// (`listExercisesWithoutTransaction`).
const NIGHTS_LIST_DAYS: i64 = 28;
const EXERCISES_LIST_DAYS: i64 = 30;

/// The events Wearlab's webhook subscribes to: those whose resources `fetch` fills.
pub const WEBHOOK_EVENTS: [&str; 5] =
    ["EXERCISE", "SLEEP", "CONTINUOUS_HEART_RATE", "ACTIVITY_SUMMARY", "PHYSICAL_INFORMATION"];

/// Polar as its published documents describe it: the client by HTTP Basic at the token
/// endpoint, and no refresh token (an access token lasts about ten years; a refused one cannot be
/// renewed, and the user links again).
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: LIMITS,
    user_limits: &[],
    authorize_url: "https://flow.polar.com/oauth2/authorization",
    token_url: "https://polarremote.com/v2/oauth2/token",
    api_url: "https://www.polaraccesslink.com",
    scopes: SCOPES,
    authorize_extra: &[],
    client_auth: ClientAuth::Basic,
    refresh: Refresh::NotIssued,
};

pub struct Polar {
    api: Api,
}

impl Polar {
    /// Polar's real hosts: the consent page and the API as in Polar's OpenAPI document, the token
    /// endpoint as https://qiita.com/yaskitie/items/e658d4c8e6fbcba0ae18 and the Open Wearables
    /// project (github.com/the-momentum/open-wearables,
    /// `backend/app/services/providers/polar/oauth.py`) call it.
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
    }

    pub fn new(config: AppConfig) -> Self {
        Self { api: Api::new(&DESCRIPTION, config) }
    }

    /// A data call; a 204 ("no content when there is no data") is `null`.
    async fn get(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Value, ProviderError> {
        let answer = self.api.get(gate, token, path, query).await?;
        if answer.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        answer.json(SLUG)
    }

    /// `POST /v3/users` (Polar's OpenAPI document `registerUser`): required before any data is
    /// visible. The member id is the Polar user id itself, so a relink names the same member; 409
    /// (already registered) is success, 403 (mandatory consents not accepted) fails the link.
    async fn register(&self, token: &str, user_id: &str) -> Result<(), ProviderError> {
        let body = json!({"member-id": user_id}).to_string();
        let request = self
            .api
            .http
            .post(self.api.url("/v3/users"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body);
        let answer = http::send(SLUG, request).await?;
        match answer.status.as_u16() {
            409 => Ok(()),
            403 => Err(ProviderError::CredentialError(
                "the user has not accepted Polar's mandatory consents; accept them in Polar Flow and link again"
                    .into(),
            )),
            _ => http::check(SLUG, answer).map(|_| ()),
        }
    }

    async fn nights(&self, gate: &dyn RequestGate, token: &str) -> Result<Vec<Sleep>, ProviderError> {
        #[derive(Deserialize)]
        struct Nights {
            #[serde(default)]
            nights: Vec<Sleep>,
        }
        Ok(parse::<Option<Nights>>(self.get(gate, token, "/v3/users/sleep", &[]).await?)?
            .map(|n| n.nights)
            .unwrap_or_default())
    }

    async fn physical_info(
        &self,
        gate: &dyn RequestGate,
        token: &str,
    ) -> Result<PhysicalInfo, ProviderError> {
        Ok(parse::<Option<PhysicalInfo>>(self.get(gate, token, "/v3/users/physical-info", &[]).await?)?
            .unwrap_or_default())
    }

    /// Every document of a `from`/`to` endpoint over `range`, in windows Polar accepts.
    async fn ranged(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        path: &str,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut out = Vec::new();
        for (from, to) in windows(range, Utc::now().date_naive()) {
            match self.get(gate, token, path, &[("from", from.to_string()), ("to", to.to_string())]).await? {
                Value::Array(docs) => out.extend(docs),
                Value::Null => {}
                doc => out.push(doc),
            }
        }
        Ok(out)
    }

    async fn heartrate(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        let docs = self.ranged(gate, token, "/v3/users/continuous-heart-rate", range).await?;
        if docs.is_empty() {
            return Ok(vec![]);
        }
        let nights = self.nights(gate, token).await?;
        let offsets: BTreeMap<NaiveDate, FixedOffset> =
            nights.iter().filter_map(|s| Some((s.date?, *s.sleep_start_time?.offset()))).collect();
        let mut rows = Vec::new();
        for doc in docs {
            let day: DayHeartRate = parse(doc)?;
            let Some(date) = day.date.filter(|d| in_range(range, *d)) else { continue };
            let offset = nearest(&offsets, date);
            for s in day.heart_rate_samples {
                let Some(at) = s.sample_time.and_then(|t| NaiveTime::parse_from_str(&t, "%H:%M:%S").ok())
                else {
                    continue;
                };
                let (Some(bpm), Some(at)) = (s.heart_rate, anchored(date.and_time(at), offset)) else {
                    continue;
                };
                rows.push(with_zone(
                    json!({"timestamp": rfc3339(at), "value": bpm, "unit": "bpm"}),
                    offset.and_then(etc_zone),
                ));
            }
        }
        Ok(rows)
    }

    async fn hrv(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        #[derive(Deserialize)]
        struct Recharges {
            #[serde(default)]
            recharges: Vec<Recharge>,
        }
        let recharges =
            parse::<Option<Recharges>>(self.get(gate, token, "/v3/users/nightly-recharge", &[]).await?)?
                .map(|r| r.recharges)
                .unwrap_or_default();
        if !recharges.iter().any(|r| r.date.is_some_and(|d| in_range(range, d))) {
            return Ok(vec![]);
        }
        let nights = self.nights(gate, token).await?;
        Ok(recharges
            .iter()
            .filter_map(|r| {
                let date = r.date.filter(|d| in_range(range, *d))?;
                let rmssd = r.heart_rate_variability_avg?;
                let night = nights.iter().find(|s| s.date == Some(date));
                let (at, zone) = match night.and_then(|s| s.sleep_end_time) {
                    Some(end) => (end.with_timezone(&Utc), etc_zone(*end.offset())),
                    None => (date.and_hms_opt(12, 0, 0).unwrap_or_default().and_utc(), None),
                };
                Some(with_zone(json!({"timestamp": rfc3339(at), "value": rmssd, "unit": "ms"}), zone))
            })
            .collect())
    }
}

/// Whether a list covering the last `days` days can hold anything of `range`: a history chunk
/// older than that is answered empty without a call (a day of margin for the user's zone).
fn listed(range: DateRange, days: i64) -> bool {
    range.end >= Utc::now().date_naive() - Duration::days(days + 1)
}

/// A Polar document as `T`, else `Api`.
fn parse<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, ProviderError> {
    serde_json::from_value(v)
        .map_err(|e| ProviderError::Api(format!("{SLUG} answered an unreadable body: {e}")))
}

/// `range` as `from`/`to` windows of at most [`MAX_RANGE_DAYS`] days, none starting more than
/// [`MAX_DAYS_BACK`] days before `today` (Polar refuses those with 400: older days are not there).
pub fn windows(range: DateRange, today: NaiveDate) -> Vec<(NaiveDate, NaiveDate)> {
    let mut from = range.start.max(today - Duration::days(MAX_DAYS_BACK));
    let mut out = Vec::new();
    while from <= range.end {
        let to = (from + Duration::days(MAX_RANGE_DAYS - 1)).min(range.end);
        out.push((from, to));
        from = to + Duration::days(1);
    }
    out
}

/// The offset of the day nearest to `date` that has one.
fn nearest(offsets: &BTreeMap<NaiveDate, FixedOffset>, date: NaiveDate) -> Option<FixedOffset> {
    let before = offsets.range(..=date).next_back();
    let after = offsets.range(date..).next();
    match (before, after) {
        (Some((b, ob)), Some((a, oa))) => Some(if date - *b <= *a - date { *ob } else { *oa }),
        (Some((_, o)), None) | (None, Some((_, o))) => Some(*o),
        (None, None) => None,
    }
}

/// A device-local time as UTC with `offset` (UTC without one).
fn anchored(local: NaiveDateTime, offset: Option<FixedOffset>) -> Option<DateTime<Utc>> {
    match offset {
        Some(o) => local.and_local_timezone(o).single().map(|t| t.with_timezone(&Utc)),
        None => Some(local.and_utc()),
    }
}

/// An ISO 8601 duration as Polar writes them (`PT2H44M`, `PT51M5S`, `PT1H0.5S`, `P1DT2H`):
/// seconds, rounded to whole seconds.
pub fn iso_duration_secs(s: &str) -> Option<i64> {
    let rest = s.trim().strip_prefix('P')?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    let mut total = 0.0;
    let mut read = |part: &str, units: &[(char, f64)]| -> Option<()> {
        let mut number = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                number.push(c);
            } else {
                let (_, secs) = units.iter().find(|(u, _)| *u == c)?;
                total += number.parse::<f64>().ok()? * secs;
                number.clear();
            }
        }
        number.is_empty().then_some(())
    };
    read(days, &[('D', 86_400.0), ('W', 604_800.0)])?;
    read(time, &[('H', 3_600.0), ('M', 60.0), ('S', 1.0)])?;
    Some(total.round() as i64)
}

#[derive(Debug, Default, Deserialize)]
struct PhysicalInfo {
    /// kg (Polar's OpenAPI document `physical-info.weight`).
    #[serde(default)]
    weight: Option<f64>,
    /// cm (Polar's OpenAPI document `physical-info.height`).
    #[serde(default)]
    height: Option<f64>,
    #[serde(default)]
    birthday: Option<NaiveDate>,
}

#[derive(Debug, Deserialize)]
struct Sleep {
    #[serde(default)]
    date: Option<NaiveDate>,
    #[serde(default)]
    sleep_start_time: Option<DateTime<FixedOffset>>,
    #[serde(default)]
    sleep_end_time: Option<DateTime<FixedOffset>>,
    #[serde(default)]
    light_sleep: Option<i64>,
    #[serde(default)]
    deep_sleep: Option<i64>,
    #[serde(default)]
    rem_sleep: Option<i64>,
    #[serde(default)]
    total_interruption_duration: Option<i64>,
    /// `"HH:MM"` (local) -> stage from then on: 0 wake, 1 REM, 2 lighter non-REM, 3 light non-REM,
    /// 4 deep non-REM, 5 unknown (Polar's OpenAPI document `sleep.hypnogram`).
    #[serde(default)]
    hypnogram: BTreeMap<String, i64>,
}

#[derive(Debug, Deserialize)]
struct Recharge {
    #[serde(default)]
    date: Option<NaiveDate>,
    #[serde(default)]
    heart_rate_variability_avg: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct DayHeartRate {
    #[serde(default)]
    date: Option<NaiveDate>,
    #[serde(default)]
    heart_rate_samples: Vec<HeartRateSample>,
}

#[derive(Debug, Deserialize)]
struct HeartRateSample {
    #[serde(default)]
    heart_rate: Option<f64>,
    #[serde(default)]
    sample_time: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Exercise {
    /// Local time, without offset (Polar's OpenAPI document `exerciseHashId.start_time`).
    start_time: NaiveDateTime,
    /// Minutes east of UTC.
    #[serde(default)]
    start_time_utc_offset: Option<i32>,
    #[serde(default)]
    duration: Option<String>,
    #[serde(default)]
    calories: Option<f64>,
    #[serde(default)]
    distance: Option<f64>,
    #[serde(default)]
    heart_rate: Option<HeartRate>,
    #[serde(default)]
    sport: Option<String>,
}

#[derive(Debug, Deserialize)]
struct HeartRate {
    #[serde(default)]
    average: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Activity {
    /// Polar's OpenAPI document `activity-summary-with-all-samples.start_time`: "Start time of the
    /// activity in UTC", without an offset; the summary has no local date or offset of its own.
    start_time: NaiveDateTime,
    #[serde(default)]
    steps: Option<f64>,
    #[serde(default)]
    calories: Option<f64>,
    #[serde(default)]
    active_calories: Option<f64>,
    #[serde(default)]
    distance_from_steps: Option<f64>,
}

/// Daily activity summaries, placed by their start (`time_start`, UTC): the pipeline dates each
/// by the local day of that instant in the user's time zone (Polar's record carries no zone).
/// Kept when that instant's UTC day is within a day of `range`, as the local day may be.
fn activity_records(docs: Vec<Value>, range: DateRange) -> Result<Vec<Value>, ProviderError> {
    let near = DateRange { start: range.start - Duration::days(1), end: range.end + Duration::days(1) };
    let mut out = Vec::new();
    for doc in docs {
        let a: Activity = parse(doc)?;
        let start = a.start_time.and_utc();
        if in_range(near, start.date_naive()) {
            out.push(json!({
                "time_start": rfc3339(start),
                "steps": a.steps,
                "calories_total": a.calories,
                "calories_active": a.active_calories,
                "distance_m": a.distance_from_steps,
            }));
        }
    }
    Ok(out)
}

fn workout_records(docs: Vec<Exercise>, range: DateRange) -> Vec<Value> {
    docs.iter()
        .filter_map(|e| {
            let day = e.start_time.date();
            if !in_range(range, day) {
                return None;
            }
            let offset = FixedOffset::east_opt(e.start_time_utc_offset.unwrap_or(0) * 60)?;
            let start = anchored(e.start_time, Some(offset))?;
            let end = start + Duration::seconds(e.duration.as_deref().and_then(iso_duration_secs)?);
            let record = json!({
                "date": day.to_string(),
                "time_start": rfc3339(start),
                "time_end": rfc3339(end),
                "sport": e.sport.as_deref().map_or_else(|| "other".to_owned(), sport_slug),
                "calories": e.calories,
                "distance_m": e.distance,
                "average_hr": e.heart_rate.as_ref().and_then(|h| h.average),
            });
            Some(with_zone(record, e.start_time_utc_offset.and(etc_zone(offset))))
        })
        .collect()
}

/// The hypnogram as stages in seconds from the sleep's start; each lasts until the next.
fn stages(s: &Sleep, start: DateTime<FixedOffset>, length: i64) -> Vec<Value> {
    let start_of_day = i64::from(start.time().num_seconds_from_midnight());
    let mut marks: Vec<(i64, i64)> = s
        .hypnogram
        .iter()
        .filter_map(|(at, stage)| {
            let t = NaiveTime::parse_from_str(at, "%H:%M").ok()?;
            let mut offset = i64::from(t.num_seconds_from_midnight()) - start_of_day;
            // Past midnight, or the minute the sleep began in (whose seconds precede it).
            if offset < -60 {
                offset += 86_400;
            }
            Some((offset.clamp(0, length), *stage))
        })
        .collect();
    marks.sort();
    marks
        .iter()
        .enumerate()
        .filter_map(|(i, (a, stage))| {
            let b = marks.get(i + 1).map_or(length, |(b, _)| *b);
            let name = match stage {
                0 => "awake",
                1 => "rem",
                2 | 3 => "light",
                4 => "deep",
                _ => "unknown",
            };
            (b > *a).then(|| json!({"stage": name, "start_offset_s": a, "end_offset_s": b}))
        })
        .collect()
}

fn sleep_records(nights: &[Sleep], range: DateRange) -> Vec<Value> {
    nights
        .iter()
        .filter_map(|s| {
            let day = s.date.filter(|d| in_range(range, *d))?;
            let (start, end) = (s.sleep_start_time?, s.sleep_end_time?);
            let length = (end - start).num_seconds();
            let mut record = json!({
                "date": day.to_string(),
                "bedtime_start": rfc3339(start.with_timezone(&Utc)),
                "bedtime_stop": rfc3339(end.with_timezone(&Utc)),
                "duration_s": length,
                "deep_s": s.deep_sleep,
                "rem_s": s.rem_sleep,
                "light_s": s.light_sleep,
                "awake_s": s.total_interruption_duration,
            });
            if !s.hypnogram.is_empty() {
                record["stages"] = Value::Array(stages(s, start, length));
            }
            Some(with_zone(record, etc_zone(*start.offset())))
        })
        .collect()
}

fn profile_record(p: &PhysicalInfo) -> Value {
    json!({"height_cm": p.height, "birth_year": p.birthday.map(|b| b.year())})
}

/// A webhook delivery (Polar's OpenAPI document `webhookPayload*`, `webhookPing`).
#[derive(Debug, Deserialize)]
struct Delivery {
    event: String,
    #[serde(default)]
    user_id: Option<i64>,
    /// The data's date (sleep, continuous heart rate, activity summary deliveries).
    #[serde(default)]
    date: Option<NaiveDate>,
    #[serde(default)]
    timestamp: Option<DateTime<FixedOffset>>,
}

/// A delivery's own `timestamp`, when its body has one.
fn sent_at(body: &[u8]) -> Option<DateTime<Utc>> {
    let delivery = serde_json::from_slice::<Delivery>(body).ok()?;
    delivery.timestamp.map(|t| t.with_timezone(&Utc))
}

/// The catalog resources a delivery of `event` changes.
fn resources_of(event: &str) -> &'static [Resource] {
    match event {
        "EXERCISE" => &[Resource::Workouts],
        // Nightly Recharge has no event of its own: it is made from the night's measurements.
        "SLEEP" => &[Resource::Sleep, Resource::Hrv],
        "CONTINUOUS_HEART_RATE" => &[Resource::Heartrate],
        "ACTIVITY_SUMMARY" => &[Resource::Activity],
        "PHYSICAL_INFORMATION" => &[Resource::Profile, Resource::Body],
        _ => &[],
    }
}

/// Polar's signature: hex HMAC-SHA256 of the raw body with the webhook's
/// `signature_secret_key`, compared case-insensitively in constant time.
pub fn signature_ok(secret: &str, body: &[u8], signature: &str) -> bool {
    hex_hmac_matches(secret.as_bytes(), body, signature)
}

/// The signature Polar would send (for the fake and tests).
pub fn sign(secret: &str, body: &[u8]) -> String {
    hex_hmac_sha256(secret.as_bytes(), body)
}

/// A webhook as `GET /v3/webhooks` lists it (Polar's OpenAPI document `webhookInfo`).
#[derive(Debug, Deserialize)]
struct Webhook {
    url: String,
    #[serde(default)]
    events: Vec<String>,
    #[serde(default)]
    active: Option<bool>,
}

#[async_trait]
impl Adapter for Polar {
    fn api(&self) -> &Api {
        &self.api
    }

    /// The code exchanged by HTTP Basic; `x_user_id` of the answer is the Polar user, who is then
    /// registered with the client (a link is not done until Polar shows Wearlab the data).
    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let answer: TokenAnswer = self.api.exchange_answer(exchange).await?;
        let user_id = match answer.extra.get("x_user_id") {
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => return Err(ProviderError::Api(format!("{SLUG}'s token answer has no x_user_id"))),
        };
        let credentials = answer.into_credentials(Utc::now(), None);
        self.register(credentials.access_token.expose(), &user_id).await?;
        Ok(ProviderAccount { external_user_id: user_id, credentials })
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
            Resource::Workouts if !listed(range, EXERCISES_LIST_DAYS) => vec![],
            Resource::Sleep | Resource::Hrv if !listed(range, NIGHTS_LIST_DAYS) => vec![],
            Resource::Workouts => {
                let docs = self.get(gate, token, "/v3/exercises", &[]).await?;
                workout_records(parse::<Option<Vec<Exercise>>>(docs)?.unwrap_or_default(), range)
            }
            Resource::Activity => {
                activity_records(self.ranged(gate, token, "/v3/users/activities", range).await?, range)?
            }
            Resource::Sleep => sleep_records(&self.nights(gate, token).await?, range),
            Resource::Heartrate => self.heartrate(gate, token, range).await?,
            Resource::Hrv => self.hrv(gate, token, range).await?,
            Resource::Profile => vec![profile_record(&self.physical_info(gate, token).await?)],
            Resource::Body => {
                let today = Utc::now().date_naive();
                if !in_range(range, today) {
                    vec![]
                } else {
                    let weight = self.physical_info(gate, token).await?.weight;
                    weight.map(|kg| json!({"date": today.to_string(), "weight_kg": kg})).into_iter().collect()
                }
            }
            other => return Err(ProviderError::Unsupported(format!("{SLUG} does not serve {other}"))),
        };
        tracing::debug!(provider = SLUG, resource = %resource, records = records.len(), "fetched");
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    /// `DELETE /v3/users/{user-id}` (Polar's OpenAPI document `deleteUser`), which also revokes the
    /// token. A refused token or an unknown user means the access is already gone.
    async fn revoke(&self, _client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError> {
        let url = self.api.url(&format!("/v3/users/{}", account.external_user_id));
        let request = self.api.http.delete(url).bearer_auth(account.credentials.access_token.expose());
        let answer = http::send(SLUG, request).await?;
        match answer.status.as_u16() {
            401 | 404 => Ok(()),
            _ => http::check(SLUG, answer).map(|_| ()),
        }
    }

    /// Polar returns a webhook's signing secret once, when it is created, so the operator creates
    /// the webhook (docs/PROVIDERS.md) and configures the secret as the push token. This checks
    /// that the webhook exists for `callback_url` and reactivates it when Polar deactivated it
    /// (after seven days of failed deliveries); it creates nothing.
    async fn ensure_subscriptions(
        &self,
        client: &OauthClient,
        callback_url: &str,
        _verification_token: Option<&str>,
    ) -> Result<usize, ProviderError> {
        #[derive(Deserialize)]
        struct Webhooks {
            #[serde(default)]
            data: Vec<Webhook>,
        }
        let basic = |r: reqwest::RequestBuilder| {
            r.basic_auth(&client.client_id, Some(client.client_secret.expose()))
                .header("accept", "application/json")
        };
        let answer = http::check(
            SLUG,
            http::send(SLUG, basic(self.api.http.get(self.api.url("/v3/webhooks")))).await?,
        )?;
        let hooks: Vec<Webhook> = if answer.body.iter().all(u8::is_ascii_whitespace) {
            vec![]
        } else {
            answer.json::<Webhooks>(SLUG)?.data
        };
        let Some(hook) = hooks.iter().find(|h| h.url == callback_url) else {
            return Err(ProviderError::Unsupported(format!(
                "{SLUG} has no webhook for this deployment; create it as docs/PROVIDERS.md says"
            )));
        };
        if let Some(missing) = WEBHOOK_EVENTS.iter().find(|e| !hook.events.iter().any(|h| h == *e)) {
            tracing::warn!(provider = SLUG, event = missing, "the webhook does not subscribe to an event");
        }
        if hook.active == Some(false) {
            let url = self.api.url("/v3/webhooks/activate");
            http::check(SLUG, http::send(SLUG, basic(self.api.http.post(url))).await?)?;
            return Ok(1);
        }
        Ok(0)
    }

    /// The PING Polar sends when the webhook is created or changed is unsigned (the secret does
    /// not exist yet) and answered 200; every other delivery must carry a valid signature made
    /// with the webhook's secret (`verification_token`: the configured push token). `client` is
    /// not used: the webhook, and so the secret, is the platform client's alone.
    fn push(
        &self,
        _client: &OauthClient,
        verification_token: Option<&str>,
        request: &PushRequest,
    ) -> PushOutcome {
        if !request.method.eq_ignore_ascii_case("POST") {
            return PushOutcome::Refused("Polar only POSTs".into());
        }
        let Ok(delivery) = serde_json::from_slice::<Delivery>(&request.body) else {
            return PushOutcome::Refused("unreadable push body".into());
        };
        if delivery.event == "PING" {
            return PushOutcome::Handshake { status: 200, body: None };
        }
        let Some(secret) = verification_token else {
            return PushOutcome::Refused("no Polar webhook secret is configured".into());
        };
        let Some(signature) = request.header(SIGNATURE_HEADER) else {
            return PushOutcome::Refused("unsigned push".into());
        };
        if !signature_ok(secret, &request.body, signature) {
            return PushOutcome::Refused("bad push signature".into());
        }
        let Some(user) = delivery.user_id else {
            return PushOutcome::Refused("a push without user_id".into());
        };
        let resources = resources_of(&delivery.event).to_vec();
        if resources.is_empty() {
            return PushOutcome::Notices(vec![]);
        }
        // The data's date when the delivery has one, else the day it was sent; and the day
        // before (a night belongs to the day it ends).
        let day = delivery.date.or(delivery.timestamp.map(|t| t.date_naive()));
        let range = day.map(|end| DateRange { start: end - Duration::days(1), end });
        PushOutcome::Notices(vec![PushNotice { external_user_id: user.to_string(), resources, range }])
    }

    /// A delivery's `timestamp` (it is in the signed body): the push use case refuses a
    /// delivery sent outside its window and reads each delivery once.
    fn push_sent_at(&self, request: &PushRequest) -> Option<DateTime<Utc>> {
        sent_at(&request.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn a_delivery_names_when_it_was_sent() {
        let example = include_str!("../fixtures/polar/webhook_exercise.json");
        let sent = sent_at(example.as_bytes());
        assert_eq!(sent.map(|t| t.to_rfc3339()), Some("2026-11-23T14:22:24+00:00".to_owned()));
        assert_eq!(sent_at(br#"{"event":"EXERCISE","user_id":475}"#), None);
        assert_eq!(sent_at(b"not json"), None);
    }

    #[test]
    fn iso_durations_become_seconds() {
        assert_eq!(iso_duration_secs("PT2H44M"), Some(9840));
        assert_eq!(iso_duration_secs("PT51M5S"), Some(3065));
        assert_eq!(iso_duration_secs("PT18H23M30S"), Some(66_210));
        assert_eq!(iso_duration_secs("PT0.6S"), Some(1));
        assert_eq!(iso_duration_secs("P1DT1H"), Some(90_000));
        assert_eq!(iso_duration_secs("2H"), None);
        assert_eq!(iso_duration_secs("PT5X"), None);
        assert_eq!(iso_duration_secs("PT5"), None);
    }

    #[test]
    fn ranges_are_split_into_28_day_windows_within_365_days() {
        let today = d("2026-11-25");
        let w = windows(DateRange { start: d("2026-10-01"), end: d("2026-11-25") }, today);
        assert_eq!(w, vec![(d("2026-10-01"), d("2026-10-28")), (d("2026-10-29"), d("2026-11-25")),]);
        let old = windows(DateRange { start: d("2024-01-01"), end: d("2025-12-01") }, today);
        assert_eq!(old[0].0, d("2025-11-25"), "not older than 365 days");
        assert!(windows(DateRange { start: d("2024-01-01"), end: d("2024-02-01") }, today).is_empty());
    }

    #[test]
    fn signatures_are_hex_and_compared_case_insensitively() {
        let sig = sign("secret", b"{}");
        assert!(signature_ok("secret", b"{}", &sig));
        assert!(signature_ok("secret", b"{}", &sig.to_ascii_uppercase()));
        assert!(!signature_ok("secret", b"{ }", &sig));
        assert!(!signature_ok("other", b"{}", &sig));
    }
}
