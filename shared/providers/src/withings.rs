//! Withings Public Health Data API (https://wbsapi.withings.net): OAuth 2 through
//! `/v2/oauth2` (`action=requesttoken`), every call a form POST with `action`, errors as
//! HTTP 200 with a non-zero `status` in the body, pages by `more`/`offset`, per-user
//! notification subscriptions. Facts: `../shared/PROVIDERS.md` section 4; paths, parameters,
//! answer shapes, types, units and codes as in WITH-SPEC, the Withings developer documentation's
//! OpenAPI source (api-evangelist/withings `openapi/_original/withings-data-api-openapi.yml`).
//!
//! What is mapped (value x 10^unit for measures; seconds, meters, kcal as Withings gives them):
//! - `getmeas` (`/measure`, real measures only): `body` (weight kg, fat ratio %, the day's last
//!   of each), `weight` (1), `fat` (6), `blood_oxygen` (54), `body_temperature` (12, 71), and
//!   `profile` (height, 4).
//! - `getactivity`: `activity` (steps, distance m, elevation as floors, soft -> low and
//!   intense -> high minutes, active and total kcal).
//! - `getintradayactivity`, one 24 h window a day (Withings answers only the first 24 h of a
//!   longer span): `heartrate`, `steps`, `distance`, `calories_active`.
//! - `getworkouts`: `workouts`, the sport from WITH-SPEC's workout category table; `sleep
//!   getsummary`: `sleep` (the longest per day).
//!
//! Blood pressure is not offered. WITH-SPEC reports it as one measure group holding a diastolic
//! (type 9), a systolic (10) and a pulse (11) measure, in mmHg and bpm; Wearlab's timeseries
//! sample carries one `value`, and its `blood_pressure` resource documents no systolic/diastolic
//! pair (the simulator writes one mmHg value a sample), so either half alone would be
//! mislabelled data.

use std::collections::BTreeMap;

use async_trait::async_trait;
use chrono::{DateTime, Duration, NaiveDate, SecondsFormat, Utc};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::ids::TimeZoneId;
use wearlab_domain::common::signing::hmac_sha256;
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, FetchedResource, NoLimit, OauthClient, ProviderAccount,
    ProviderCredentials, ProviderError, PushNotice, PushOutcome, PushRequest, RateWindow, RequestGate,
};

use crate::adapter::Adapter;
use crate::config::{AppConfig, Endpoints};
use crate::http;
use crate::oauth::{self, TokenAnswer};

mod categories;

pub const SLUG: &str = "withings";

/// Withings separates scopes with commas.
pub const SCOPES: &str = "user.info,user.metrics,user.activity,user.sleepevents";

/// The notification categories (`appli`) Wearlab subscribes to: every one [`resources_of_appli`]
/// maps (body measures, temperature, blood pressure/heart rate/SpO2, activity, sleep), and 46,
/// the user's profile actions, whose `unlink` tells that the user took Wearlab's access away.
/// The codes are the notifications guide's (developer.withings.com, "Notification content");
/// WITH-SPEC's `notify` operations do not list them.
pub const NOTIFY_APPLIS: [u32; 6] = [1, 2, 4, 16, 44, APPLI_USER];

/// `appli` 46: user profile actions, with `action` `update`, `unlink` or `delete`.
pub const APPLI_USER: u32 = 46;

/// A provider that keeps answering `more` is cut off here (a loop, not data).
const MAX_PAGES: usize = 10_000;

const RESOURCES: &[&str] = &[
    "profile",
    "body",
    "weight",
    "fat",
    "blood_oxygen",
    "body_temperature",
    "activity",
    "workouts",
    "sleep",
    "heartrate",
    "steps",
    "distance",
    "calories_active",
];

const LIMITS: &[RateWindow] = &[RateWindow { requests: 120, window_secs: 60 }];

/// What a body `status` other than 0 means (Withings answers HTTP 200 either way), by the
/// families of WITH-SPEC's status table (tag `response_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// "Authentication failed": 100-102, 200.
    AuthenticationFailed(i64),
    /// "Invalid params": 201-213 and the table's other invalid-params rows (216-218, 503, ...).
    InvalidParams(i64),
    /// "Unauthorized": 214, 277, 2553, 2555.
    Unauthorized(i64),
    /// 401 ("Authentication failed" in the table): the access token is invalid or expired.
    InvalidToken,
    /// 522.
    Timeout,
    /// 601.
    TooManyRequests,
    /// "An error occurred", 524 "Bad state", 2554 "Not implemented", and codes the table does
    /// not list.
    Other(i64),
}

