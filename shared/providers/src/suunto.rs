//! Suunto API Zone (the Suunto Cloud API, https://cloudapi.suunto.com), catalog slug `suunto`:
//! OAuth 2 with the client by HTTP Basic at the token endpoint, the connection keyed by the token
//! answer's `user` (the webhooks' `username`), the deployment's API Zone subscription key in the
//! `Ocp-Apim-Subscription-Key` header of every data call, workouts and the 24/7 samples, webhooks
//! carrying the data inline and signed with HMAC-SHA256 of the raw body. Facts: Suunto's own pages
//! (https://apizone.suunto.com/how-to-start, the Authorisation, Workout and Daily Activity API
//! operation pages under https://apizone.suunto.com/docs/services/, and
//! https://suunto-api.developer.azure-api.net/webhooks), with the Open Wearables project
//! (repository `the-momentum/open-wearables`, `backend/app/services/providers/suunto/`) and the
//! c2corg tracking service (repository `c2corg/c2c_tracking`, `src/server/suunto/suunto.api.ts`)
//! where Suunto's pages say nothing; the Suunto section of `docs/PROVIDERS.md` lists which fact
//! comes from where.
//!
//! What is mapped (units: seconds, kcal, metres, bpm, ms, %):
//! - `workouts`: `/v3/workouts?since&until` (epoch ms) paged by `limit`/`offset`; `startTime`
//!   (epoch ms) and `stopTime` (else start plus `totalTime` s), `timeOffsetInMinutes` as the zone,
//!   `energyConsumption` kcal, `totalDistance` m, `hrdata.workoutAvgHR` bpm, `activityId` as the
//!   sport.
//! - `activity`: `/247/daily-activity-statistics?startdate&enddate` (UTC, at most 28 days), steps
//!   and energy (J -> kcal, as `calories_active`).
//! - `sleep`: `/247samples/sleep?from&to` (epoch ms, at most 28 days): bedtimes, stage seconds,
//!   naps, average heart rate.
//! - `heartrate`, `steps`, `calories_active`, `blood_oxygen`, `hrv`: `/247samples/activity?from&to`,
//!   each sample's `HR` (bpm), `StepCount`, `EnergyConsumption` (J -> kcal), `SpO2` (0-1 -> %),
//!   `HRV` (RMSSD, ms).
//! - `workout_stream`: each workout's FIT export (`/v2/workout/exportFit/{workoutKey}`, the
//!   Workout API's operation page), decoded by [`crate::fit`]: power (W), cadence (rpm), speed
//!   (m/s) and altitude (m), in the workout's zone. A workout without a recording (404) has none.

use async_trait::async_trait;
use base64::Engine;
use chrono::{DateTime, Duration, FixedOffset, NaiveDate, NaiveDateTime, TimeZone, Utc};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::common::signing::{constant_time_eq, hex_hmac_sha256, hmac_sha256};
use wearlab_domain::ports::providers::{
    AuthorizeRequest, CodeExchange, DateRange, FetchedResource, OauthClient, ProviderAccount,
    ProviderCredentials, ProviderError, PushNotice, PushOutcome, PushRequest, RateWindow, RequestGate,
};
use wearlab_models::Resource;

use crate::adapter::{Adapter, sport_slug};
use crate::config::{AppConfig, Endpoints};
use crate::description::{Api, ProviderDescription, Refresh};
use crate::fit::{self, FitActivity};
use crate::http;
use crate::kept::{Kept, TokenDigest, digest};
use crate::oauth::{self, ClientAuth, TokenAnswer};
use crate::whoop::{etc_zone, in_range, rfc3339, with_zone};

pub const SLUG: &str = "suunto";

/// The variable holding the deployment's API Zone subscription key (AWS: the SSM SecureString
/// `<ProviderSecretsPath>/suunto/subscription_key`).
pub const SUBSCRIPTION_KEY_VAR: &str = "WEARLAB_PROVIDER_SUUNTO_SUBSCRIPTION_KEY";

/// The header every data call carries the subscription key in (Suunto's operation pages:
/// "Subscription key which provides access to this API. Found in your Profile.").
pub const SUBSCRIPTION_HEADER: &str = "ocp-apim-subscription-key";

/// The header a webhook is signed in (https://suunto-api.developer.azure-api.net/webhooks).
pub const SIGNATURE_HEADER: &str = "x-hmac-sha256-signature";

/// The catalog resources `fetch` fills.
const RESOURCES: &[Resource] = &[
    Resource::Activity,
    Resource::Sleep,
    Resource::Workouts,
    Resource::Heartrate,
    Resource::Steps,
    Resource::CaloriesActive,
    Resource::BloodOxygen,
    Resource::Hrv,
    Resource::WorkoutStream,
];

