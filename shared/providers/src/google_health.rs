//! Google Health API v4 (https://health.googleapis.com), the successor of the Fitbit Web API:
//! Google OAuth 2 with the client in the body and `access_type=offline`, the user's id from
//! `/v4/users/me/identity`, data points per data type reconciled across the user's sources by
//! `/v4/users/me/dataTypes/{type}/dataPoints:reconcile`, filtered by an AIP-160 `filter` and paged by
//! `pageToken`, and a subscriber endpoint verified and authenticated by a shared secret. Facts:
//! Google's published documents, listed under "Sources" in the Google Health section of
//! `docs/PROVIDERS.md`, chiefly the API's discovery document `health:v4` (repository
//! `googleapis/google-api-go-client`, `health/v4/health-api.json`), called "the discovery
//! document" below; what is mapped to what: that section too.

use std::collections::BTreeMap;

use async_trait::async_trait;
use base64::Engine;
use chrono::{DateTime, Duration, FixedOffset, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use wearlab_domain::common::signing::constant_time_eq;
use wearlab_domain::ports::providers::{
    CodeExchange, DateRange, FetchedResource, NoLimit, OauthClient, ProviderAccount, ProviderError,
    PushNotice, PushOutcome, PushRequest, RateWindow, RequestGate,
};
use wearlab_models::Resource;

use crate::adapter::{Adapter, sport_slug};
use crate::config::{AppConfig, Endpoints};
use crate::description::{Api, ProviderDescription, Refresh};
use crate::http;
use crate::oauth::ClientAuth;
use crate::tink;
use crate::whoop::{etc_zone, with_zone};

pub const SLUG: &str = "google_health";

/// The read-only scopes of the data Wearlab maps (the discovery document's `auth`), space-separated
/// as Google takes them. Each also admits `users/me/identity` (the discovery document's
/// `users.getIdentity` scopes).
pub const SCOPES: &str = "https://www.googleapis.com/auth/googlehealth.activity_and_fitness.readonly \
https://www.googleapis.com/auth/googlehealth.health_metrics_and_measurements.readonly \
https://www.googleapis.com/auth/googlehealth.sleep.readonly";

/// Per project: 120,000 requests a minute and 86.4 M a day
/// (https://developers.google.com/health/rate-limits).
const LIMITS: &[RateWindow] = &[
    RateWindow { requests: 120_000, window_secs: 60 },
    RateWindow { requests: 86_400_000, window_secs: 86_400 },
];
/// Per user: 300 requests a minute (same source).
const USER_LIMITS: &[RateWindow] = &[RateWindow { requests: 300, window_secs: 60 }];

/// The catalog resources this adapter fills; `fetch` refuses any other.
const RESOURCES: &[Resource] = &[
    Resource::Sleep,
    Resource::Workouts,
    Resource::Body,
    Resource::Heartrate,
    Resource::Hrv,
    Resource::BloodOxygen,
    Resource::Steps,
    Resource::Distance,
    Resource::Activity,
];

/// The discovery document's `dataPoints.list` `pageSize`: at most 10000, and at most 25 for
/// `exercise` and `sleep`.
pub const PAGE_SIZE: u32 = 10_000;
pub const SESSION_PAGE_SIZE: u32 = 25;
/// A provider that keeps answering `nextPageToken` is a bug, not data: stop there.
const MAX_PAGES: usize = 1000;

/// How a data type is filtered by day (the discovery document's `dataPoints.list` `filter`): civil
/// (the user's local) dates, `>=` the first day and `<` the day after the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `{type}.interval.civil_start_time` (steps, distance).
    Interval,
    /// `{type}.sample_time.civil_time` (heart rate, weight, body fat).
    Sample,
    /// `{type}.date` (daily summaries).
    Daily,
    /// `exercise.interval.civil_start_time` (sessions other than sleep and ECG).
    Session,
    /// `sleep.interval.civil_end_time` (sleep is filtered by its end).
    Sleep,
}