impl Status {
    pub fn from_code(code: i64) -> Self {
        match code {
            0 => Self::Ok,
            401 => Self::InvalidToken,
            100..=102 | 200 => Self::AuthenticationFailed(code),
            214 | 277 | 2553 | 2555 => Self::Unauthorized(code),
            201..=213
            | 216..=218
            | 220..=221
            | 223
            | 225
            | 227..=230
            | 234..=236
            | 238
            | 240..=252
            | 254
            | 260..=267
            | 271..=272
            | 275..=276
            | 283..=288
            | 290
            | 293..=295
            | 297
            | 300..=304
            | 321
            | 323..=353
            | 380..=382
            | 400
            | 501..=511
            | 523
            | 532
            | 3017..=3019 => Self::InvalidParams(code),
            522 => Self::Timeout,
            601 => Self::TooManyRequests,
            other => Self::Other(other),
        }
    }

    /// The error of a data call (Bearer token) answered with this status.
    fn data_error(self) -> ProviderError {
        match self {
            Self::InvalidToken => ProviderError::AccessTokenRefused,
            Self::AuthenticationFailed(c) | Self::Unauthorized(c) => {
                ProviderError::CredentialError(format!("{SLUG} answered status {c}"))
            }
            Self::TooManyRequests => {
                ProviderError::RateLimited { retry_after_secs: http::DEFAULT_RETRY_AFTER_SECS }
            }
            Self::Timeout => ProviderError::Api(format!("{SLUG} timed out (status 522)")),
            Self::InvalidParams(c) | Self::Other(c) => {
                ProviderError::Api(format!("{SLUG} answered status {c}"))
            }
            Self::Ok => ProviderError::Api(format!("{SLUG} answered status 0 without a body")),
        }
    }

    /// The error of a token call: a refusal of the code or refresh token (or of the client)
    /// is `refusal`; a rate limit or a failure of Withings is as for data calls.
    fn token_error(self, refusal: fn(String) -> ProviderError) -> ProviderError {
        match self {
            Self::AuthenticationFailed(c) | Self::Unauthorized(c) | Self::InvalidParams(c) => {
                refusal(format!("{SLUG}'s token endpoint answered status {c}"))
            }
            Self::InvalidToken => refusal(format!("{SLUG}'s token endpoint answered status 401")),
            other => other.data_error(),
        }
    }
}

/// Every answer: `{status, body}`.
#[derive(Debug, Deserialize)]
struct Envelope {
    status: i64,
    #[serde(default)]
    body: Value,
}

/// Withings writes `more` as a boolean on some services and 0/1 on others.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum More {
    Flag(bool),
    Count(i64),
}

#[derive(Debug, Deserialize)]
struct Paging {
    #[serde(default)]
    more: Option<More>,
    #[serde(default)]
    offset: Option<i64>,
}

impl Paging {
    /// The offset of the next page, when there is one.
    fn next(&self) -> Option<i64> {
        let more = match self.more {
            Some(More::Flag(b)) => b,
            Some(More::Count(n)) => n != 0,
            None => false,
        };
        if more { self.offset } else { None }
    }
}

/// A user id, which Withings writes as a number or a string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum UserId {
    Text(String),
    Number(i64),
}

impl std::fmt::Display for UserId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Text(s) => f.write_str(s),
            Self::Number(n) => write!(f, "{n}"),
        }
    }
}

#[derive(Debug, Deserialize)]
struct TokenBody {
    userid: UserId,
    #[serde(flatten)]
    token: TokenAnswer,
}

#[derive(Debug, Deserialize)]
struct Nonce {
    nonce: String,
}

/// The measure groups of every page, and the user's zone.
#[derive(Debug)]
struct Measures {
    timezone: Option<String>,
    measuregrps: Vec<MeasureGroup>,
}

#[derive(Debug, Deserialize)]
struct MeasureGroup {
    date: i64,
    #[serde(default)]
    measures: Vec<Measure>,
}

#[derive(Debug, Deserialize)]
struct Measure {
    value: i64,
    #[serde(rename = "type")]
    kind: i64,
    unit: i32,
}

impl Measure {
    /// value x 10^unit (divided for negative units: `72450 / 1000` is exactly the nearest
    /// double to 72.45, `72450 * 0.001` is not).
    fn real(&self) -> f64 {
        let v = self.value as f64;
        if self.unit < 0 { v / 10f64.powi(-self.unit) } else { v * 10f64.powi(self.unit) }
    }
}