/// Suunto publishes no quota for an API Zone subscription. Wearlab keeps one app to 120 requests
/// a minute across all its users and instances (its own ceiling, the figure Withings publishes
/// for an app): one user's 90-day history is a few dozen calls, and Suunto's own 429s are read as
/// any provider's.
const LIMITS: &[RateWindow] = &[RateWindow { requests: 120, window_secs: 60 }];

/// How long a span of activity samples is kept: the five series of one pipeline round read the
/// same span (they run at once), a later poll or push reads Suunto again.
const SAMPLES_LIFE: std::time::Duration = std::time::Duration::from_secs(60);
/// Most spans of activity samples kept at once (each of one access token).
const MOST_SAMPLES: usize = 64;

/// The longest `from`..`to` (and `startdate`..`enddate`) span Suunto answers: "Maximum fetch
/// interval duration is 28 days" (the Daily Activity API's operation page).
pub const MAX_SPAN_DAYS: i64 = 28;

/// Workouts asked a page (the Open Wearables project caps `limit` at 100).
pub const PAGE_SIZE: usize = 100;
/// Pages read at most for one range: 10,000 workouts, a bound on a paging that never ends.
const MAX_PAGES: usize = 100;

/// One joule in kilocalories (1 kcal = 4184 J).
const KCAL_PER_J: f64 = 1.0 / 4184.0;

/// Suunto as its published documents describe it: the client by HTTP Basic at the token
/// endpoint; a refresh answers a new refresh token, which is kept. No scope is documented (the
/// consent page's example names none), so the consent URL carries no `scope`.
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: LIMITS,
    user_limits: &[],
    authorize_url: "https://cloudapi-oauth.suunto.com/oauth/authorize",
    token_url: "https://cloudapi-oauth.suunto.com/oauth/token",
    api_url: "https://cloudapi.suunto.com",
    scopes: "",
    authorize_extra: &[],
    client_auth: ClientAuth::Basic,
    refresh: Refresh::Token { extra: &[] },
};

pub struct Suunto {
    api: Api,
    subscription_key: Option<Secret>,
    page_size: usize,
    /// Activity samples by (access token digest, from, to): one call for the five series.
    kept_activity: Kept<(TokenDigest, i64, i64), Vec<Sample>>,
    /// Decoded FIT exports by (access token digest, workout key); `None`: no recording.
    kept_files: Kept<(TokenDigest, String), Option<FitActivity>>,
}

