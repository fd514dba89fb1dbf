//! Ultrahuman partner API (the Ultrahuman Ring; https://partner.ultrahuman.com), catalog slug
//! `ultrahuman`: OAuth 2 with the client in the token form's body and refresh tokens that rotate,
//! the user's id from `user_info`, and one document of every metric per day
//! (`/user_data/metrics?date=YYYY-MM-DD`), pulled: Ultrahuman sends no push. Facts: Ultrahuman's
//! developer documentation and partner API pages, listed under "Sources" in the Ultrahuman section
//! of `docs/PROVIDERS.md`; the document's shape (`data.metric_data[]` of `{type, object}`) as the
//! Open Wearables project reads it (github.com/the-momentum/open-wearables,
//! `backend/app/services/providers/ultrahuman/data_247.py`).
//!
//! What is mapped (units: seconds, bpm, ms, °C, steps, mL/kg/min):
//! - `sleep`: the day's `Sleep` object, `bedtime_start`/`bedtime_end` (epoch seconds), time in bed
//!   and efficiency (%) from `quick_metrics`, deep/light/REM/awake seconds from `sleep_stages`.
//! - `heartrate`, `hrv`, `body_temperature`, `steps`: the `values[{timestamp, value}]` of `hr`,
//!   `hrv`, `temp` and `steps`.
//! - `activity`: the day's steps, the sum of its `steps` values.
//! - `vo2_max`: the day's `{value, day_start_timestamp}`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use wearlab_domain::ports::providers::{
    CodeExchange, DateRange, FetchedResource, NoLimit, OauthClient, ProviderAccount, ProviderError,
    PushOutcome, PushRequest, RequestGate,
};
use wearlab_models::Resource;

use crate::adapter::Adapter;
use crate::config::{AppConfig, Endpoints};
use crate::description::{Api, ProviderDescription, Refresh};
use crate::http;
use crate::oauth::ClientAuth;
use crate::whoop::{in_range, rfc3339};

pub const SLUG: &str = "ultrahuman";

/// The user's id and time zone (`profile`) and the ring's data (`ring_data`). `cgm_data` (the M1
/// sensor's glucose) is not asked for: no glucose is mapped (see `RESOURCES`), and Ultrahuman asks
/// partners to request only the scopes they need (its partner API page,
/// https://www.ultrahuman.com/blog/accessing-the-ultrahuman-partnership-api/).
pub const SCOPES: &str = "profile ring_data";

/// Where a token is revoked (the token endpoint's sibling), used when the configured token URL
/// does not end in `/token`.
pub const REVOKE_URL: &str = "https://partner.ultrahuman.com/api/partners/oauth/revoke";

/// The catalog resources `fetch` fills. Not `blood_oxygen`, which the catalog lists: no published
/// document shows where the metrics document carries SpO2. Not `glucose`: the M1 sensor's readings
/// are named among the partner API's data, but no published document shows their shape in the
/// metrics document, so nothing would be read with confidence.
const RESOURCES: &[Resource] = &[
    Resource::Sleep,
    Resource::Activity,
    Resource::Heartrate,
    Resource::Hrv,
    Resource::BodyTemperature,
    Resource::Steps,
    Resource::Vo2Max,
];

/// Ultrahuman as its published documents describe it: the client in the token form's body, and
/// refresh tokens that rotate (the new one is kept). No limits are published, so none is
/// enforced; each request still passes the gate.
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: &[],
    user_limits: &[],
    authorize_url: "https://auth.ultrahuman.com/authorise",
    token_url: "https://partner.ultrahuman.com/api/partners/oauth/token",
    api_url: "https://partner.ultrahuman.com/api/partners/v1",
    scopes: SCOPES,
    authorize_extra: &[],
    client_auth: ClientAuth::Body,
    refresh: Refresh::Token { extra: &[] },
};

/// How long a day's document fetched for one resource may serve the others (see [`Days`]).
pub const DAY_TTL: std::time::Duration = std::time::Duration::from_secs(120);
/// Most days' documents kept at once.
const DAYS_KEPT: usize = 256;

pub struct Ultrahuman {
    api: Api,
    days: Days,
}