#[derive(Debug, Deserialize)]
struct Activity {
    date: String,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    steps: Option<f64>,
    #[serde(default)]
    distance: Option<f64>,
    #[serde(default)]
    elevation: Option<f64>,
    #[serde(default)]
    soft: Option<f64>,
    #[serde(default)]
    intense: Option<f64>,
    #[serde(default)]
    calories: Option<f64>,
    #[serde(default)]
    totalcalories: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Workout {
    /// A code of WITH-SPEC's workout category table ([`categories::CATEGORIES`]).
    #[serde(default)]
    category: Option<i64>,
    startdate: i64,
    enddate: i64,
    date: String,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    data: WorkoutData,
}

#[derive(Debug, Default, Deserialize)]
struct WorkoutData {
    #[serde(default)]
    calories: Option<f64>,
    #[serde(default)]
    distance: Option<f64>,
    #[serde(default)]
    hr_average: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct SleepSummary {
    startdate: i64,
    enddate: i64,
    date: String,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    data: SleepData,
}

#[derive(Debug, Default, Deserialize)]
struct SleepData {
    #[serde(default)]
    total_timeinbed: Option<i64>,
    #[serde(default)]
    lightsleepduration: Option<i64>,
    #[serde(default)]
    remsleepduration: Option<i64>,
    #[serde(default)]
    deepsleepduration: Option<i64>,
    #[serde(default)]
    wakeupduration: Option<i64>,
    #[serde(default)]
    sleep_efficiency: Option<f64>,
    #[serde(default)]
    hr_average: Option<f64>,
}

/// Intraday samples: WITH-SPEC's `series` is an object keyed by epoch second (`$timestamp`).
/// Read as a `Value`, so that anything else (no samples written as a list, say) is no rows rather
/// than an unreadable answer.
#[derive(Debug, Deserialize)]
struct Intraday {
    #[serde(default)]
    series: Value,
}

/// The request signature of Withings's signed calls: hex HMAC-SHA256 with the client secret
/// over the values joined by commas (`action,client_id[,timestamp][,nonce]`).
pub fn signature(client_secret: &Secret, values: &[&str]) -> String {
    hex::encode(hmac_sha256(client_secret.expose().as_bytes(), values.join(",").as_bytes()))
}

fn epoch(secs: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(secs, 0)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn in_range(range: DateRange, day: NaiveDate) -> bool {
    range.start <= day && day <= range.end
}

/// The longest span of one sleep call: WITH-SPEC's sleep `enddate` (in `sleep_summary_object`
/// too) says "A single call can span up to 7 days maximum".
const SLEEP_SPAN_DAYS: u64 = 7;

/// `range` cut into consecutive spans of at most `days` days.
fn spans(range: DateRange, days: u64) -> Vec<DateRange> {
    let mut out = Vec::new();
    let mut start = range.start;
    while start <= range.end {
        let end = (start + chrono::Days::new(days - 1)).min(range.end);
        out.push(DateRange { start, end });
        let Some(next) = end.succ_opt() else { break };
        start = next;
    }
    out
}

/// Whether a Withings `YYYY-MM-DD` day is in the range.
fn on_day_in(range: DateRange, ymd: &str) -> bool {
    ymd.parse().is_ok_and(|d| in_range(range, d))
}

fn midnight(day: NaiveDate) -> DateTime<Utc> {
    day.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc()
}

/// The local day of `t` in the IANA zone `zone` (UTC when absent or unknown).
fn local_day(t: DateTime<Utc>, zone: Option<&str>) -> NaiveDate {
    zone.and_then(TimeZoneId::parse).map_or_else(|| t.date_naive(), |tz| tz.local_date(t))
}

fn with_zone(mut record: Value, zone: Option<&str>) -> Value {
    if let (Some(zone), Some(map)) = (zone, record.as_object_mut()) {
        map.insert("timezone".into(), Value::String(zone.to_owned()));
    }
    record
}

/// Sets `key` when the value is there.
fn put(record: &mut Value, key: &str, value: Option<f64>) {
    if let Some(v) = value {
        record[key] = json!(v);
    }
}

/// The `getmeas` types of a measure resource, and the unit of its rows.
fn measure_types(resource: &str) -> Option<(&'static [i64], &'static str)> {
    Some(match resource {
        "weight" => (&[1], "kg"),
        "fat" => (&[6], "percent"),
        "blood_oxygen" => (&[54], "%"),
        "body_temperature" => (&[12, 71], "°C"),
        _ => return None,
    })
}

/// Rows of the measures of `types`, each at its group's time.
fn measure_rows(m: &Measures, types: &[i64], unit: &str, range: DateRange) -> Vec<Value> {
    let zone = m.timezone.as_deref();
    let mut rows = Vec::new();
    for g in &m.measuregrps {
        let Some(at) = epoch(g.date) else { continue };
        // Series are stored by UTC day.
        if !in_range(range, at.date_naive()) {
            continue;
        }
        for x in g.measures.iter().filter(|x| types.contains(&x.kind)) {
            rows.push(with_zone(json!({"timestamp": rfc3339(at), "value": x.real(), "unit": unit}), zone));
        }
    }
    rows
}

/// A body record per local day: the day's last weight and last fat ratio.
fn body_records(m: &Measures, range: DateRange) -> Vec<Value> {
    let zone = m.timezone.as_deref();
    let mut days: BTreeMap<NaiveDate, [(i64, Option<f64>); 2]> = BTreeMap::new();
    for g in &m.measuregrps {
        let Some(at) = epoch(g.date) else { continue };
        let day = local_day(at, zone);
        if !in_range(range, day) {
            continue;
        }
        let entry = days.entry(day).or_insert([(i64::MIN, None), (i64::MIN, None)]);
        for x in &g.measures {
            let slot = match x.kind {
                1 => 0,
                6 => 1,
                _ => continue,
            };
            if g.date >= entry[slot].0 {
                entry[slot] = (g.date, Some(x.real()));
            }
        }
    }
    days.into_iter()
        .filter(|(_, [w, f])| w.1.is_some() || f.1.is_some())
        .map(|(day, [w, f])| {
            let mut r = json!({"date": day.to_string()});
            put(&mut r, "weight_kg", w.1);
            put(&mut r, "fat_percent", f.1);
            with_zone(r, zone)
        })
        .collect()
}

/// The profile: the last height measured.
fn profile_records(m: &Measures) -> Vec<Value> {
    m.measuregrps
        .iter()
        .flat_map(|g| g.measures.iter().filter(|x| x.kind == 4).map(move |x| (g.date, x.real())))
        .max_by_key(|(date, _)| *date)
        .map(|(_, height)| vec![json!({"height_m": height})])
        .unwrap_or_default()
}

fn activity_records(activities: &[Activity], range: DateRange) -> Vec<Value> {
    activities
        .iter()
        .filter(|a| on_day_in(range, &a.date))
        .map(|a| {
            let mut r = json!({"date": a.date});
            put(&mut r, "steps", a.steps);
            put(&mut r, "distance_m", a.distance);
            put(&mut r, "floors_climbed", a.elevation);
            put(&mut r, "low_minutes", a.soft.map(|s| s / 60.0));
            put(&mut r, "high_minutes", a.intense.map(|s| s / 60.0));
            put(&mut r, "calories_active", a.calories);
            put(&mut r, "calories_total", a.totalcalories);
            with_zone(r, a.timezone.as_deref())
        })
        .collect()
}

fn workout_records(workouts: &[Workout], range: DateRange) -> Vec<Value> {
    workouts
        .iter()
        .filter(|w| on_day_in(range, &w.date))
        .filter_map(|w| {
            let (start, end) = (epoch(w.startdate)?, epoch(w.enddate)?);
            let sport = w.category.map_or_else(|| "other".to_owned(), categories::sport);
            let mut r = json!({
                "date": w.date,
                "time_start": rfc3339(start),
                "time_end": rfc3339(end),
                "sport": sport,
            });
            put(&mut r, "calories", w.data.calories);
            put(&mut r, "distance_m", w.data.distance);
            put(&mut r, "average_hr", w.data.hr_average);
            Some(with_zone(r, w.timezone.as_deref()))
        })
        .collect()
}

/// Sleep summaries: the longest per day (a nap and a night can share a day).
fn sleep_records(sleeps: &[SleepSummary], range: DateRange) -> Vec<Value> {
    let mut by_day: BTreeMap<NaiveDate, (i64, Value)> = BTreeMap::new();
    for s in sleeps {
        let Ok(day) = s.date.parse::<NaiveDate>() else { continue };
        let (Some(start), Some(stop)) = (epoch(s.startdate), epoch(s.enddate)) else { continue };
        if !in_range(range, day) {
            continue;
        }
        let d = &s.data;
        let in_bed = d.total_timeinbed.unwrap_or(s.enddate - s.startdate);
        let mut r = json!({
            "date": s.date,
            "bedtime_start": rfc3339(start),
            "bedtime_stop": rfc3339(stop),
            "duration_s": in_bed,
            "deep_s": d.deepsleepduration.unwrap_or(0),
            "rem_s": d.remsleepduration.unwrap_or(0),
            "light_s": d.lightsleepduration.unwrap_or(0),
            "awake_s": d.wakeupduration.unwrap_or(0),
        });
        // Withings gives the efficiency as a ratio; Wearlab's is a percentage (1-100).
        put(
            &mut r,
            "efficiency",
            d.sleep_efficiency.map(|e| if e <= 1.0 { (e * 1000.0).round() / 10.0 } else { e }),
        );
        put(&mut r, "hr_average", d.hr_average);
        let r = with_zone(r, s.timezone.as_deref());
        if by_day.get(&day).is_none_or(|(longest, _)| in_bed > *longest) {
            by_day.insert(day, (in_bed, r));
        }
    }
    by_day.into_values().map(|(_, r)| r).collect()
}

/// The intraday field of a series resource and the unit of its rows.
fn intraday_field(resource: &str) -> Option<(&'static str, &'static str)> {
    Some(match resource {
        "heartrate" => ("heart_rate", "bpm"),
        "steps" => ("steps", "count"),
        "distance" => ("distance", "m"),
        "calories_active" => ("calories", "kcal"),
        _ => return None,
    })
}

fn intraday_rows(intraday: Intraday, field: &str, unit: &str) -> Vec<Value> {
    let Value::Object(samples) = intraday.series else { return vec![] };
    let mut rows: Vec<(i64, Value)> = samples
        .into_iter()
        .filter_map(|(at, sample)| {
            let secs = at.parse::<i64>().ok()?;
            let value = sample.get(field)?.as_f64()?;
            Some((secs, json!({"timestamp": rfc3339(epoch(secs)?), "value": value, "unit": unit})))
        })
        .collect();
    rows.sort_by_key(|(secs, _)| *secs);
    rows.into_iter().map(|(_, r)| r).collect()
}

/// The catalog resources a notification category (`appli`) concerns; none for categories
/// Wearlab does not map (bed in/out, ECG, ...). Appli 1 is every `getmeas` measure of the
/// scale and the thermometers' body and skin temperature (measure types 71 and 73) among them.
/// Appli 46's unlink is read apart ([`read_push`]).
pub fn resources_of_appli(appli: i64) -> &'static [&'static str] {
    match appli {
        1 => &["body", "weight", "fat", "profile", "body_temperature"],
        2 => &["body_temperature"],
        4 => &["blood_oxygen"],
        16 => &["activity", "workouts", "heartrate", "steps", "distance", "calories_active"],
        44 => &["sleep"],
        _ => &[],
    }
}

/// Withings's notification form.
#[derive(Debug, Deserialize)]
struct Notification {
    userid: String,
    appli: i64,
    #[serde(default)]
    startdate: Option<i64>,
    #[serde(default)]
    enddate: Option<i64>,
    /// Appli 46's profile action (`update`, `unlink`, `delete`).
    #[serde(default)]
    action: Option<String>,
}

/// Reads a request to Withings's push endpoint. HEAD and GET are Withings's reachability
/// check before it registers a callback (answered 200). A POST is the form `userid, appli,
/// startdate, enddate`: Withings documents no signature, so a notice is only a hint to fetch
/// with Wearlab's own credentials (a forged one costs at most a redundant fetch).
pub fn read_push(request: &PushRequest) -> PushOutcome {
    match request.method.to_ascii_uppercase().as_str() {
        "HEAD" | "GET" => return PushOutcome::Handshake { status: 200, body: None },
        "POST" => {}
        _ => return PushOutcome::Refused(format!("{SLUG} push with an unexpected method")),
    }
    let Ok(n) = serde_urlencoded::from_bytes::<Notification>(&request.body) else {
        return PushOutcome::Refused(format!("{SLUG} push with an unreadable form"));
    };
    if n.userid.trim().is_empty() {
        return PushOutcome::Refused(format!("{SLUG} push without a user id"));
    }
    let user = n.userid.trim().to_owned();
    if n.appli == i64::from(APPLI_USER) {
        // The user unlinked Wearlab (or deleted the account). The notice is unsigned, so it is
        // not taken as the end of the connection by itself: the connection is polled, and the
        // tokens Withings invalidated end it (the refused refresh marks it, as any revoked
        // access is); a forged notice costs one poll.
        return match n.action.as_deref() {
            Some("unlink" | "delete") => PushOutcome::Notices(vec![PushNotice {
                external_user_id: user,
                resources: vec!["profile".to_owned()],
                range: None,
            }]),
            _ => PushOutcome::Notices(vec![]),
        };
    }
    let resources = resources_of_appli(n.appli);
    if resources.is_empty() {
        return PushOutcome::Notices(vec![]);
    }
    // The range is in epoch seconds and the user's days are local: a day either side covers
    // any zone.
    let range = match (n.startdate.and_then(epoch), n.enddate.and_then(epoch)) {
        (Some(a), Some(b)) => Some(DateRange {
            start: a.min(b).date_naive() - Duration::days(1),
            end: a.max(b).date_naive() + Duration::days(1),
        }),
        _ => None,
    };
    PushOutcome::Notices(vec![PushNotice {
        external_user_id: user,
        resources: resources.iter().map(|r| (*r).to_owned()).collect(),
        range,
    }])
}

pub struct Withings {
    config: AppConfig,
    http: http::SharedClient,
}

impl Withings {
    pub fn new(config: AppConfig) -> Self {
        Self { config, http: http::client() }
    }