impl Suunto {
    /// Suunto's real hosts: the Authorisation API at `cloudapi-oauth.suunto.com`, the data API at
    /// `cloudapi.suunto.com` (https://apizone.suunto.com/how-to-start).
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
    }

    pub fn new(config: AppConfig) -> Self {
        Self {
            api: Api::new(&DESCRIPTION, config),
            subscription_key: None,
            page_size: PAGE_SIZE,
            kept_activity: Kept::new(SAMPLES_LIFE, MOST_SAMPLES),
            kept_files: fit::kept_files(),
        }
    }

    /// Workouts asked a page ([`PAGE_SIZE`] unless changed: tests page with fewer).
    pub fn with_page_size(mut self, n: usize) -> Self {
        self.page_size = n.clamp(1, PAGE_SIZE);
        self
    }

    /// The deployment's API Zone subscription key (a secret: never logged).
    pub fn with_subscription_key(mut self, key: Option<String>) -> Self {
        self.subscription_key = key.map(|k| k.trim().to_owned()).filter(|k| !k.is_empty()).map(Secret::new);
        self
    }

    /// The deauthorisation endpoint, beside the token endpoint on the Authorisation API's host.
    fn deauthorize_url(&self) -> String {
        self.api.config.endpoints.next_to_token("deauthorize")
    }

    /// A data call: the bearer token and the subscription key, admitted by `gate`; the answer's
    /// status read as any provider's, and a 200 carrying `error` refused.
    async fn get<T: DeserializeOwned>(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, ProviderError> {
        let Some(key) = &self.subscription_key else {
            return Err(ProviderError::Api(format!(
                "{SLUG} needs the API Zone subscription key ({SUBSCRIPTION_KEY_VAR})"
            )));
        };
        let request = self
            .api
            .http
            .get(self.api.url(path))
            .bearer_auth(token)
            .header(SUBSCRIPTION_HEADER, key.expose())
            .query(query);
        let answer = http::check(SLUG, http::send_admitted(gate, SLUG, request).await?)?;
        let value: Value = answer.json(SLUG)?;
        refuse_error(&value)?;
        serde_json::from_value(value)
            .map_err(|e| ProviderError::Api(format!("{SLUG} answered an unreadable body: {e}")))
    }

    /// The workout's FIT export, decoded; `None` when Suunto has no recording of it (404).
    async fn fit_file(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        key: &str,
    ) -> Result<Option<FitActivity>, ProviderError> {
        let Some(subscription) = &self.subscription_key else {
            return Err(ProviderError::Api(format!(
                "{SLUG} needs the API Zone subscription key ({SUBSCRIPTION_KEY_VAR})"
            )));
        };
        let path = format!("/v2/workout/exportFit/{key}");
        let request = self
            .api
            .http
            .get(self.api.url(&path))
            .bearer_auth(token)
            .header(SUBSCRIPTION_HEADER, subscription.expose());
        fit::download(gate, SLUG, request, &[404]).await
    }

    /// The stream rows of every workout of `range` that has a recording, in its zone.
    async fn workout_streams(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        let token = credentials.access_token.expose();
        let mut rows = Vec::new();
        for w in self.workouts(gate, token, range).await? {
            // A key goes into the path: only the characters Suunto's keys are made of.
            let Some(key) = w.workout_key.clone().filter(|k| {
                !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            }) else {
                continue;
            };
            if !w.local_day().is_some_and(|d| in_range(range, d)) {
                continue;
            }
            let file = self
                .kept_files
                .get_or_fetch((digest(credentials), key.clone()), || self.fit_file(gate, token, &key))
                .await?;
            if let Some(f) = file.as_ref() {
                rows.extend(fit::rows(&f.samples, &Resource::WorkoutStream, w.zone().as_deref()));
            }
        }
        Ok(rows)
    }

    async fn workouts(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        range: DateRange,
    ) -> Result<Vec<Workout>, ProviderError> {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            payload: Vec<Workout>,
        }
        // A day either side: a workout's day is its local one.
        let (since, until) = epoch_ms_span(range.start - Duration::days(1), range.end + Duration::days(1));
        let mut out = Vec::new();
        for page in 0..MAX_PAGES {
            let query = [
                ("since", since.to_string()),
                ("until", until.to_string()),
                ("limit", self.page_size.to_string()),
                ("offset", (page * self.page_size).to_string()),
            ];
            let got: Page = self.get(gate, token, "/v3/workouts", &query).await?;
            let n = got.payload.len();
            out.extend(got.payload);
            if n < self.page_size {
                break;
            }
        }
        Ok(out)
    }

    /// Every 24/7 sample of `kind` (`sleep`, `activity`) from the day before `range` to its end,
    /// in spans Suunto accepts. A span of activity samples is read once for the five series
    /// made of it (kept a minute for the token that read it).
    async fn samples(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        kind: &str,
        range: DateRange,
    ) -> Result<Vec<Sample>, ProviderError> {
        let token = credentials.access_token.expose();
        let path = format!("/247samples/{kind}");
        let mut out = Vec::new();
        let wide = DateRange { start: range.start - Duration::days(1), end: range.end };
        for (from, to) in spans(wide) {
            let (from, to) = epoch_ms_span(from, to);
            let read = || async {
                let query = [("from", from.to_string()), ("to", to.to_string())];
                let got: Option<Vec<Sample>> = self.get(gate, token, &path, &query).await?;
                Ok::<_, ProviderError>(got.unwrap_or_default())
            };
            if kind == "activity" {
                let kept = self.kept_activity.get_or_fetch((digest(credentials), from, to), read).await?;
                out.extend(kept.iter().cloned());
            } else {
                out.extend(read().await?);
            }
        }
        Ok(out)
    }

    async fn daily_statistics(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        range: DateRange,
    ) -> Result<Vec<Statistic>, ProviderError> {
        let mut out = Vec::new();
        for (from, to) in spans(range) {
            let query = [("startdate", format!("{from}T00:00:00")), ("enddate", format!("{to}T23:59:59"))];
            let got: Option<Vec<Statistic>> =
                self.get(gate, token, "/247/daily-activity-statistics", &query).await?;
            out.extend(got.unwrap_or_default());
        }
        Ok(out)
    }

    /// `GET /oauth/deauthorize?client_id=` with the user's token (the c2corg tracking service's
    /// `deauthorize`); 2xx is done.
    async fn deauthorize(
        &self,
        client: &OauthClient,
        credentials: ProviderCredentials,
    ) -> Result<(), ProviderError> {
        let request = self
            .api
            .http
            .get(self.deauthorize_url())
            .bearer_auth(credentials.access_token.expose())
            .query(&[("client_id", client.client_id.as_str())]);
        http::check(SLUG, http::send(SLUG, request).await?).map(|_| ())
    }
}

/// A 200 that carries `error{code, description}` is a failure (the Workout API's answers are
/// `{error, metadata, payload}`); only the code is reported.
fn refuse_error(value: &Value) -> Result<(), ProviderError> {
    match value.get("error") {
        None | Some(Value::Null) => Ok(()),
        Some(error) => {
            let code = error.get("code").and_then(Value::as_str).unwrap_or("unknown");
            Err(ProviderError::Api(format!("{SLUG} answered error {code}")))
        }
    }
}