/// The kebab-case data types Wearlab reads, with their filter kind.
pub const DATA_TYPES: &[(&str, Kind)] = &[
    ("steps", Kind::Interval),
    ("distance", Kind::Interval),
    ("heart-rate", Kind::Sample),
    ("weight", Kind::Sample),
    ("body-fat", Kind::Sample),
    ("daily-heart-rate-variability", Kind::Daily),
    ("daily-oxygen-saturation", Kind::Daily),
    ("daily-resting-heart-rate", Kind::Daily),
    ("exercise", Kind::Session),
    ("sleep", Kind::Sleep),
];

/// The filter field of `data_type` (snake case, as the discovery document's examples write it).
pub fn filter_field(data_type: &str) -> Option<String> {
    let (_, kind) = DATA_TYPES.iter().find(|(t, _)| *t == data_type)?;
    let snake = data_type.replace('-', "_");
    Some(match kind {
        Kind::Interval | Kind::Session => format!("{snake}.interval.civil_start_time"),
        Kind::Sample => format!("{snake}.sample_time.civil_time"),
        Kind::Daily => format!("{snake}.date"),
        Kind::Sleep => format!("{snake}.interval.civil_end_time"),
    })
}

/// The `filter` of `range`'s days for `data_type`.
pub fn filter(data_type: &str, range: DateRange) -> Option<String> {
    let field = filter_field(data_type)?;
    let end = range.end + Duration::days(1);
    Some(format!("{field} >= \"{}\" AND {field} < \"{end}\"", range.start))
}

/// The JSON key of a data type's value in a `DataPoint` (lower camel case of the kebab name).
pub fn value_key(data_type: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in data_type.chars() {
        if c == '-' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Google's addresses beside the Health API's hosts ([`AppConfig`]'s endpoints): configurable so
/// tests point them at the local fake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoogleUrls {
    /// Google's OAuth 2 token revocation endpoint (`POST` with the form field `token`).
    pub revoke: String,
    /// The public keyset the Health API signs its webhook notifications with (a Tink JSON
    /// keyset).
    pub signing_keys: String,
}

impl GoogleUrls {
    /// Google's own: https://developers.google.com/identity/protocols/oauth2/web-server
    /// ("Revoking a token"), and the keyset receivers of Health API webhooks verify against.
    pub fn real() -> Self {
        Self {
            revoke: "https://oauth2.googleapis.com/revoke".into(),
            signing_keys: "https://www.gstatic.com/googlehealthapi/webhooks/webhooks_public_keyset.json"
                .into(),
        }
    }

    /// [`GoogleUrls::real`] overridden by `WEARLAB_PROVIDER_GOOGLE_HEALTH_REVOKE_URL` and
    /// `WEARLAB_PROVIDER_GOOGLE_HEALTH_SIGNING_KEYS_URL` read through `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let get = |name: &str| {
            var(&format!("WEARLAB_PROVIDER_GOOGLE_HEALTH_{name}"))
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let real = Self::real();
        Self {
            revoke: get("REVOKE_URL").unwrap_or(real.revoke),
            signing_keys: get("SIGNING_KEYS_URL").unwrap_or(real.signing_keys),
        }
    }
}

/// A keyset read this long ago is read again before the next notification is checked (Google
/// rotates its signing keys; a notification signed by a key not yet seen also reads it again).
const SIGNING_KEYS_TTL: std::time::Duration = std::time::Duration::from_secs(3600);
/// Reads of the keyset are at least this far apart, so forged signatures naming unknown key ids
/// cannot make Wearlab call Google on each request.
const SIGNING_KEYS_MIN_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// The webhook signing keys read last, and when.
#[derive(Default)]
struct SigningKeys {
    keys: tink::PublicKeyset,
    read_at: Option<std::time::Instant>,
    tried_at: Option<std::time::Instant>,
}

/// Google Health as its published documents describe it: the client in the token form's body;
/// the consent page asked for a refresh token on every consent (`access_type=offline`,
/// `prompt=consent`) and for the scopes granted before (`include_granted_scopes=true`), as
/// `docs/PROVIDERS.md` says with its sources; Google usually sends no new refresh token on a refresh, and the old one stays.
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: LIMITS,
    user_limits: USER_LIMITS,
    authorize_url: "https://accounts.google.com/o/oauth2/v2/auth",
    token_url: "https://oauth2.googleapis.com/token",
    api_url: "https://health.googleapis.com",
    scopes: SCOPES,
    authorize_extra: &[("access_type", "offline"), ("prompt", "consent"), ("include_granted_scopes", "true")],
    client_auth: ClientAuth::Body,
    refresh: Refresh::Token { extra: &[] },
};