    /// Withings's real hosts.
    pub fn endpoints() -> Endpoints {
        Endpoints {
            authorize: "https://account.withings.com/oauth2_user/authorize2".into(),
            token: "https://wbsapi.withings.net/v2/oauth2".into(),
            api: "https://wbsapi.withings.net".into(),
        }
    }

    /// POSTs `form` to `url` and reads the envelope; a non-zero status is `on_status`'s error.
    async fn post<T: DeserializeOwned>(
        &self,
        gate: &dyn RequestGate,
        url: &str,
        bearer: Option<&Secret>,
        form: &[(&str, String)],
        on_status: impl Fn(Status) -> ProviderError,
    ) -> Result<T, ProviderError> {
        let body = serde_urlencoded::to_string(form).map_err(|e| ProviderError::Api(e.to_string()))?;
        let mut request =
            self.http.post(url).header("content-type", "application/x-www-form-urlencoded").body(body);
        if let Some(token) = bearer {
            request = request.bearer_auth(token.expose());
        }
        let envelope: Envelope =
            http::check(SLUG, http::send_admitted(gate, SLUG, request).await?)?.json(SLUG)?;
        match Status::from_code(envelope.status) {
            Status::Ok => serde_json::from_value(envelope.body)
                .map_err(|e| ProviderError::Api(format!("{SLUG} answered an unreadable body: {e}"))),
            status => Err(on_status(status)),
        }
    }