/// `range` as spans of at most [`MAX_SPAN_DAYS`] days.
pub fn spans(range: DateRange) -> Vec<(NaiveDate, NaiveDate)> {
    let mut out = Vec::new();
    let mut from = range.start;
    while from <= range.end {
        let to = (from + Duration::days(MAX_SPAN_DAYS - 1)).min(range.end);
        out.push((from, to));
        from = to + Duration::days(1);
    }
    out
}

/// The first and last millisecond (UTC) of the days `from..=to`.
fn epoch_ms_span(from: NaiveDate, to: NaiveDate) -> (i64, i64) {
    let start = from.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc().timestamp_millis();
    let end =
        (to + Duration::days(1)).and_hms_opt(0, 0, 0).unwrap_or_default().and_utc().timestamp_millis() - 1;
    (start, end)
}

fn epoch_ms(ms: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms).single()
}

/// A Suunto time: ISO 8601 with an offset, or without one (read as UTC: "Data is stored into and
/// fetched from the API using UTC time"), or epoch milliseconds. With the offset it names.
fn instant(v: &Value) -> Option<(DateTime<Utc>, Option<FixedOffset>)> {
    match v {
        Value::Number(n) => Some((epoch_ms(n.as_i64()?)?, None)),
        Value::String(s) => {
            if let Ok(t) = DateTime::parse_from_rfc3339(s) {
                return Some((t.with_timezone(&Utc), Some(*t.offset())));
            }
            let naive = NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").ok()?;
            Some((naive.and_utc(), None))
        }
        _ => None,
    }
}

/// The sport of an `activityId` (Suunto's activity ids, as the c2corg tracking service lists
/// them from Suunto's FIT activity-id document); `other` for an id not listed.
fn sport(activity_id: Option<i64>) -> String {
    const NAMES: [&str; 99] = [
        "Walking",
        "Running",
        "Cycling",
        "Cross Country Skiing",
        "Other",
        "Other",
        "Other",
        "Other",
        "Other",
        "Other",
        "Mountain Biking",
        "Hiking",
        "Roller Skating",
        "Downhill Skiing",
        "Paddling",
        "Rowing",
        "Golf",
        "Indoor",
        "Parkour",
        "Ball Games",
        "Outdoor Gym",
        "Swimming",
        "Trail Running",
        "Gym",
        "Nordic Walking",
        "Horseback Riding",
        "Motorsports",
        "Skateboarding",
        "Water Sports",
        "Climbing",
        "Snowboarding",
        "Ski Touring",
        "Fitness Class",
        "Soccer",
        "Tennis",
        "Basketball",
        "Badminton",
        "Baseball",
        "Volleyball",
        "American Football",
        "Table Tennis",
        "Racquet Ball",
        "Squash",
        "Floorball",
        "Handball",
        "Softball",
        "Bowling",
        "Cricket",
        "Rugby",
        "Ice Skating",
        "Ice Hockey",
        "Yoga",
        "Indoor Cycling",
        "Treadmill",
        "Crossfit",
        "Crosstrainer",
        "Roller Skiing",
        "Indoor Rowing",
        "Stretching",
        "Track And Field",
        "Orienteering",
        "Standup Paddling",
        "Combat Sport",
        "Kettlebell",
        "Dancing",
        "Snow Shoeing",
        "Frisbee Golf",
        "Futsal",
        "Multisport",
        "Aerobics",
        "Trekking",
        "Sailing",
        "Kayaking",
        "Circuit Training",
        "Triathlon",
        "Other",
        "Cheerleading",
        "Boxing",
        "Scuba Diving",
        "Freediving",
        "Adventure Racing",
        "Gymnastics",
        "Canoeing",
        "Mountaineering",
        "Telemark Skiing",
        "Openwater Swimming",
        "Windsurfing",
        "Kitesurfing Kiting",
        "Paragliding",
        "Other",
        "Snorkeling",
        "Surfing",
        "Swimrun",
        "Duathlon",
        "Aquathlon",
        "Obstacle Racing",
        "Fishing",
        "Hunting",
        "Transition",
    ];
    activity_id
        .and_then(|id| usize::try_from(id).ok())
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| "other".to_owned(), |name| sport_slug(name))
}

