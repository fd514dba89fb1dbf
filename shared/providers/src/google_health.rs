//! Google Health API v4 (https://health.googleapis.com), the successor of the Fitbit Web API:
//! Google OAuth 2 with the client in the body and `access_type=offline`, the user's id from
//! `/v4/users/me/identity`, data points per data type under
//! `/v4/users/me/dataTypes/{type}/dataPoints` filtered by an AIP-160 `filter` and paged by
//! `pageToken`, and a subscriber endpoint verified and authenticated by a shared secret. Facts:
//! `../shared/PROVIDERS.md` section 7 and the discovery document `health:v4` (GH-DISC); what is
//! mapped to what: `docs/PROVIDERS.md`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Duration, FixedOffset, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use wearlab_domain::lab::signing::constant_time_eq;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, FetchedResource, NoLimit, OauthClient, ProviderAccount,
    ProviderCredentials, ProviderError, PushNotice, PushOutcome, PushRequest, RateWindow, RequestGate,
};

use crate::adapter::{Adapter, sport_slug};
use crate::config::{AppConfig, Endpoints};
use crate::http;
use crate::oauth::{self, ClientAuth};
use crate::whoop::{etc_zone, with_zone};

pub const SLUG: &str = "google_health";

/// The read-only scopes of the data Wearlab maps (GH-DISC `auth`), space-separated as Google
/// takes them. Each also admits `users/me/identity` (GH-DISC `users.getIdentity` scopes).
pub const SCOPES: &str = "https://www.googleapis.com/auth/googlehealth.activity_and_fitness.readonly \
https://www.googleapis.com/auth/googlehealth.health_metrics_and_measurements.readonly \
https://www.googleapis.com/auth/googlehealth.sleep.readonly";

/// Per project: 120,000 requests a minute and 86.4 M a day (D:developers.google.com/health/
/// rate-limits).
const LIMITS: &[RateWindow] = &[
    RateWindow { requests: 120_000, window_secs: 60 },
    RateWindow { requests: 86_400_000, window_secs: 86_400 },
];
/// Per user: 300 requests a minute (same source).
const USER_LIMITS: &[RateWindow] = &[RateWindow { requests: 300, window_secs: 60 }];

/// The catalog resources this adapter fills; `fetch` refuses any other.
const RESOURCES: &[&str] =
    &["sleep", "workouts", "body", "heartrate", "hrv", "blood_oxygen", "steps", "distance"];

/// GH-DISC `dataPoints.list` `pageSize`: at most 10000, and at most 25 for `exercise` and `sleep`.
pub const PAGE_SIZE: u32 = 10_000;
pub const SESSION_PAGE_SIZE: u32 = 25;
/// A provider that keeps answering `nextPageToken` is a bug, not data: stop there.
const MAX_PAGES: usize = 1000;

/// How a data type is filtered by day (GH-DISC `dataPoints.list` `filter`): civil (the user's
/// local) dates, `>=` the first day and `<` the day after the last.
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
    ("exercise", Kind::Session),
    ("sleep", Kind::Sleep),
];

/// The filter field of `data_type` (snake case, as GH-DISC's examples write it).
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

pub struct GoogleHealth {
    http: http::SharedClient,
    config: AppConfig,
}

impl GoogleHealth {
    /// The real hosts (PROVIDERS.md section 7, OW `google/health_api/oauth.py`).
    pub fn endpoints() -> Endpoints {
        Endpoints {
            authorize: "https://accounts.google.com/o/oauth2/v2/auth".into(),
            token: "https://oauth2.googleapis.com/token".into(),
            api: "https://health.googleapis.com".into(),
        }
    }

    pub fn new(config: AppConfig) -> Self {
        Self { http: http::client(), config }
    }

    pub fn from_env() -> Self {
        Self::new(AppConfig::from_env(SLUG, Self::endpoints()))
    }

    pub fn config(&self) -> &AppConfig {
        &self.config
    }