    /// A data call with the user's token.
    async fn data<T: DeserializeOwned>(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        service: &str,
        form: &[(&str, String)],
    ) -> Result<T, ProviderError> {
        let url = format!("{}/{service}", self.config.endpoints.api);
        self.post(gate, &url, Some(&credentials.access_token), form, Status::data_error).await
    }

    /// Every page's body of a listing (`more`/`offset`).
    async fn pages(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        service: &str,
        form: Vec<(&str, String)>,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut out = Vec::new();
        let mut offset: Option<i64> = None;
        for _ in 0..MAX_PAGES {
            let mut page_form = form.clone();
            if let Some(o) = offset {
                page_form.push(("offset", o.to_string()));
            }
            let body: Value = self.data(gate, credentials, service, &page_form).await?;
            let next = Paging::deserialize(&body).ok().and_then(|p| p.next());
            out.push(body);
            match next {
                // An offset that does not move would page forever.
                Some(o) if Some(o) == offset => {
                    return Err(ProviderError::Api(format!("{SLUG} answered the same offset twice")));
                }
                Some(o) => offset = Some(o),
                None => return Ok(out),
            }
        }
        Err(ProviderError::Api(format!("{SLUG} kept paging past {MAX_PAGES} pages")))
    }

    /// The records under `key` of every page of a listing.
    async fn paged<T: DeserializeOwned>(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        service: &str,
        form: Vec<(&str, String)>,
        key: &str,
    ) -> Result<Vec<T>, ProviderError> {
        let mut out = Vec::new();
        for page in self.pages(gate, credentials, service, form).await? {
            if let Some(list) = page.get(key) {
                let records: Vec<T> = Vec::deserialize(list)
                    .map_err(|e| ProviderError::Api(format!("{SLUG} answered unreadable {key}: {e}")))?;
                out.extend(records);
            }
        }
        Ok(out)
    }