/// A workout of the Workout API (its "Get workout summary as JSON" page; the webhook's
/// `workout`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Workout {
    /// The key of the workout's FIT export.
    #[serde(default)]
    workout_key: Option<String>,
    #[serde(default)]
    activity_id: Option<i64>,
    /// Epoch ms.
    #[serde(default)]
    start_time: Option<i64>,
    /// Epoch ms; may be missing in a fresh webhook's workout.
    #[serde(default)]
    stop_time: Option<i64>,
    /// Seconds.
    #[serde(default)]
    total_time: Option<f64>,
    #[serde(default)]
    time_offset_in_minutes: Option<i32>,
    /// Metres.
    #[serde(default)]
    total_distance: Option<f64>,
    /// kcal.
    #[serde(default)]
    energy_consumption: Option<f64>,
    #[serde(default)]
    hrdata: Option<HrData>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HrData {
    /// bpm.
    #[serde(default, rename = "workoutAvgHR")]
    workout_avg_hr: Option<f64>,
    /// The same in the Open Wearables project's reading.
    #[serde(default)]
    avg: Option<f64>,
}

impl Workout {
    fn offset(&self) -> Option<FixedOffset> {
        FixedOffset::east_opt(self.time_offset_in_minutes.unwrap_or(0) * 60)
    }

    /// The day the workout started on, in its own zone.
    fn local_day(&self) -> Option<NaiveDate> {
        Some(epoch_ms(self.start_time?)?.with_timezone(&self.offset()?).date_naive())
    }

    /// The workout's zone as an IANA `Etc/GMT` name, when Suunto gave its offset.
    fn zone(&self) -> Option<String> {
        self.time_offset_in_minutes.and(self.offset().and_then(etc_zone))
    }
}

fn workout_records(workouts: &[Workout], range: DateRange) -> Vec<Value> {
    workouts
        .iter()
        .filter_map(|w| {
            let start = epoch_ms(w.start_time?)?;
            let end = match (w.stop_time, w.total_time) {
                (Some(stop), _) => epoch_ms(stop)?,
                (None, Some(secs)) => start + Duration::milliseconds((secs * 1000.0).round() as i64),
                (None, None) => return None,
            };
            let day = w.local_day()?;
            if !in_range(range, day) {
                return None;
            }
            let record = json!({
                "date": day.to_string(),
                "time_start": rfc3339(start),
                "time_end": rfc3339(end),
                "sport": sport(w.activity_id),
                "calories": w.energy_consumption,
                "distance_m": w.total_distance,
                "average_hr": w.hrdata.as_ref().and_then(|h| h.workout_avg_hr.or(h.avg)),
            });
            Some(with_zone(record, w.zone()))
        })
        .collect()
}

/// One 24/7 sample (`/247samples/*` and the 24/7 webhooks' `samples`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sample {
    #[serde(default)]
    timestamp: Value,
    #[serde(default)]
    entry_data: serde_json::Map<String, Value>,
}

impl Sample {
    fn number(&self, key: &str) -> Option<f64> {
        self.entry_data.get(key).and_then(Value::as_f64)
    }
}

fn sleep_records(samples: &[Sample], range: DateRange) -> Vec<Value> {
    samples
        .iter()
        .filter_map(|s| {
            let (start, offset) = instant(s.entry_data.get("BedtimeStart")?)?;
            let (end, _) = instant(s.entry_data.get("BedtimeEnd")?)?;
            let day = match offset {
                Some(o) => end.with_timezone(&o).date_naive(),
                None => end.date_naive(),
            };
            if !in_range(range, day) || end <= start {
                return None;
            }
            let secs = |k: &str| s.number(k).map(|v| v.round() as i64);
            let duration = secs("Duration").unwrap_or((end - start).num_seconds());
            let (deep, light, rem) =
                (secs("DeepSleepDuration"), secs("LightSleepDuration"), secs("REMSleepDuration"));
            let asleep = deep.unwrap_or(0) + light.unwrap_or(0) + rem.unwrap_or(0);
            let mut record = json!({
                "date": day.to_string(),
                "bedtime_start": rfc3339(start),
                "bedtime_stop": rfc3339(end),
                "duration_s": duration,
                "deep_s": deep,
                "light_s": light,
                "rem_s": rem,
                "awake_s": (duration - asleep).max(0),
                "hr_average": s.number("HRAvg"),
            });
            if s.entry_data.get("IsNap").and_then(Value::as_bool) == Some(true) {
                record["type"] = json!("acknowledged_nap");
            }
            Some(with_zone(record, offset.and_then(etc_zone)))
        })
        .collect()
}

/// One series of the activity samples: its field and Wearlab's unit.
fn series(resource: &Resource) -> Option<(&'static str, &'static str)> {
    Some(match resource {
        Resource::Heartrate => ("HR", "bpm"),
        Resource::Steps => ("StepCount", "count"),
        Resource::CaloriesActive => ("EnergyConsumption", "kcal"),
        Resource::BloodOxygen => ("SpO2", "%"),
        Resource::Hrv => ("HRV", "ms"),
        _ => return None,
    })
}