/// The days' documents fetched in the last [`DAY_TTL`], by provider user and day. A day's document
/// holds every metric, and the pipeline fetches resource by resource (a poll asks the same days
/// for each), so one call serves them all. Each resource is served a document once: a resource
/// asking again for a day it was served is a later poll or pull, which asks Ultrahuman again (and
/// the new document serves the other resources in turn).
#[derive(Default)]
struct Days {
    kept: Mutex<HashMap<(String, NaiveDate), Kept>>,
}

struct Kept {
    at: Instant,
    metrics: Arc<Vec<Metric>>,
    served: HashSet<Resource>,
}

impl Days {
    /// The document of `user`'s `day` for `resource`, when one fetched lately has not served it yet.
    fn take(&self, user: &str, day: NaiveDate, resource: &Resource) -> Option<Arc<Vec<Metric>>> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let entry = kept.get_mut(&(user.to_owned(), day))?;
        if entry.at.elapsed() > DAY_TTL || !entry.served.insert(resource.clone()) {
            return None;
        }
        Some(entry.metrics.clone())
    }

    /// Keeps `metrics`, fetched now for `resource`, for the other resources.
    fn keep(&self, user: &str, day: NaiveDate, resource: &Resource, metrics: Arc<Vec<Metric>>) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|_, k| k.at.elapsed() <= DAY_TTL);
        if kept.len() >= DAYS_KEPT
            && let Some(oldest) = kept.iter().min_by_key(|(_, k)| k.at).map(|(key, _)| key.clone())
        {
            kept.remove(&oldest);
        }
        let served = HashSet::from([resource.clone()]);
        kept.insert((user.to_owned(), day), Kept { at: Instant::now(), metrics, served });
    }
}

/// One day with its metrics.
type Day = (NaiveDate, Arc<Vec<Metric>>);

impl Ultrahuman {
    /// The real hosts: the consent page at `auth.ultrahuman.com/authorise` (British spelling, as
    /// the clients that link Ultrahuman call it), the token endpoint and the data on
    /// `partner.ultrahuman.com`.
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
    }

    pub fn new(config: AppConfig) -> Self {
        Self { api: Api::new(&DESCRIPTION, config), days: Days::default() }
    }

    /// The revoke endpoint beside the configured token endpoint (`.../oauth/token` ->
    /// `.../oauth/revoke`), so that moving the token endpoint moves it too.
    pub fn revoke_url(&self) -> String {
        self.api.config.endpoints.beside_token("revoke").unwrap_or_else(|| REVOKE_URL.to_owned())
    }

    /// The metrics of one day, one call. A day Ultrahuman answers 404 for (not begun yet, or
    /// without data) is empty.
    async fn day(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        day: NaiveDate,
    ) -> Result<Vec<Metric>, ProviderError> {
        let answer =
            self.api.send_get(gate, token, "/user_data/metrics", &[("date", day.to_string())]).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(vec![]);
        }
        let doc: MetricsAnswer = http::check(SLUG, answer)?.json(SLUG)?;
        Ok(doc.data.map(|d| d.metric_data).unwrap_or_default())
    }

    /// The metrics of every day from `from` to `to` for `resource`, one call a day unless the
    /// day's document fetched lately for another resource serves it ([`Days`]); days after
    /// tomorrow (UTC) are not asked for, as they cannot have data yet.
    async fn days(
        &self,
        gate: &dyn RequestGate,
        account: &ProviderAccount,
        resource: &Resource,
        (from, to): (NaiveDate, NaiveDate),
    ) -> Result<Vec<Day>, ProviderError> {
        let (user, token) = (&account.external_user_id, account.credentials.access_token.expose());
        let to = to.min(Utc::now().date_naive() + Duration::days(1));
        let mut out = Vec::new();
        let mut day = from;
        while day <= to {
            let metrics = match self.days.take(user, day, resource) {
                Some(kept) => kept,
                None => {
                    let fetched = Arc::new(self.day(gate, token, day).await?);
                    self.days.keep(user, day, resource, fetched.clone());
                    fetched
                }
            };
            out.push((day, metrics));
            day += Duration::days(1);
        }
        Ok(out)
    }
}

/// The metrics document (`{data: {metric_data: [...]}}`).
#[derive(Debug, Deserialize)]
struct MetricsAnswer {
    #[serde(default)]
    data: Option<MetricsData>,
}

#[derive(Debug, Deserialize)]
struct MetricsData {
    #[serde(default)]
    metric_data: Vec<Metric>,
}