    /// Measures of `types` (real ones, not goals) in `range` widened by a day each side, since
    /// groups are kept by their local day; all time when `range` is `None`.
    async fn measures(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        types: &[i64],
        range: Option<DateRange>,
    ) -> Result<Measures, ProviderError> {
        let list = types.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let mut form =
            vec![("action", "getmeas".to_owned()), ("meastypes", list), ("category", "1".to_owned())];
        if let Some(r) = range {
            form.push(("startdate", (midnight(r.start) - Duration::days(1)).timestamp().to_string()));
            form.push(("enddate", (midnight(r.end) + Duration::days(2)).timestamp().to_string()));
        }
        let pages = self.pages(gate, credentials, "measure", form).await?;
        // The user's zone is the same on every page.
        let timezone =
            pages.first().and_then(|p| p.get("timezone")).and_then(Value::as_str).map(str::to_owned);
        let mut measuregrps = Vec::new();
        for page in &pages {
            if let Some(groups) = page.get("measuregrps") {
                let groups: Vec<MeasureGroup> = Vec::deserialize(groups)
                    .map_err(|e| ProviderError::Api(format!("{SLUG} answered unreadable measures: {e}")))?;
                measuregrps.extend(groups);
            }
        }
        Ok(Measures { timezone, measuregrps })
    }

    async fn token(
        &self,
        client: &OauthClient,
        mut form: Vec<(&str, String)>,
        refusal: fn(String) -> ProviderError,
    ) -> Result<TokenBody, ProviderError> {
        form.insert(0, ("action", "requesttoken".to_owned()));
        form.push(("client_id", client.client_id.clone()));
        form.push(("client_secret", client.client_secret.expose().to_owned()));
        self.post(&NoLimit, &self.config.endpoints.token, None, &form, |s| s.token_error(refusal)).await
    }