/// A sample's value of `resource` in Wearlab's unit; `None` for no reading (a heart rate, SpO2
/// or HRV of 0).
fn in_unit(resource: &Resource, v: f64) -> Option<f64> {
    match resource {
        Resource::Steps => Some(v),
        Resource::CaloriesActive => Some(v * KCAL_PER_J),
        // A fraction 0-1 (the Open Wearables project); a value above 1 is read as a percentage.
        Resource::BloodOxygen if v > 1.0 => Some(v),
        Resource::BloodOxygen => (v > 0.0).then_some(v * 100.0),
        _ => (v > 0.0).then_some(v),
    }
}

fn series_rows(samples: &[Sample], resource: &Resource, range: DateRange) -> Vec<Value> {
    let Some((field, unit)) = series(resource) else { return vec![] };
    let mut rows: Vec<(DateTime<Utc>, Value)> = samples
        .iter()
        .filter_map(|s| {
            let (at, _) = instant(&s.timestamp)?;
            if !in_range(range, at.date_naive()) {
                return None;
            }
            let value = in_unit(resource, s.number(field)?)?;
            Some((at, json!({"timestamp": rfc3339(at), "value": round3(value), "unit": unit})))
        })
        .collect();
    rows.sort_by_key(|(at, _)| *at);
    rows.into_iter().map(|(_, row)| row).collect()
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// An aggregated daily statistic (the Daily Activity API's `daily-activity-statistics`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Statistic {
    name: String,
    #[serde(default)]
    sources: Vec<StatisticSource>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StatisticSource {
    #[serde(default)]
    samples: Vec<StatisticSample>,
}

#[derive(Debug, Deserialize)]
struct StatisticSample {
    #[serde(rename = "TimeISO8601")]
    time: String,
    #[serde(rename = "Value", default)]
    value: Option<f64>,
}

/// Per day (the date of each sample's `TimeISO8601`: the days start at the asked `startdate`,
/// midnight UTC), steps and energy; of several sources the largest value (one day counted once).
fn activity_records(statistics: &[Statistic], range: DateRange) -> Vec<Value> {
    let mut days: std::collections::BTreeMap<NaiveDate, (Option<f64>, Option<f64>)> = Default::default();
    for stat in statistics {
        let steps = match stat.name.to_ascii_lowercase().as_str() {
            "stepcount" => true,
            "energyconsumption" => false,
            _ => continue,
        };
        for sample in stat.sources.iter().flat_map(|s| &s.samples) {
            let (Some(day), Some(value)) =
                (sample.time.get(..10).and_then(|d| d.parse::<NaiveDate>().ok()), sample.value)
            else {
                continue;
            };
            if !in_range(range, day) {
                continue;
            }
            let entry = days.entry(day).or_default();
            let slot = if steps { &mut entry.0 } else { &mut entry.1 };
            *slot = Some(slot.map_or(value, |v| v.max(value)));
        }
    }
    days.into_iter()
        .map(|(day, (steps, joules))| {
            json!({"date": day.to_string(), "steps": steps,
                "calories_active": joules.map(|j| round3(j * KCAL_PER_J))})
        })
        .collect()
}

/// A webhook notification (https://suunto-api.developer.azure-api.net/webhooks).
#[derive(Debug, Deserialize)]
struct Notification {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    workout: Option<Workout>,
    #[serde(default)]
    samples: Vec<Sample>,
}

/// The catalog resources a notification of `kind` brings.
fn resources_of(kind: &str) -> &'static [Resource] {
    match kind {
        "WORKOUT_CREATED" => &[Resource::Workouts, Resource::WorkoutStream],
        "SUUNTO_247_ACTIVITY_CREATED" => &[
            Resource::Activity,
            Resource::Heartrate,
            Resource::Steps,
            Resource::CaloriesActive,
            Resource::BloodOxygen,
            Resource::Hrv,
        ],
        "SUUNTO_247_SLEEP_CREATED" => &[Resource::Sleep],
        // Recovery (balance, stress state) and routes are not mapped.
        _ => &[],
    }
}

/// The days a notification's inline data covers, and the day before (a night, or a workout in a
/// zone ahead of UTC, belongs to a day its UTC date may miss).
fn days_of(n: &Notification) -> Option<DateRange> {
    let mut times: Vec<DateTime<Utc>> =
        n.workout.iter().filter_map(|w| w.start_time.and_then(epoch_ms)).collect();
    for s in &n.samples {
        times.extend(instant(&s.timestamp).map(|(t, _)| t));
        for key in ["BedtimeStart", "BedtimeEnd"] {
            times.extend(s.entry_data.get(key).and_then(instant).map(|(t, _)| t));
        }
    }
    let (first, last) = (times.iter().min()?, times.iter().max()?);
    Some(DateRange {
        start: first.date_naive() - Duration::days(1),
        end: last.date_naive() + Duration::days(1),
    })
}