pub struct GoogleHealth {
    api: Api,
    urls: GoogleUrls,
    signing_keys: std::sync::RwLock<SigningKeys>,
}

impl GoogleHealth {
    /// The real hosts (the Open Wearables project, github.com/the-momentum/open-wearables,
    /// `backend/app/services/providers/google/health_api/oauth.py`).
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
    }

    pub fn new(config: AppConfig, urls: GoogleUrls) -> Self {
        Self { api: Api::new(&DESCRIPTION, config), urls, signing_keys: Default::default() }
    }

    fn keys(&self) -> std::sync::RwLockReadGuard<'_, SigningKeys> {
        self.signing_keys.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the signing keyset from `urls.signing_keys` unless the one held is fresh and knows
    /// `signature`'s key, or was tried within the last minute.
    async fn refresh_signing_keys(&self, signature: &[u8]) -> Result<(), ProviderError> {
        let now = std::time::Instant::now();
        {
            let held = self.keys();
            let fresh = held.read_at.is_some_and(|t| now.duration_since(t) < SIGNING_KEYS_TTL);
            if fresh && held.keys.knows(signature) {
                return Ok(());
            }
            if held.tried_at.is_some_and(|t| now.duration_since(t) < SIGNING_KEYS_MIN_INTERVAL) {
                return Ok(());
            }
        }
        self.signing_keys.write().unwrap_or_else(|e| e.into_inner()).tried_at = Some(now);
        let read = async {
            let answer = http::send(SLUG, self.api.http.get(&self.urls.signing_keys)).await?;
            let answer = http::check(SLUG, answer)?;
            tink::PublicKeyset::parse(&answer.body)
                .map_err(|e| ProviderError::Api(format!("{SLUG} signing keys: {e}")))
        };
        match read.await {
            Ok(keys) => {
                let mut held = self.signing_keys.write().unwrap_or_else(|e| e.into_inner());
                held.keys = keys;
                held.read_at = Some(now);
                Ok(())
            }
            // Keys held from before still check what they signed.
            Err(e) if self.keys().read_at.is_some() => {
                tracing::warn!(provider = SLUG, error = %e, "signing keys not read again");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    pub fn config(&self) -> &AppConfig {
        &self.api.config
    }

    /// The value of every data point of `data_type` in `range`'s days, every page followed, as
    /// `dataPoints:reconcile` answers them: the discovery document documents it as the method that
    /// "Reconcile[s] data points from multiple data sources into a single data stream" (all sources
    /// by default). `dataPoints.list` answers each source's points as recorded, so a user with a
    /// phone and a watch would have each step and metre counted twice.
    async fn points(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        data_type: &str,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Page {
            #[serde(default)]
            data_points: Vec<Value>,
            #[serde(default)]
            next_page_token: Option<String>,
        }
        let filter = filter(data_type, range)
            .ok_or_else(|| ProviderError::Unsupported(format!("{SLUG} data type {data_type}")))?;
        let size = if matches!(data_type, "exercise" | "sleep") { SESSION_PAGE_SIZE } else { PAGE_SIZE };
        let path = format!("/v4/users/me/dataTypes/{data_type}/dataPoints:reconcile");
        let key = value_key(data_type);
        let mut out = Vec::new();
        let mut next: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut q = vec![("filter", filter.clone()), ("pageSize", size.to_string())];
            if let Some(t) = &next {
                q.push(("pageToken", t.clone()));
            }
            let page: Page = serde_json::from_value(self.api.get_json(gate, token, &path, &q).await?)
                .map_err(|e| ProviderError::Api(format!("{SLUG} answered an unreadable page: {e}")))?;
            out.extend(page.data_points.into_iter().filter_map(|mut p| p.get_mut(&key).map(Value::take)));
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(t) if next.as_ref() != Some(&t) => next = Some(t),
                Some(_) => {
                    return Err(ProviderError::Api(format!(
                        "{SLUG} repeated its page token for {data_type}"
                    )));
                }
                None => return Ok(out),
            }
        }
        Err(ProviderError::Api(format!("{SLUG} kept paging {data_type} past {MAX_PAGES} pages")))
    }

    async fn identity(&self, token: &str) -> Result<String, ProviderError> {
        let identity: Value = self.api.get_json(&NoLimit, token, "/v4/users/me/identity", &[]).await?;
        identity
            .get("healthUserId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| ProviderError::Api(format!("{SLUG} identity has no healthUserId")))
    }

    /// A series of one number per data point, each placed at `time` of the point.
    async fn series(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        data_type: &str,
        range: DateRange,
        read: fn(&Value) -> Option<Reading>,
        unit: &str,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut rows: Vec<Value> = self
            .points(gate, token, data_type, range)
            .await?
            .iter()
            .filter_map(read)
            .map(|(t, offset, value)| {
                let row = json!({"timestamp": t.to_rfc3339(), "value": value, "unit": unit});
                with_zone(row, offset.and_then(etc_zone))
            })
            .collect();
        // Google lists newest first; the pipeline reads any order, tests read oldest first.
        rows.reverse();
        Ok(rows)
    }

    /// `weight` and `body-fat` samples as one body summary per local day (the day's last of each).
    async fn body(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut days: BTreeMap<NaiveDate, (Latest, Latest)> = BTreeMap::new();
        let mut zones: BTreeMap<NaiveDate, Option<String>> = BTreeMap::new();
        for (data_type, field, scale) in [("weight", "weightGrams", 1000.0), ("body-fat", "percentage", 1.0)]
        {
            for p in self.points(gate, token, data_type, range).await? {
                let (Some((t, offset)), Some(v)) = (sample_time(&p), p.get(field).and_then(number)) else {
                    continue;
                };
                let day = local_day(t, offset);
                zones.entry(day).or_insert_with(|| offset.and_then(etc_zone));
                let slot = days.entry(day).or_default();
                let slot = if data_type == "weight" { &mut slot.0 } else { &mut slot.1 };
                if slot.is_none_or(|(at, _)| t > at) {
                    *slot = Some((t, v / scale));
                }
            }
        }
        Ok(days
            .into_iter()
            .filter(|(day, _)| *day >= range.start && *day <= range.end)
            .map(|(day, (weight, fat))| {
                let mut r = json!({"date": day.to_string()});
                if let Some((_, kg)) = weight {
                    r["weight_kg"] = json!(kg);
                }
                if let Some((_, pct)) = fat {
                    r["fat_percent"] = json!(pct);
                }
                with_zone(r, zones.get(&day).cloned().flatten())
            })
            .collect())
    }
}

/// One value read from a data point: when, the user's UTC offset then, and the number.
type Reading = (DateTime<Utc>, Option<FixedOffset>, f64);
/// An interval: start and its offset, end and its offset.
type Span = (DateTime<Utc>, Option<FixedOffset>, DateTime<Utc>, Option<FixedOffset>);
/// The latest value of a day so far, with its time.
type Latest = Option<(DateTime<Utc>, f64)>;

/// A JSON number, or an int64 written as a string (Google's JSON mapping of `int64`).
fn number(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

fn time(v: &Value, k: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.get(k)?.as_str()?).ok().map(|t| t.with_timezone(&Utc))
}

/// A `google-duration` UTC offset (`"3600s"`, `"-18000s"`) as an offset.
pub fn parse_offset(v: Option<&Value>) -> Option<FixedOffset> {
    let secs: f64 = v?.as_str()?.trim().strip_suffix('s')?.parse().ok()?;
    FixedOffset::east_opt(secs as i32)
}

fn local_day(t: DateTime<Utc>, offset: Option<FixedOffset>) -> NaiveDate {
    match offset {
        Some(o) => t.with_timezone(&o).date_naive(),
        None => t.date_naive(),
    }
}

/// `sampleTime` (ObservationSampleTime): the physical time and the user's offset then.
fn sample_time(p: &Value) -> Option<(DateTime<Utc>, Option<FixedOffset>)> {
    let s = p.get("sampleTime")?;
    Some((time(s, "physicalTime")?, parse_offset(s.get("utcOffset"))))
}

/// `interval` (Observation- or SessionTimeInterval): start, end and their offsets.
fn interval(p: &Value) -> Option<Span> {
    let i = p.get("interval")?;
    Some((
        time(i, "startTime")?,
        parse_offset(i.get("startUtcOffset")),
        time(i, "endTime")?,
        parse_offset(i.get("endUtcOffset")),
    ))
}

/// A `Date` (`{year, month, day}`).
fn date(p: &Value) -> Option<NaiveDate> {
    let d = p.get("date")?;
    let part = |k: &str| d.get(k).and_then(Value::as_u64);
    NaiveDate::from_ymd_opt(part("year")? as i32, part("month")? as u32, part("day")? as u32)
}

/// A daily value without a time of its own is placed at noon UTC, so it lands on its own day
/// whatever the user's zone (within twelve hours of UTC).
fn noon(d: NaiveDate) -> DateTime<Utc> {
    d.and_hms_opt(12, 0, 0).unwrap_or_default().and_utc()
}

fn steps(p: &Value) -> Option<Reading> {
    let (start, offset, _, _) = interval(p)?;
    Some((start, offset, number(p.get("count")?)?))
}

fn distance(p: &Value) -> Option<Reading> {
    let (start, offset, _, _) = interval(p)?;
    Some((start, offset, number(p.get("millimeters")?)? / 1000.0))
}

fn heart_rate(p: &Value) -> Option<Reading> {
    let (t, offset) = sample_time(p)?;
    Some((t, offset, number(p.get("beatsPerMinute")?)?))
}

fn daily_hrv(p: &Value) -> Option<Reading> {
    Some((noon(date(p)?), None, number(p.get("averageHeartRateVariabilityMilliseconds")?)?))
}

fn daily_spo2(p: &Value) -> Option<Reading> {
    Some((noon(date(p)?), None, number(p.get("averagePercentage")?)?))
}

/// A `DailyRestingHeartRate` as the activity summary of its `date` (the user's local day):
/// `beatsPerMinute` (an int64 string) as the day's resting heart rate.
fn resting_record(p: &Value) -> Option<Value> {
    let day = date(p)?;
    Some(json!({"date": day.to_string(), "resting_hr_bpm": number(p.get("beatsPerMinute")?)?}))
}

/// A `Sleep` as its summary: dated by its local end, stage minutes as seconds. Classic
/// sleeps (AWAKE, RESTLESS, ASLEEP) have no stages: their asleep time counts as light sleep so
/// the night's total holds.
fn sleep_record(p: &Value) -> Option<Value> {
    let (start, _, end, end_offset) = interval(p)?;
    let mut minutes: BTreeMap<&str, f64> = BTreeMap::new();
    for s in
        p.get("summary").and_then(|s| s.get("stagesSummary")).and_then(Value::as_array).into_iter().flatten()
    {
        let kind = match s.get("type").and_then(Value::as_str) {
            Some("DEEP") => "deep_s",
            Some("REM") => "rem_s",
            Some("LIGHT" | "ASLEEP") => "light_s",
            Some("AWAKE" | "RESTLESS") => "awake_s",
            _ => continue,
        };
        *minutes.entry(kind).or_default() += s.get("minutes").and_then(number).unwrap_or(0.0);
    }
    let period = p.get("summary").and_then(|s| s.get("minutesInSleepPeriod")).and_then(number);
    let mut r = json!({
        "date": local_day(end, end_offset).to_string(),
        "bedtime_start": start.to_rfc3339(),
        "bedtime_stop": end.to_rfc3339(),
        "duration_s": period.map(|m| m * 60.0).unwrap_or((end - start).num_seconds() as f64),
    });
    // `metadata.nap` ("Naps are sleeps without stages and relatively short durations"): an
    // acknowledged nap; the pipeline types the others by their length.
    if p.get("metadata").and_then(|m| m.get("nap")).and_then(Value::as_bool) == Some(true) {
        r["type"] = json!("acknowledged_nap");
    }
    for (k, m) in minutes {
        r[k] = json!(m * 60.0);
    }
    let stages: Vec<Value> = p
        .get("stages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let (a, b) = (time(s, "startTime")?, time(s, "endTime")?);
            let stage = match s.get("type").and_then(Value::as_str)? {
                "DEEP" => "deep",
                "LIGHT" => "light",
                "REM" => "rem",
                "AWAKE" => "awake",
                _ => "unknown",
            };
            Some(json!({"stage": stage, "start_offset_s": (a - start).num_seconds(),
                "end_offset_s": (b - start).num_seconds()}))
        })
        .collect();
    if !stages.is_empty() {
        r["stages"] = Value::Array(stages);
    }
    Some(with_zone(r, end_offset.and_then(etc_zone)))
}