    /// A nonce for one signed call (`/v2/signature action=getnonce`), signed at `timestamp`.
    async fn nonce(&self, client: &OauthClient, timestamp: i64) -> Result<String, ProviderError> {
        let ts = timestamp.to_string();
        let form = [
            ("action", "getnonce".to_owned()),
            ("client_id", client.client_id.clone()),
            ("timestamp", ts.clone()),
            ("signature", signature(&client.client_secret, &["getnonce", &client.client_id, &ts])),
        ];
        let url = format!("{}/v2/signature", self.config.endpoints.api);
        let nonce: Nonce =
            self.post(&NoLimit, &url, None, &form, |s| s.token_error(ProviderError::CredentialError)).await?;
        Ok(nonce.nonce)
    }

    /// Subscribes `callback_url` to the user's notifications of every category in
    /// [`NOTIFY_APPLIS`] (`/notify action=subscribe`). Withings checks first that the URL
    /// answers HEAD with 2xx.
    pub async fn subscribe(
        &self,
        account: &ProviderAccount,
        callback_url: &str,
    ) -> Result<(), ProviderError> {
        for appli in NOTIFY_APPLIS {
            let form = [
                ("action", "subscribe".to_owned()),
                ("callbackurl", callback_url.to_owned()),
                ("appli", appli.to_string()),
                ("comment", "Wearlab".to_owned()),
            ];
            let _: Value = self.data(&NoLimit, &account.credentials, "notify", &form).await?;
        }
        tracing::info!(provider = SLUG, external_user_id = %account.external_user_id, "notifications subscribed");
        Ok(())
    }
}

#[async_trait]
impl Adapter for Withings {
    fn slug(&self) -> &'static str {
        SLUG
    }

    fn resources(&self) -> &'static [&'static str] {
        RESOURCES
    }