/// Whether `signature` is the HMAC-SHA256 of `body` with `secret`, written in hex (either case)
/// or base64: Suunto's page names the header and the algorithm, not the encoding (the Open
/// Wearables project compares hex). Compared in constant time.
pub fn signature_ok(secret: &str, body: &[u8], signature: &str) -> bool {
    let expected = hmac_sha256(secret.as_bytes(), body);
    let given = signature.trim();
    let decoded = if given.len() == 64 {
        hex::decode(given).ok()
    } else {
        base64::engine::general_purpose::STANDARD.decode(given).ok()
    };
    decoded.is_some_and(|d| constant_time_eq(&expected, &d))
}

/// The hex signature (for the fake and tests).
pub fn sign(secret: &str, body: &[u8]) -> String {
    hex_hmac_sha256(secret.as_bytes(), body)
}

/// The `user` claim of a JWT access token, read without checking its signature: the token came
/// from the token endpoint just now, over TLS (the Open Wearables project reads the user there).
fn jwt_claim(token: &str, claim: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    let bytes =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice::<Value>(&bytes).ok()?.get(claim).cloned()
}

#[async_trait]
impl Adapter for Suunto {
    fn api(&self) -> &Api {
        &self.api
    }

    /// `response_type=code`, the client, the callback and the state, as Suunto's how-to-start page
    /// writes the consent URL (with the state RFC 6749 adds); no `scope`.
    fn authorize_url(&self, request: &AuthorizeRequest) -> Result<String, ProviderError> {
        let mut url = url::Url::parse(&self.api.config.endpoints.authorize)
            .map_err(|_| ProviderError::Api(format!("{SLUG}'s configured authorize URL is not a URL")))?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &request.client_id)
            .append_pair("redirect_uri", &request.redirect_uri)
            .append_pair("state", &request.state);
        Ok(url.into())
    }

    /// The code exchanged by HTTP Basic; the answer's `user` is the Suunto user (the webhooks'
    /// `username`), else the access token's `user` claim. A token answer without `expires_in`
    /// expires at the token's `exp`.
    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let now = Utc::now();
        let mut answer: TokenAnswer = self.api.exchange_answer(exchange).await?;
        let user = match answer.extra.get("user") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => jwt_claim(&answer.access_token, "user").and_then(|u| u.as_str().map(str::to_owned)),
        };
        let Some(user) = user.filter(|u| !u.is_empty()) else {
            return Err(ProviderError::Api(format!("{SLUG}'s token answer names no user")));
        };
        if answer.expires_in.is_none() {
            let exp = jwt_claim(&answer.access_token, "exp").and_then(|e| e.as_i64());
            answer.expires_in = exp.map(|e| e - now.timestamp());
        }
        Ok(ProviderAccount { external_user_id: user, credentials: answer.into_credentials(now, None) })
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
            Resource::Workouts => workout_records(&self.workouts(gate, token, range).await?, range),
            Resource::WorkoutStream => self.workout_streams(gate, &account.credentials, range).await?,
            Resource::Activity => activity_records(&self.daily_statistics(gate, token, range).await?, range),
            Resource::Sleep => {
                sleep_records(&self.samples(gate, &account.credentials, "sleep", range).await?, range)
            }
            r if series(r).is_some() => {
                series_rows(&self.samples(gate, &account.credentials, "activity", range).await?, r, range)
            }
            other => return Err(ProviderError::Unsupported(format!("{SLUG} does not serve {other}"))),
        };
        tracing::debug!(provider = SLUG, resource = %resource, records = records.len(), "fetched");
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    /// Deauthorises Wearlab with the user's token; a token Suunto refuses is refreshed once and
    /// the call repeated, and a refused refresh means the access is already gone.
    async fn revoke(&self, client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError> {
        oauth::revoke_refreshing(
            &account.credentials,
            |credentials| self.deauthorize(client, credentials),
            || self.refresh(client, &account.credentials),
        )
        .await
    }

    /// A notification must carry `X-HMAC-SHA256-Signature` made with the app's notification
    /// secret (`verification_token`: the configured push token). Each names the user
    /// (`username`) and the days its inline data covers: those resources of that user are polled
    /// (the data is not read from the request, which Suunto wants answered within 2 seconds).
    fn push(
        &self,
        _client: &OauthClient,
        verification_token: Option<&str>,
        request: &PushRequest,
    ) -> PushOutcome {
        if !request.method.eq_ignore_ascii_case("POST") {
            return PushOutcome::Refused("Suunto only POSTs".into());
        }
        let Some(secret) = verification_token else {
            return PushOutcome::Refused("no Suunto notification secret is configured".into());
        };
        let Some(signature) = request.header(SIGNATURE_HEADER) else {
            return PushOutcome::Refused("unsigned push".into());
        };
        if !signature_ok(secret, &request.body, signature) {
            return PushOutcome::Refused("bad push signature".into());
        }
        let Ok(notification) = serde_json::from_slice::<Notification>(&request.body) else {
            return PushOutcome::Refused("unreadable push body".into());
        };
        let Some(user) = notification.username.clone().filter(|u| !u.is_empty()) else {
            return PushOutcome::Refused("a push without username".into());
        };
        let resources = resources_of(&notification.kind).to_vec();
        if resources.is_empty() {
            return PushOutcome::Notices(vec![]);
        }
        let range = days_of(&notification);
        PushOutcome::Notices(vec![PushNotice { external_user_id: user, resources, range }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_are_split_into_28_day_spans() {
        let s = spans(DateRange { start: d("2026-10-01"), end: d("2026-11-25") });
        assert_eq!(s, vec![(d("2026-10-01"), d("2026-10-28")), (d("2026-10-29"), d("2026-11-25"))]);
        assert_eq!(spans(DateRange { start: d("2026-11-25"), end: d("2026-11-25") }).len(), 1);
    }

    #[test]
    fn signatures_are_read_in_hex_or_base64() {
        let body = br#"{"type":"WORKOUT_CREATED"}"#;
        let hex_sig = sign("secret", body);
        assert!(signature_ok("secret", body, &hex_sig));
        assert!(signature_ok("secret", body, &hex_sig.to_ascii_uppercase()));
        let b64 = base64::engine::general_purpose::STANDARD.encode(hmac_sha256(b"secret", body));
        assert!(signature_ok("secret", body, &b64));
        assert!(!signature_ok("other", body, &hex_sig));
        assert!(!signature_ok("secret", b"{}", &b64));
        assert!(!signature_ok("secret", body, "not a signature"));
        assert!(!signature_ok("secret", body, ""));
    }

    #[test]
    fn the_user_is_read_from_the_jwt_when_the_answer_lacks_it() {
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"user":"johndoe123","exp":1900000000}"#);
        let token = format!("eyJhbGciOiJIUzI1NiJ9.{claims}.sig");
        assert_eq!(jwt_claim(&token, "user"), Some(json!("johndoe123")));
        assert_eq!(jwt_claim(&token, "exp"), Some(json!(1_900_000_000)));
        assert_eq!(jwt_claim("opaque-token", "user"), None);
    }

    #[test]
    fn samples_are_read_in_wearlabs_units() {
        assert_eq!(in_unit(&Resource::BloodOxygen, 0.97).map(round3), Some(97.0), "a fraction");
        assert_eq!(in_unit(&Resource::BloodOxygen, 96.0), Some(96.0), "already a percentage");
        assert_eq!(in_unit(&Resource::BloodOxygen, 0.0), None);
        assert_eq!(in_unit(&Resource::CaloriesActive, 4184.0), Some(1.0), "J to kcal");
        assert_eq!(in_unit(&Resource::Hrv, 0.0), None, "no reading");
        assert_eq!(in_unit(&Resource::Steps, 0.0), Some(0.0), "no step is a count");
        assert_eq!(in_unit(&Resource::Heartrate, 61.0), Some(61.0));
    }

    #[test]
    fn activity_ids_become_sports() {
        assert_eq!(sport(Some(1)), "running");
        assert_eq!(sport(Some(3)), "cross_country_skiing");
        assert_eq!(sport(Some(22)), "trail_running");
        assert_eq!(sport(Some(5)), "other");
        assert_eq!(sport(Some(1000)), "other");
        assert_eq!(sport(None), "other");
    }

    #[test]
    fn a_200_carrying_an_error_is_refused() {
        assert!(refuse_error(&json!({"error": null, "payload": []})).is_ok());
        assert!(refuse_error(&json!([])).is_ok());
        let refused = refuse_error(&json!({"error": {"code": "E42", "description": "x"}, "payload": []}));
        assert_eq!(refused, Err(ProviderError::Api("suunto answered error E42".into())));
    }

    #[test]
    fn times_are_read_with_or_without_offset_or_as_epoch_ms() {
        let (t, o) = instant(&json!("2026-11-21T22:30:00.000+02:00")).unwrap();
        assert_eq!(rfc3339(t), "2026-11-21T20:30:00Z");
        assert_eq!(o, FixedOffset::east_opt(7200));
        let (t, o) = instant(&json!("2026-11-21T22:30:00.000")).unwrap();
        assert_eq!((rfc3339(t), o), ("2026-11-21T22:30:00Z".to_owned(), None));
        let (t, _) = instant(&json!(1_702_729_200_000_i64)).unwrap();
        assert_eq!(rfc3339(t), "2023-12-16T12:20:00Z");
    }
}