/// Every sleep, oldest first (Google lists newest first).
fn sleep_records(points: &[Value]) -> Vec<Value> {
    let mut records: Vec<Value> = points.iter().filter_map(sleep_record).collect();
    records.sort_by(|a, b| a["bedtime_start"].as_str().cmp(&b["bedtime_start"].as_str()));
    records
}

/// An `Exercise` as a workout: its type as the sport, `metricsSummary` for energy (kcal),
/// distance (mm -> m) and average heart rate.
fn workout_record(p: &Value) -> Option<Value> {
    let (start, offset, end, _) = interval(p)?;
    let m = p.get("metricsSummary");
    let metric = |k: &str| m.and_then(|m| m.get(k)).and_then(number);
    let sport = match p.get("exerciseType").and_then(Value::as_str).unwrap_or("OTHER") {
        "EXERCISE_TYPE_UNSPECIFIED" => "other".to_owned(),
        t => sport_slug(t),
    };
    let mut r = json!({
        "date": local_day(start, offset).to_string(),
        "time_start": start.to_rfc3339(),
        "time_end": end.to_rfc3339(),
        "sport": sport,
    });
    if let Some(kcal) = metric("caloriesKcal") {
        r["calories"] = json!(kcal);
    }
    if let Some(mm) = metric("distanceMillimeters") {
        r["distance_m"] = json!(mm / 1000.0);
    }
    if let Some(bpm) = metric("averageHeartRateBeatsPerMinute") {
        r["average_hr"] = json!(bpm);
    }
    Some(with_zone(r, offset.and_then(etc_zone)))
}