    fn app_limits(&self) -> &'static [RateWindow] {
        LIMITS
    }

    fn authorize_url(&self, request: &AuthorizeRequest) -> Result<String, ProviderError> {
        oauth::authorize_url(SLUG, &self.config.endpoints.authorize, request, SCOPES)
    }

    /// `action=requesttoken` with the client in the body; the user id comes with the tokens.
    /// Withings's codes live 30 s, so the callback exchanges at once.
    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let now = Utc::now();
        let form = oauth::authorization_code_form(exchange);
        let answer = self.token(&exchange.client, form, ProviderError::CredentialError).await?;
        let external_user_id = answer.userid.to_string();
        tracing::info!(provider = SLUG, external_user_id = %external_user_id, "linked");
        Ok(ProviderAccount { external_user_id, credentials: answer.token.into_credentials(now, None) })
    }

    async fn refresh(
        &self,
        client: &OauthClient,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        let Some(refresh_token) = &credentials.refresh_token else {
            return Err(ProviderError::Revoked(format!("{SLUG} credentials hold no refresh token")));
        };
        let now = Utc::now();
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.expose().to_owned()),
        ];
        let answer = self.token(client, form, ProviderError::Revoked).await?;
        Ok(answer.token.into_credentials(now, Some(refresh_token)))
    }

    async fn fetch(
        &self,
        account: &ProviderAccount,
        resource: &str,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        let c = &account.credentials;
        let ymd_in = |range: DateRange, action: &str, fields: &str| {
            vec![
                ("action", action.to_owned()),
                ("startdateymd", range.start.to_string()),
                ("enddateymd", range.end.to_string()),
                ("data_fields", fields.to_owned()),
            ]
        };
        let ymd = |action: &str, fields: &str| ymd_in(range, action, fields);
        let records = match resource {
            "body" => body_records(&self.measures(gate, c, &[1, 6], Some(range)).await?, range),
            "profile" => profile_records(&self.measures(gate, c, &[4], None).await?),
            "activity" => {
                let form = ymd(
                    "getactivity",
                    "steps,distance,elevation,soft,moderate,intense,active,calories,totalcalories",
                );
                activity_records(&self.paged(gate, c, "v2/measure", form, "activities").await?, range)
            }
            "workouts" => {
                let form = ymd("getworkouts", "calories,hr_average,distance");
                workout_records(&self.paged(gate, c, "v2/measure", form, "series").await?, range)
            }
            "sleep" => {
                let fields = "total_timeinbed,lightsleepduration,remsleepduration,deepsleepduration,\
                              wakeupduration,sleep_efficiency,hr_average";
                let mut summaries = Vec::new();
                for span in spans(range, SLEEP_SPAN_DAYS) {
                    let form = ymd_in(span, "getsummary", fields);
                    summaries.extend(self.paged::<SleepSummary>(gate, c, "v2/sleep", form, "series").await?);
                }
                sleep_records(&summaries, range)
            }
            r => {
                if let Some((types, unit)) = measure_types(r) {
                    measure_rows(&self.measures(gate, c, types, Some(range)).await?, types, unit, range)
                } else if let Some((field, unit)) = intraday_field(r) {
                    // Withings answers only the first 24 h of a longer span: one call a day.
                    let mut rows = Vec::new();
                    for day in range.days() {
                        let start = midnight(day).timestamp();
                        let form = [
                            ("action", "getintradayactivity".to_owned()),
                            ("startdate", start.to_string()),
                            ("enddate", (start + 86_399).to_string()),
                            ("data_fields", field.to_owned()),
                        ];
                        rows.extend(intraday_rows(
                            self.data(gate, c, "v2/measure", &form).await?,
                            field,
                            unit,
                        ));
                    }
                    rows
                } else {
                    return Err(ProviderError::Unsupported(format!("{SLUG} does not serve {r}")));
                }
            }
        };
        tracing::debug!(provider = SLUG, resource, records = records.len(), "fetched");
        Ok(FetchedResource { resource: resource.to_owned(), records })
    }

    /// `action=revoke` is a signed call: a nonce first (`getnonce`), then the revoke signed
    /// over `revoke,client_id,nonce`, naming the user.
    async fn revoke(&self, client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError> {
        if account.external_user_id.is_empty() {
            return Err(ProviderError::Api(format!("{SLUG} revokes by user id, and none was given")));
        }
        let nonce = self.nonce(client, Utc::now().timestamp()).await?;
        let form = [
            ("action", "revoke".to_owned()),
            ("client_id", client.client_id.clone()),
            ("nonce", nonce.clone()),
            ("signature", signature(&client.client_secret, &["revoke", &client.client_id, &nonce])),
            ("userid", account.external_user_id.clone()),
        ];
        let _: Value = self
            .post(&NoLimit, &self.config.endpoints.token, None, &form, |s| {
                s.token_error(ProviderError::CredentialError)
            })
            .await?;
        tracing::info!(provider = SLUG, external_user_id = %account.external_user_id, "access revoked");
        Ok(())
    }

    /// Subscribes the user's notifications (see [`Withings::subscribe`]).
    async fn after_link(&self, account: &ProviderAccount, callback_url: &str) -> Result<(), ProviderError> {
        self.subscribe(account, callback_url).await
    }

    fn push(
        &self,
        _client: &OauthClient,
        _verification_token: Option<&str>,
        request: &PushRequest,
    ) -> PushOutcome {
        read_push(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_are_value_times_ten_to_the_unit() {
        let m = |value, unit| Measure { value, kind: 1, unit }.real();
        assert_eq!(m(58788, -3), 58.788);
        assert_eq!(m(72450, -3), 72.45);
        assert_eq!(m(97, 0), 97.0);
        assert_eq!(m(5, 2), 500.0);
    }

    #[test]
    fn ranges_are_cut_into_spans_of_at_most_seven_days() {
        let day = |s: &str| s.parse::<NaiveDate>().unwrap();
        let range = |a, b| DateRange { start: day(a), end: day(b) };
        assert_eq!(spans(range("2026-11-01", "2026-11-01"), 7), vec![range("2026-11-01", "2026-11-01")]);
        assert_eq!(spans(range("2026-11-01", "2026-11-07"), 7), vec![range("2026-11-01", "2026-11-07")]);
        assert_eq!(
            spans(range("2026-11-01", "2026-11-20"), 7),
            vec![
                range("2026-11-01", "2026-11-07"),
                range("2026-11-08", "2026-11-14"),
                range("2026-11-15", "2026-11-20")
            ]
        );
    }

    #[test]
    fn the_user_id_is_read_as_a_number_or_as_text() {
        let body = |userid: &str| {
            serde_json::from_str::<TokenBody>(&format!(r#"{{"userid": {userid}, "access_token": "a"}}"#))
                .map(|b| b.userid.to_string())
                .unwrap()
        };
        assert_eq!(body("363"), "363");
        assert_eq!(body(r#""363""#), "363");
    }

    #[test]
    fn every_status_family_is_typed() {
        assert_eq!(Status::from_code(0), Status::Ok);
        for c in [100, 101, 102, 200] {
            assert_eq!(Status::from_code(c), Status::AuthenticationFailed(c));
        }
        for c in 201..=213 {
            assert_eq!(Status::from_code(c), Status::InvalidParams(c));
        }
        for c in [216, 218, 238, 254, 300, 353, 400, 503, 511, 523, 532, 3017, 3019] {
            assert_eq!(Status::from_code(c), Status::InvalidParams(c));
        }
        for c in [214, 277, 2553, 2555] {
            assert_eq!(Status::from_code(c), Status::Unauthorized(c));
        }
        assert_eq!(Status::from_code(401), Status::InvalidToken);
        assert_eq!(Status::from_code(522), Status::Timeout);
        assert_eq!(Status::from_code(601), Status::TooManyRequests);
        // "An error occurred", "Bad state", "Not implemented", and an unlisted code.
        for c in [215, 219, 305, 524, 602, 2554, 10000, 99] {
            assert_eq!(Status::from_code(c), Status::Other(c));
        }
    }
}