/// One metric of a day: its `type` and its `object`, whose shape depends on the type.
#[derive(Debug, Clone, Deserialize)]
struct Metric {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    object: Value,
}

impl Metric {
    /// The object as `T`; `Api` when it is not one.
    fn read<T: serde::de::DeserializeOwned>(&self) -> Result<T, ProviderError> {
        serde_json::from_value(self.object.clone())
            .map_err(|e| ProviderError::Api(format!("{SLUG} answered an unreadable {}: {e}", self.kind)))
    }
}

/// `hr`, `hrv`, `temp`, `steps`: samples at epoch seconds.
#[derive(Debug, Default, Deserialize)]
struct Series {
    #[serde(default)]
    values: Vec<Point>,
}

#[derive(Debug, Deserialize)]
struct Point {
    #[serde(default)]
    timestamp: Option<f64>,
    #[serde(default)]
    value: Option<f64>,
}

/// `vo2_max` (and `active_minutes`, not mapped): one value of the day.
#[derive(Debug, Default, Deserialize)]
struct Daily {
    #[serde(default)]
    value: Option<f64>,
    #[serde(default)]
    day_start_timestamp: Option<f64>,
}

/// `Sleep`.
#[derive(Debug, Default, Deserialize)]
struct Sleep {
    #[serde(default)]
    bedtime_start: Option<f64>,
    #[serde(default)]
    bedtime_end: Option<f64>,
    #[serde(default)]
    quick_metrics: Vec<Quick>,
    #[serde(default)]
    sleep_stages: Vec<Stage>,
    /// A percentage, or `{percentage, ...}`; read when `quick_metrics` has no `sleep_efic`.
    #[serde(default)]
    sleep_efficiency: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Quick {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    value: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Stage {
    #[serde(rename = "type")]
    kind: String,
    /// Seconds.
    #[serde(default)]
    stage_time: Option<f64>,
}

/// An epoch time in seconds.
fn epoch(secs: f64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(secs.round() as i64, 0)
}

/// The `metric_data` type and Wearlab's unit of each timeseries read from `values`.
fn series_of(resource: &Resource) -> Option<(&'static str, &'static str)> {
    match resource {
        Resource::Heartrate => Some(("hr", "bpm")),
        // The statistic (RMSSD or SDNN) is not published; the value is kept in ms as given.
        Resource::Hrv => Some(("hrv", "ms")),
        // The ring's (skin) temperature, in °C.
        Resource::BodyTemperature => Some(("temp", "°C")),
        Resource::Steps => Some(("steps", "count")),
        _ => None,
    }
}

/// The days a fetch of `resource` over `range` asks for. A timeseries asks one day more on each
/// side: Ultrahuman's days are the user's, Wearlab stores samples by their UTC day, so a UTC day's
/// samples come from two of Ultrahuman's days, and a UTC day stored with half its samples would
/// replace the whole day stored before.
fn asked(resource: &Resource, range: DateRange) -> (NaiveDate, NaiveDate) {
    if series_of(resource).is_some() || *resource == Resource::Vo2Max {
        (range.start - Duration::days(1), range.end + Duration::days(1))
    } else {
        (range.start, range.end)
    }
}

/// The records of `resource` over `range` in the metrics of `days` (each day with its document).
fn records(resource: &Resource, range: DateRange, days: &[Day]) -> Result<Vec<Value>, ProviderError> {
    let of = |kind| metrics_of(days, kind);
    let mut out = Vec::new();
    match resource {
        Resource::Sleep => {
            for (day, m) in of("Sleep").filter(|(day, _)| in_range(range, *day)) {
                out.extend(sleep_record(day, &m.read()?));
            }
        }
        Resource::Activity => {
            let mut steps: BTreeMap<NaiveDate, f64> = BTreeMap::new();
            for (day, m) in of("steps").filter(|(day, _)| in_range(range, *day)) {
                let series: Series = m.read()?;
                *steps.entry(day).or_default() += series.values.iter().filter_map(|p| p.value).sum::<f64>();
            }
            out.extend(steps.into_iter().map(|(day, n)| json!({"date": day.to_string(), "steps": n})));
        }
        Resource::Vo2Max => {
            let mut at: BTreeMap<DateTime<Utc>, f64> = BTreeMap::new();
            for (_, m) in of("vo2_max") {
                let daily: Daily = m.read()?;
                if let (Some(t), Some(v)) = (daily.day_start_timestamp.and_then(epoch), daily.value) {
                    at.insert(t, v);
                }
            }
            out.extend(samples(at, range, "mL/kg/min"));
        }
        other => {
            let Some((kind, unit)) = series_of(other) else {
                return Err(ProviderError::Unsupported(format!("{SLUG} does not serve {other}")));
            };
            let mut at: BTreeMap<DateTime<Utc>, f64> = BTreeMap::new();
            for (_, m) in of(kind) {
                let series: Series = m.read()?;
                for p in series.values {
                    if let (Some(t), Some(v)) = (p.timestamp.and_then(epoch), p.value) {
                        at.insert(t, v);
                    }
                }
            }
            out.extend(samples(at, range, unit));
        }
    }
    Ok(out)
}

/// Every metric of `kind` (its `type`, in any case) in `days`, with its day.
fn metrics_of<'a>(days: &'a [Day], kind: &'a str) -> impl Iterator<Item = (NaiveDate, &'a Metric)> + 'a {
    days.iter()
        .flat_map(|(day, metrics)| metrics.iter().map(move |m| (*day, m)))
        .filter(move |(_, m)| m.kind.eq_ignore_ascii_case(kind))
}