/// The catalog resources a notice of `data_type` changes (kebab case; snake case read too).
pub fn resources_of(data_type: &str) -> &'static [Resource] {
    match data_type.replace('_', "-").as_str() {
        "steps" => &[Resource::Steps],
        "distance" => &[Resource::Distance],
        "heart-rate" => &[Resource::Heartrate],
        "weight" | "body-fat" => &[Resource::Body],
        "daily-heart-rate-variability" => &[Resource::Hrv],
        "daily-oxygen-saturation" => &[Resource::BloodOxygen],
        "daily-resting-heart-rate" => &[Resource::Activity],
        "exercise" => &[Resource::Workouts],
        "sleep" => &[Resource::Sleep],
        _ => &[],
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Notification {
    data: NotificationData,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NotificationData {
    health_user_id: String,
    data_type: String,
    #[serde(default)]
    intervals: Vec<NotifiedInterval>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NotifiedInterval {
    physical_time_interval: Option<PhysicalInterval>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalInterval {
    start_time: Option<DateTime<FixedOffset>>,
    end_time: Option<DateTime<FixedOffset>>,
}

/// The days a notice's intervals cover, a day wider each side: the intervals are physical
/// (UTC) times and Wearlab fetches by the user's local days.
fn notified_range(intervals: &[NotifiedInterval]) -> Option<DateRange> {
    let times = || intervals.iter().filter_map(|i| i.physical_time_interval.as_ref());
    let start = times().filter_map(|i| i.start_time).map(|t| t.with_timezone(&Utc).date_naive()).min()?;
    let end = times()
        .filter_map(|i| i.end_time.or(i.start_time))
        .map(|t| t.with_timezone(&Utc).date_naive())
        .max()
        .unwrap_or(start);
    Some(DateRange { start: start - Duration::days(1), end: end + Duration::days(1) })
}

/// The header Google signs notifications in (the discovery document's `EndpointAuthorization`);
/// some receivers read `GOOGLE-HEALTH-API-SIGNATURE`, accepted too.
const SIGNATURE_HEADERS: [&str; 2] = ["x-healthapi-signature", "google-health-api-signature"];

/// The decoded signature of a push (base64 in the header), if it carries one.
pub fn push_signature(request: &PushRequest) -> Option<Vec<u8>> {
    let header = SIGNATURE_HEADERS.iter().find_map(|h| request.header(h))?;
    base64::engine::general_purpose::STANDARD.decode(header.trim()).ok()
}

/// Reads a request to the subscriber endpoint (the discovery document's `subscribers.create`): its
/// `Authorization` header must equal the configured secret `push_token` exactly (compared in
/// constant time). A verification answers 201. A notification must also carry a valid
/// `X-HEALTHAPI-SIGNATURE`: the discovery document's `EndpointAuthorization` says every payload is
/// signed, "an ECDSA (NIST P256) signature of the JSON payload", which "Clients must verify ...
/// using Google Health API's public key"; read as base64 of a Tink signature over the raw body,
/// checked with the keys of Google's public keyset (`keys`). A notification without one, or
/// with one no key checks, is refused. It names the user, the data type and the intervals that
/// changed.
pub fn read_push(push_token: Option<&str>, keys: &tink::PublicKeyset, request: &PushRequest) -> PushOutcome {
    if !request.method.eq_ignore_ascii_case("POST") {
        return PushOutcome::Refused("Google Health only POSTs".into());
    }
    let Some(expected) = push_token.filter(|t| !t.is_empty()) else {
        return PushOutcome::Refused("no push secret is configured for Google Health".into());
    };
    let Some(given) = request.header("authorization") else {
        return PushOutcome::Refused("push without Authorization".into());
    };
    if !constant_time_eq(expected.as_bytes(), given.as_bytes()) {
        return PushOutcome::Refused("push with a wrong Authorization".into());
    }
    let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
        return PushOutcome::Refused("unreadable push body".into());
    };
    if body.get("type").and_then(Value::as_str) == Some("verification") {
        return PushOutcome::Handshake { status: 201, body: None };
    }
    match push_signature(request) {
        Some(signature) if keys.verify(&signature, &request.body) => {}
        Some(_) => return PushOutcome::Refused("push with a signature no Google key checks".into()),
        None => return PushOutcome::Refused("push without X-HEALTHAPI-SIGNATURE".into()),
    }
    let Ok(n) = serde_json::from_value::<Notification>(body) else {
        return PushOutcome::Refused("unreadable push body".into());
    };
    let resources = resources_of(&n.data.data_type).to_vec();
    if resources.is_empty() {
        return PushOutcome::Notices(vec![]);
    }
    PushOutcome::Notices(vec![PushNotice {
        external_user_id: n.data.health_user_id,
        resources,
        range: notified_range(&n.data.intervals),
    }])
}

#[async_trait]
impl Adapter for GoogleHealth {
    fn api(&self) -> &Api {
        &self.api
    }

    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let credentials = self.api.exchange(exchange).await?;
        let id = self.identity(credentials.access_token.expose()).await?;
        Ok(ProviderAccount { external_user_id: id, credentials })
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
            Resource::Steps => self.series(gate, token, "steps", range, steps, "count").await?,
            Resource::Distance => self.series(gate, token, "distance", range, distance, "m").await?,
            Resource::Heartrate => self.series(gate, token, "heart-rate", range, heart_rate, "bpm").await?,
            Resource::Hrv => {
                self.series(gate, token, "daily-heart-rate-variability", range, daily_hrv, "ms").await?
            }
            Resource::BloodOxygen => {
                self.series(gate, token, "daily-oxygen-saturation", range, daily_spo2, "%").await?
            }
            Resource::Body => self.body(gate, token, range).await?,
            Resource::Activity => {
                let mut days: Vec<Value> = self
                    .points(gate, token, "daily-resting-heart-rate", range)
                    .await?
                    .iter()
                    .filter_map(resting_record)
                    .collect();
                days.sort_by(|a, b| a["date"].as_str().cmp(&b["date"].as_str()));
                days
            }
            Resource::Sleep => sleep_records(&self.points(gate, token, "sleep", range).await?),
            Resource::Workouts => {
                let mut w: Vec<Value> = self
                    .points(gate, token, "exercise", range)
                    .await?
                    .iter()
                    .filter_map(workout_record)
                    .collect();
                w.reverse();
                w
            }
            other => {
                return Err(ProviderError::Unsupported(format!("{SLUG} does not provide {other}")));
            }
        };
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    /// Google's revocation endpoint (`POST token=...`, form encoded): the refresh token when the
    /// connection holds one (revoking it revokes the grant, its access tokens with it), else the
    /// access token. Google answers 200; a 400 (`invalid_token`) means the token is dead
    /// already, which is what revoking asks for.
    async fn revoke(&self, _client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError> {
        let c = &account.credentials;
        let token = c.refresh_token.as_ref().unwrap_or(&c.access_token);
        let body = serde_urlencoded::to_string([("token", token.expose())])
            .map_err(|e| ProviderError::Api(e.to_string()))?;
        let request = self
            .api
            .http
            .post(&self.urls.revoke)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        let answer = http::send(SLUG, request).await?;
        if answer.status.as_u16() == 400 {
            return Ok(());
        }
        http::check(SLUG, answer).map(|_| ())
    }

    fn push(
        &self,
        _client: &OauthClient,
        verification_token: Option<&str>,
        request: &PushRequest,
    ) -> PushOutcome {
        read_push(verification_token, &self.keys().keys, request)
    }

    /// A signed notification needs Google's signing keys: read (again) when none are held, they
    /// are older than an hour, or the signature names a key not held (rotation).
    async fn prepare_push(&self, request: &PushRequest) -> Result<(), ProviderError> {
        match push_signature(request) {
            Some(signature) => self.refresh_signing_keys(&signature).await,
            None => Ok(()),
        }
    }

    fn push_claimed_user(&self, request: &PushRequest) -> Option<String> {
        let n: Notification = serde_json::from_slice(&request.body).ok()?;
        Some(n.data.health_user_id).filter(|id| !id.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_use_each_kinds_civil_field() {
        let range = DateRange { start: "2026-11-21".parse().unwrap(), end: "2026-11-23".parse().unwrap() };
        assert_eq!(
            filter("steps", range).unwrap(),
            "steps.interval.civil_start_time >= \"2026-11-21\" AND steps.interval.civil_start_time < \"2026-11-24\""
        );
        assert_eq!(filter_field("heart-rate").unwrap(), "heart_rate.sample_time.civil_time");
        assert_eq!(filter_field("daily-oxygen-saturation").unwrap(), "daily_oxygen_saturation.date");
        assert_eq!(filter_field("sleep").unwrap(), "sleep.interval.civil_end_time");
        assert_eq!(filter_field("floors"), None);
        assert_eq!(value_key("daily-heart-rate-variability"), "dailyHeartRateVariability");
    }

    #[test]
    fn offsets_are_google_durations() {
        assert_eq!(parse_offset(Some(&json!("3600s"))), FixedOffset::east_opt(3600));
        assert_eq!(parse_offset(Some(&json!("-18000s"))), FixedOffset::east_opt(-18000));
        assert_eq!(parse_offset(Some(&json!("3600"))), None);
    }
}