    async fn get(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Value, ProviderError> {
        let url = format!("{}{path}", self.config.endpoints.api);
        let request = self.http.get(url).bearer_auth(token).query(query);
        let answer = http::send_admitted(gate, SLUG, request).await?;
        http::check(SLUG, answer)?.json(SLUG)
    }

    /// The value of every data point of `data_type` in `range`'s days, every page followed.
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
        let path = format!("/v4/users/me/dataTypes/{data_type}/dataPoints");
        let key = value_key(data_type);
        let mut out = Vec::new();
        let mut next: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut q = vec![("filter", filter.clone()), ("pageSize", size.to_string())];
            if let Some(t) = &next {
                q.push(("pageToken", t.clone()));
            }
            let page: Page = serde_json::from_value(self.get(gate, token, &path, &q).await?)
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
        let identity = self.get(&NoLimit, token, "/v4/users/me/identity", &[]).await?;
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

/// A `Sleep` as the night's summary: dated by its local end, stage minutes as seconds. Classic
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

/// The main sleep of each night: naps (`metadata.nap`) only where there is nothing else, then
/// the longest; Wearlab keeps one sleep per day and provider.
fn main_sleeps(points: &[Value]) -> Vec<Value> {
    let mut by_day: BTreeMap<String, (bool, i64, Value)> = BTreeMap::new();
    for p in points {
        let Some(record) = sleep_record(p) else { continue };
        let nap = p.get("metadata").and_then(|m| m.get("nap")).and_then(Value::as_bool).unwrap_or(false);
        let rank = (!nap, record["duration_s"].as_f64().unwrap_or(0.0) as i64);
        let day = record["date"].as_str().unwrap_or_default().to_owned();
        match by_day.get(&day) {
            Some((n, d, _)) if (*n, *d) >= rank => {}
            _ => {
                by_day.insert(day, (rank.0, rank.1, record));
            }
        }
    }
    by_day.into_values().map(|(_, _, r)| r).collect()
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
pub fn resources_of(data_type: &str) -> &'static [&'static str] {
    match data_type.replace('_', "-").as_str() {
        "steps" => &["steps"],
        "distance" => &["distance"],
        "heart-rate" => &["heartrate"],
        "weight" | "body-fat" => &["body"],
        "daily-heart-rate-variability" => &["hrv"],
        "daily-oxygen-saturation" => &["blood_oxygen"],
        "exercise" => &["workouts"],
        "sleep" => &["sleep"],
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

/// Reads a request to the subscriber endpoint (GH-DISC `subscribers.create`): its
/// `Authorization` header must equal the configured secret `push_token` exactly (compared in
/// constant time). A verification answers 201; a notification names the user, the data type
/// and the intervals that changed. Google also signs each payload (`X-HEALTHAPI-SIGNATURE`,
/// ECDSA P-256 with its public key), which the sources do not publish: not checked.
pub fn read_push(push_token: Option<&str>, request: &PushRequest) -> PushOutcome {
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
    let Ok(n) = serde_json::from_value::<Notification>(body) else {
        return PushOutcome::Refused("unreadable push body".into());
    };
    let resources: Vec<String> = resources_of(&n.data.data_type).iter().map(|r| (*r).to_owned()).collect();
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
    fn slug(&self) -> &'static str {
        SLUG
    }

    fn resources(&self) -> &'static [&'static str] {
        RESOURCES
    }

    fn app_limits(&self) -> &'static [RateWindow] {
        LIMITS
    }

    fn user_limits(&self) -> &'static [RateWindow] {
        USER_LIMITS
    }

    /// Google's consent page with `access_type=offline` and `prompt=consent` (a refresh token
    /// on every consent) and `include_granted_scopes=true` (PROVIDERS.md section 7).
    fn authorize_url(&self, request: &AuthorizeRequest) -> Result<String, ProviderError> {
        let url = oauth::authorize_url(SLUG, &self.config.endpoints.authorize, request, SCOPES)?;
        let mut url = url::Url::parse(&url)
            .map_err(|_| ProviderError::Api(format!("{SLUG}'s configured authorize URL is not a URL")))?;
        url.query_pairs_mut()
            .append_pair("access_type", "offline")
            .append_pair("prompt", "consent")
            .append_pair("include_granted_scopes", "true");
        Ok(url.into())
    }

    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let credentials =
            oauth::exchange(SLUG, &self.http, &self.config.endpoints.token, exchange, ClientAuth::Body)
                .await?;
        let id = self.identity(credentials.access_token.expose()).await?;
        Ok(ProviderAccount { external_user_id: id, credentials })
    }

    async fn refresh(
        &self,
        client: &OauthClient,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        // Google usually sends no new refresh token: the old one stays.
        oauth::refresh(
            SLUG,
            &self.http,
            &self.config.endpoints.token,
            client,
            ClientAuth::Body,
            credentials,
            vec![],
        )
        .await
    }

    async fn fetch(
        &self,
        account: &ProviderAccount,
        resource: &str,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        let token = account.credentials.access_token.expose();
        let records = match resource {
            "steps" => self.series(gate, token, "steps", range, steps, "count").await?,
            "distance" => self.series(gate, token, "distance", range, distance, "m").await?,
            "heartrate" => self.series(gate, token, "heart-rate", range, heart_rate, "bpm").await?,
            "hrv" => self.series(gate, token, "daily-heart-rate-variability", range, daily_hrv, "ms").await?,
            "blood_oxygen" => {
                self.series(gate, token, "daily-oxygen-saturation", range, daily_spo2, "%").await?
            }
            "body" => self.body(gate, token, range).await?,
            "sleep" => main_sleeps(&self.points(gate, token, "sleep", range).await?),
            "workouts" => {
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
        Ok(FetchedResource { resource: resource.to_owned(), records })
    }

    /// Google's token revocation endpoint is not in the sources Wearlab is built from
    /// (PROVIDERS.md section 7: "revoke URL unknown here"): nothing is called. The user removes
    /// Wearlab's access in their Google account; the connection's tokens are deleted here.
    async fn revoke(&self, _client: &OauthClient, _account: &ProviderAccount) -> Result<(), ProviderError> {
        Ok(())
    }

    fn push(
        &self,
        _client: &OauthClient,
        verification_token: Option<&str>,
        request: &PushRequest,
    ) -> PushOutcome {
        read_push(verification_token, request)
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