/// Samples `{timestamp, value, unit}` of the UTC days of `range`, oldest first, each instant once.
fn samples(at: BTreeMap<DateTime<Utc>, f64>, range: DateRange, unit: &str) -> impl Iterator<Item = Value> {
    at.into_iter()
        .filter(move |(t, _)| in_range(range, t.date_naive()))
        .map(move |(t, v)| json!({"timestamp": rfc3339(t), "value": v, "unit": unit}))
}

/// A sleep of `day`: bedtimes from epoch seconds, its length the `time_in_bed` quick metric (else
/// the bedtimes' difference), the stages' seconds, the efficiency in percent. `None` without
/// both bedtimes.
fn sleep_record(day: NaiveDate, s: &Sleep) -> Option<Value> {
    let (start, end) = (epoch(s.bedtime_start?)?, epoch(s.bedtime_end?)?);
    if end <= start {
        return None;
    }
    let quick =
        |k: &str| s.quick_metrics.iter().find(|q| q.kind == k).and_then(|q| q.value.as_ref()?.as_f64());
    let stage = |k: &str| {
        s.sleep_stages.iter().find(|st| st.kind == k).and_then(|st| st.stage_time).map(|t| t.round() as i64)
    };
    let efficiency = quick("sleep_efic").or_else(|| match s.sleep_efficiency.as_ref()? {
        Value::Object(o) => o.get("percentage")?.as_f64(),
        v => v.as_f64(),
    });
    let in_bed = quick("time_in_bed").map_or((end - start).num_seconds(), |t| t.round() as i64);
    Some(json!({
        "date": day.to_string(),
        "bedtime_start": rfc3339(start),
        "bedtime_stop": rfc3339(end),
        "duration_s": in_bed,
        "deep_s": stage("deep_sleep"),
        "rem_s": stage("rem_sleep"),
        "light_s": stage("light_sleep"),
        "awake_s": stage("awake"),
        "efficiency": efficiency,
    }))
}

/// The user's id in a `user_info` answer: its `user_id` (a string or a number), at the top or in
/// `data`, as both envelopes are in use.
fn user_id_of(info: &Value) -> Option<String> {
    let id = info.get("user_id").or_else(|| info.get("data")?.get("user_id"))?;
    match id {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[async_trait]
impl Adapter for Ultrahuman {
    fn api(&self) -> &Api {
        &self.api
    }

    /// The code exchange (client in the body), then the user's id from `user_info`: the token
    /// answer names no user.
    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let credentials = self.api.exchange(exchange).await?;
        let info: Value = self
            .api
            .get_json(&NoLimit, credentials.access_token.expose(), "/user_data/user_info", &[])
            .await?;
        let id = user_id_of(&info)
            .ok_or_else(|| ProviderError::Api(format!("{SLUG}'s user_info has no user_id")))?;
        Ok(ProviderAccount { external_user_id: id, credentials })
    }

    /// One call per day of the range (the days around it for a timeseries, see [`asked`]), each
    /// through `gate`.
    async fn fetch(
        &self,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        if !RESOURCES.contains(resource) {
            return Err(ProviderError::Unsupported(format!("{SLUG} does not serve {resource}")));
        }
        let days = self.days(gate, account, resource, asked(resource, range)).await?;
        let records = records(resource, range, &days)?;
        tracing::debug!(provider = SLUG, resource = %resource, records = records.len(), "fetched");
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    /// `POST /api/partners/oauth/revoke`, form `token, client_id, client_secret`: the refresh
    /// token when there is one (it ends the grant), else the access token.
    async fn revoke(&self, client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError> {
        let credentials = &account.credentials;
        let token = credentials.refresh_token.as_ref().unwrap_or(&credentials.access_token);
        let form = [
            ("token", token.expose()),
            ("client_id", client.client_id.as_str()),
            ("client_secret", client.client_secret.expose()),
        ];
        let body = serde_urlencoded::to_string(form).map_err(|e| ProviderError::Api(e.to_string()))?;
        let request = self
            .api
            .http
            .post(self.revoke_url())
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .body(body);
        http::check(SLUG, http::send(SLUG, request).await?).map(|_| ())
    }

    fn pushes(&self) -> bool {
        false
    }

    /// Pull-only, and its data is daily: polled once a day per connection, as Open Wearables'
    /// Ultrahuman integration does (`backend/app/services/providers/ultrahuman/`).
    fn poll_interval(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(24 * 60 * 60))
    }

    /// Ultrahuman has no webhooks: its data is polled (daily). Every push is refused.
    fn push(&self, _client: &OauthClient, _token: Option<&str>, _request: &PushRequest) -> PushOutcome {
        PushOutcome::Refused(format!("{SLUG} sends no push notifications; its data is pulled"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn metric(kind: &str, object: Value) -> Metric {
        Metric { kind: kind.into(), object }
    }

    #[test]
    fn a_sleep_is_read_in_seconds_with_its_efficiency_in_percent() {
        let s: Sleep = serde_json::from_value(json!({
            "bedtime_start": 1795213800, "bedtime_end": 1795242600,
            "quick_metrics": [{"type": "time_in_bed", "value": 28800}, {"type": "sleep_efic", "value": 85.5}],
            "sleep_stages": [{"type": "deep_sleep", "stage_time": 5400}, {"type": "awake", "stage_time": 3600}],
            "sleep_efficiency": 87.5
        }))
        .unwrap();
        let r = sleep_record(d("2026-11-21"), &s).unwrap();
        assert_eq!(r["bedtime_start"], "2026-11-20T22:30:00Z");
        assert_eq!(r["bedtime_stop"], "2026-11-21T06:30:00Z");
        assert_eq!(
            (r["duration_s"].as_i64(), r["deep_s"].as_i64(), r["awake_s"].as_i64()),
            (Some(28800), Some(5400), Some(3600))
        );
        assert!(r["rem_s"].is_null());
        assert_eq!(r["efficiency"], 85.5, "the quick metric first");
        let s = Sleep { quick_metrics: vec![], sleep_efficiency: Some(json!({"percentage": 91})), ..s };
        assert_eq!(sleep_record(d("2026-11-21"), &s).unwrap()["efficiency"], 91.0);
        assert_eq!(
            sleep_record(d("2026-11-21"), &s).unwrap()["duration_s"],
            28800,
            "the bedtimes' difference"
        );
        let s = Sleep { bedtime_end: Some(1795213800.0), ..s };
        assert!(sleep_record(d("2026-11-21"), &s).is_none(), "no length");
    }

    #[test]
    fn a_timeseries_keeps_the_samples_of_the_ranges_utc_days_from_the_days_around_it() {
        let day = |v: Vec<(i64, f64)>| {
            let values: Vec<Value> = v.iter().map(|(t, x)| json!({"timestamp": t, "value": x})).collect();
            Arc::new(vec![metric("hr", json!({"values": values})), metric("hrv", json!({"values": []}))])
        };
        let days = vec![
            (d("2026-11-21"), day(vec![(1795248060, 68.0), (1795248120, 72.0)])),
            // Ultrahuman's next day began before UTC midnight for this user.
            (d("2026-11-22"), day(vec![(1795305300, 58.0), (1795339800, 64.0)])),
        ];
        let range = DateRange { start: d("2026-11-21"), end: d("2026-11-21") };
        assert_eq!(asked(&Resource::Heartrate, range), (d("2026-11-20"), d("2026-11-22")));
        assert_eq!(asked(&Resource::Sleep, range), (d("2026-11-21"), d("2026-11-21")));
        let got = records(&Resource::Heartrate, range, &days).unwrap();
        assert_eq!(
            got,
            vec![
                json!({"timestamp": "2026-11-21T08:01:00Z", "value": 68.0, "unit": "bpm"}),
                json!({"timestamp": "2026-11-21T08:02:00Z", "value": 72.0, "unit": "bpm"}),
                json!({"timestamp": "2026-11-21T23:55:00Z", "value": 58.0, "unit": "bpm"}),
            ]
        );
        assert!(records(&Resource::Hrv, range, &days).unwrap().is_empty());
        assert!(matches!(records(&Resource::Glucose, range, &days), Err(ProviderError::Unsupported(_))));
    }

    #[test]
    fn a_days_steps_are_its_activity_and_its_vo2_max_a_sample_at_the_days_start() {
        let days = vec![(
            d("2026-11-21"),
            Arc::new(vec![
                metric(
                    "steps",
                    json!({"values": [{"timestamp": 1795248060, "value": 100}, {"timestamp": 1795248120, "value": 150}]}),
                ),
                metric("vo2_max", json!({"value": 41.5, "day_start_timestamp": 1795219200})),
                metric("active_minutes", json!({"value": 34, "day_start_timestamp": 1795219200})),
            ]),
        )];
        let range = DateRange { start: d("2026-11-21"), end: d("2026-11-21") };
        assert_eq!(
            records(&Resource::Activity, range, &days).unwrap(),
            vec![json!({"date": "2026-11-21", "steps": 250.0})]
        );
        assert_eq!(
            records(&Resource::Vo2Max, range, &days).unwrap(),
            vec![json!({"timestamp": "2026-11-21T00:00:00Z", "value": 41.5, "unit": "mL/kg/min"})]
        );
        let odd = vec![(d("2026-11-21"), Arc::new(vec![metric("hr", json!({"values": "none"}))]))];
        assert!(matches!(records(&Resource::Heartrate, range, &odd), Err(ProviderError::Api(_))));
    }

    #[test]
    fn a_days_document_serves_each_other_resource_once() {
        let days = Days::default();
        let day = d("2026-11-21");
        assert!(days.take("u", day, &Resource::Sleep).is_none(), "nothing fetched yet");
        days.keep("u", day, &Resource::Sleep, Arc::new(vec![metric("hr", json!({"values": []}))]));
        assert!(days.take("u", day, &Resource::Sleep).is_none(), "sleep asking again is a new poll");
        assert_eq!(days.take("u", day, &Resource::Heartrate).map(|m| m.len()), Some(1));
        assert!(days.take("u", day, &Resource::Heartrate).is_none(), "served once");
        assert!(days.take("other", day, &Resource::Hrv).is_none(), "another user's day");
        assert!(days.take("u", d("2026-11-22"), &Resource::Hrv).is_none(), "another day");
        assert!(days.take("u", day, &Resource::Hrv).is_some());
    }

    #[test]
    fn the_user_id_is_read_from_either_envelope() {
        assert_eq!(user_id_of(&json!({"user_id": "u-1"})).as_deref(), Some("u-1"));
        assert_eq!(user_id_of(&json!({"data": {"user_id": 42}})).as_deref(), Some("42"));
        assert_eq!(user_id_of(&json!({"user_id": ""})), None);
        assert_eq!(user_id_of(&json!({})), None);
    }

    #[test]
    fn the_revoke_endpoint_sits_beside_the_token_endpoint() {
        let at = |token: &str| {
            let endpoints = Endpoints { token: token.into(), ..Ultrahuman::endpoints() };
            Ultrahuman::new(AppConfig { endpoints, platform_client: None, push_token: None }).revoke_url()
        };
        assert_eq!(at(DESCRIPTION.token_url), REVOKE_URL);
        assert_eq!(
            at("http://127.0.0.1:9/api/partners/oauth/token"),
            "http://127.0.0.1:9/api/partners/oauth/revoke"
        );
        assert_eq!(at("http://127.0.0.1:9/elsewhere"), REVOKE_URL);
    }
}
