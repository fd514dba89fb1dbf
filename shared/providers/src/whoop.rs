//! WHOOP API v2 (https://api.prod.whoop.com/developer), catalog slug `whoop_v2`: OAuth 2 with
//! the client in the body (scope `offline` for a refresh token), collections paged by
//! `nextToken` (at most 25 a page), webhooks signed with base64 HMAC-SHA256. Facts:
//! WHOOP's published documents, listed under "Sources" in the WHOOP section of
//! `docs/PROVIDERS.md`.
//!
//! Shapes, units and enums as in WHOOP's API 2.0.0 OpenAPI document (api-evangelist/whoop-co
//! `openapi/_original/whoop-api-openapi.yml`); a `score` is read only when `score_state` is
//! `SCORED`.
//!
//! What is mapped (units converted to Wearlab's seconds, kcal, meters):
//! - `sleep`: `/v2/activity/sleep`, every scored sleep (naps as acknowledged naps), dated by
//!   the local day of waking, stage times milliseconds -> seconds. WHOOP publishes no hypnogram.
//! - `respiratory_rate`: each scored sleep's rate, stamped at its end.
//! - `workouts`: `/v2/activity/workout`, kilojoule -> kcal, meters, average heart rate.
//! - `hrv`, `blood_oxygen`, `body_temperature`: `/v2/recovery` (RMSSD ms, SpO2 %, skin
//!   temperature °C), stamped at the end of the sleep the recovery belongs to (a recovery names
//!   its sleep, not a time).
//! - `activity`: the recovery's resting heart rate (bpm) as the day's `heart_rate.resting_bpm`,
//!   dated by the local day the recovery's sleep ends on (the day its other values are stamped
//!   on); WHOOP's cycles are not read, so the day holds nothing else.
//! - `body`: `/v2/user/measurement/body` weight, dated today (WHOOP keeps only the current
//!   value, so it is never written into past days).
//! - `profile`: the height from the same call.
//!
//! WHOOP has no heart-rate series; cycles (daily strain) have no catalog resource here.

use async_trait::async_trait;
use base64::Engine;
use chrono::{DateTime, Duration, FixedOffset, NaiveDate, SecondsFormat, Utc};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use wearlab_domain::common::signing::{constant_time_eq, hmac_sha256};
use wearlab_domain::ports::providers::{
    CodeExchange, DateRange, FetchedResource, NoLimit, OauthClient, ProviderAccount, ProviderCredentials,
    ProviderError, PushNotice, PushOutcome, PushRequest, RateWindow, RequestGate,
};
use wearlab_models::Resource;

use crate::adapter::{Adapter, sport_slug};
use crate::config::{AppConfig, Endpoints};
use crate::description::{Api, ProviderDescription, Refresh};
use crate::http;
use crate::oauth::{self, ClientAuth};

pub const SLUG: &str = "whoop_v2";

/// Every read scope Wearlab maps, and `offline`, without which WHOOP issues no refresh token.
pub const SCOPES: &str =
    "read:recovery read:cycles read:workout read:sleep read:profile read:body_measurement offline";

/// WHOOP's largest page.
pub const PAGE_LIMIT: u32 = 25;

/// A push whose timestamp is further than this from now is refused, so a captured request
/// cannot be replayed later.
pub const PUSH_MAX_SKEW_SECS: i64 = 300;

/// A provider that keeps answering with a next page is cut off here (a loop, not data).
const MAX_PAGES: usize = 10_000;

const RESOURCES: &[Resource] = &[
    Resource::Profile,
    Resource::Body,
    Resource::Sleep,
    Resource::RespiratoryRate,
    Resource::Workouts,
    Resource::Hrv,
    Resource::BloodOxygen,
    Resource::BodyTemperature,
    Resource::Activity,
];

/// The timeseries a recovery fills.
const RECOVERY_SERIES: &[Resource] = &[Resource::Hrv, Resource::BloodOxygen, Resource::BodyTemperature];
/// The resources a recovery fills: its timeseries and the day's resting heart rate.
const RECOVERY_RESOURCES: &[Resource] =
    &[Resource::Hrv, Resource::BloodOxygen, Resource::BodyTemperature, Resource::Activity];
/// The resources a sleep fills.
const SLEEP_RESOURCES: &[Resource] = &[Resource::Sleep, Resource::RespiratoryRate];

const LIMITS: &[RateWindow] =
    &[RateWindow { requests: 100, window_secs: 60 }, RateWindow { requests: 10_000, window_secs: 86_400 }];

/// Kilocalories in a kilojoule's place: 1 kcal = 4.184 kJ.
const KJ_PER_KCAL: f64 = 4.184;

/// WHOOP as its published documents describe it: the client in the token form's body, and
/// `scope=offline` on every refresh (without it WHOOP issues no new refresh token).
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: LIMITS,
    user_limits: &[],
    authorize_url: "https://api.prod.whoop.com/oauth/oauth2/auth",
    token_url: "https://api.prod.whoop.com/oauth/oauth2/token",
    api_url: "https://api.prod.whoop.com/developer",
    scopes: SCOPES,
    authorize_extra: &[],
    client_auth: ClientAuth::Body,
    refresh: Refresh::Token { extra: &[("scope", "offline")] },
};

pub struct Whoop {
    api: Api,
}

impl Whoop {
    pub fn new(config: AppConfig) -> Self {
        Self { api: Api::new(&DESCRIPTION, config) }
    }

    /// WHOOP's real hosts.
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
    }

    /// Every record of a collection whose time lies in `[from, to)`, page after page.
    async fn collection<T: DeserializeOwned>(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        path: &str,
        (from, to): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<Vec<T>, ProviderError> {
        let mut out = Vec::new();
        let mut next: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut query =
                vec![("limit", PAGE_LIMIT.to_string()), ("start", rfc3339(from)), ("end", rfc3339(to))];
            let previous = next.take();
            if let Some(token) = &previous {
                query.push(("nextToken", token.clone()));
            }
            let page: Page<T> =
                self.api.get_json(gate, credentials.access_token.expose(), path, &query).await?;
            out.extend(page.records);
            match page.next_token.filter(|t| !t.is_empty()) {
                // The same token again would page forever.
                Some(token) if Some(&token) == previous.as_ref() => {
                    return Err(ProviderError::Api(format!(
                        "{SLUG} answered the same next page token twice"
                    )));
                }
                Some(token) => next = Some(token),
                None => return Ok(out),
            }
        }
        Err(ProviderError::Api(format!("{SLUG} kept paging past {MAX_PAGES} pages")))
    }

    async fn delete_access(&self, credentials: &ProviderCredentials) -> Result<(), ProviderError> {
        let url = format!("{}/v2/user/access", self.api.config.endpoints.api);
        let request = self.api.http.delete(url).bearer_auth(credentials.access_token.expose());
        http::check(SLUG, http::send(SLUG, request).await?).map(|_| ())
    }
}

/// The window queried for a range of local days: a day either side, since a record's local
/// day can differ from its UTC day by up to 14 hours; records are kept by their local day.
fn window(range: DateRange) -> (DateTime<Utc>, DateTime<Utc>) {
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc();
    (midnight(range.start) - Duration::days(1), midnight(range.end) + Duration::days(2))
}

pub(crate) fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

pub(crate) fn in_range(range: DateRange, day: NaiveDate) -> bool {
    range.start <= day && day <= range.end
}

/// A WHOOP `timezone_offset` (`+01:00`, `-05:00`, `Z`).
fn parse_offset(s: &str) -> Option<FixedOffset> {
    if s == "Z" {
        return FixedOffset::east_opt(0);
    }
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':')?;
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    if !(0..60).contains(&m) {
        return None;
    }
    FixedOffset::east_opt(sign * (h * 3600 + m * 60))
}

/// The IANA zone of a whole-hour offset (`Etc/GMT-1` is UTC+1: the Etc names' sign is
/// reversed); none for offsets such as +05:30, whose records fall back to the user's zone.
pub(crate) fn etc_zone(offset: FixedOffset) -> Option<String> {
    let secs = offset.local_minus_utc();
    if secs % 3600 != 0 {
        return None;
    }
    Some(match secs / 3600 {
        0 => "Etc/UTC".to_owned(),
        h if (-12..=14).contains(&h) => format!("Etc/GMT{:+}", -h),
        _ => return None,
    })
}

/// The local day of `t` and the record's zone, from WHOOP's offset (UTC without one).
fn local(t: DateTime<Utc>, offset: Option<&str>) -> (NaiveDate, Option<String>) {
    match offset.and_then(parse_offset) {
        Some(o) => (t.with_timezone(&o).date_naive(), etc_zone(o)),
        None => (t.date_naive(), None),
    }
}

pub(crate) fn with_zone(mut record: Value, zone: Option<String>) -> Value {
    if let (Some(zone), Some(map)) = (zone, record.as_object_mut()) {
        map.insert("timezone".into(), Value::String(zone));
    }
    record
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

#[derive(Debug, Deserialize)]
struct Page<T> {
    records: Vec<T>,
    #[serde(default)]
    next_token: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Profile {
    user_id: i64,
}

#[derive(Debug, Deserialize)]
struct Body {
    #[serde(default)]
    height_meter: Option<f64>,
    #[serde(default)]
    weight_kilogram: Option<f64>,
}

/// WHOOP's `score_state`: a `score` is read only when `SCORED` (WHOOP's OpenAPI document: "Only
/// present if the ... State is `SCORED`").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum ScoreState {
    Scored,
    PendingScore,
    Unscorable,
    /// A state WHOOP may add later: treated as unscored.
    #[serde(other)]
    Unknown,
}

/// The score of a record whose state is `SCORED`.
fn scored<T>(state: ScoreState, score: &Option<T>) -> Option<&T> {
    if state == ScoreState::Scored { score.as_ref() } else { None }
}

#[derive(Debug, Deserialize)]
struct Sleep {
    id: String,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    #[serde(default)]
    timezone_offset: Option<String>,
    #[serde(default)]
    nap: bool,
    score_state: ScoreState,
    #[serde(default)]
    score: Option<SleepScore>,
}

impl Sleep {
    fn score(&self) -> Option<&SleepScore> {
        scored(self.score_state, &self.score)
    }
}

#[derive(Debug, Deserialize)]
struct SleepScore {
    stage_summary: StageSummary,
    #[serde(default)]
    respiratory_rate: Option<f64>,
    #[serde(default)]
    sleep_efficiency_percentage: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct StageSummary {
    total_in_bed_time_milli: i64,
    total_awake_time_milli: i64,
    total_light_sleep_time_milli: i64,
    total_slow_wave_sleep_time_milli: i64,
    total_rem_sleep_time_milli: i64,
}

#[derive(Debug, Deserialize)]
struct Workout {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    #[serde(default)]
    timezone_offset: Option<String>,
    #[serde(default)]
    sport_name: Option<String>,
    score_state: ScoreState,
    #[serde(default)]
    score: Option<WorkoutScore>,
}

#[derive(Debug, Deserialize)]
struct WorkoutScore {
    #[serde(default)]
    average_heart_rate: Option<f64>,
    #[serde(default)]
    kilojoule: Option<f64>,
    #[serde(default)]
    distance_meter: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Recovery {
    sleep_id: String,
    score_state: ScoreState,
    #[serde(default)]
    score: Option<RecoveryScore>,
}

#[derive(Debug, Deserialize)]
struct RecoveryScore {
    #[serde(default)]
    resting_heart_rate: Option<f64>,
    #[serde(default)]
    hrv_rmssd_milli: Option<f64>,
    #[serde(default)]
    spo2_percentage: Option<f64>,
    #[serde(default)]
    skin_temp_celsius: Option<f64>,
}

/// Sleep summaries: every scored sleep, dated by the local day it ends on, oldest first. A nap
/// (`nap`: "If true, this sleep activity was a nap for the user") is an acknowledged nap; the
/// pipeline types the others by their length.
fn sleep_records(sleeps: &[Sleep], range: DateRange) -> Vec<Value> {
    let mut records = Vec::new();
    for s in sleeps {
        let Some(score) = s.score() else { continue };
        let (day, zone) = local(s.end, s.timezone_offset.as_deref());
        if !in_range(range, day) {
            continue;
        }
        let st = &score.stage_summary;
        let secs = |ms: i64| ms / 1000;
        let mut record = json!({
            "date": day.to_string(),
            "bedtime_start": rfc3339(s.start),
            "bedtime_stop": rfc3339(s.end),
            "duration_s": secs(st.total_in_bed_time_milli),
            "deep_s": secs(st.total_slow_wave_sleep_time_milli),
            "rem_s": secs(st.total_rem_sleep_time_milli),
            "light_s": secs(st.total_light_sleep_time_milli),
            "awake_s": secs(st.total_awake_time_milli),
        });
        if let Some(e) = score.sleep_efficiency_percentage {
            record["efficiency"] = json!(e);
        }
        if s.nap {
            record["type"] = json!("acknowledged_nap");
        }
        records.push(with_zone(record, zone));
    }
    oldest_first(records, "bedtime_start")
}

/// One timeseries row.
fn sample(at: DateTime<Utc>, value: f64, unit: &str, zone: Option<String>) -> Value {
    with_zone(json!({"timestamp": rfc3339(at), "value": value, "unit": unit}), zone)
}

/// WHOOP lists newest first; rows are given oldest first (by `key`, an RFC 3339 UTC time,
/// which sorts as text).
fn oldest_first(mut rows: Vec<Value>, key: &str) -> Vec<Value> {
    rows.sort_by(|a, b| a[key].as_str().cmp(&b[key].as_str()));
    rows
}

fn respiratory_rows(sleeps: &[Sleep], range: DateRange) -> Vec<Value> {
    let rows = sleeps
        .iter()
        .filter_map(|s| {
            let rate = s.score()?.respiratory_rate?;
            let (day, zone) = local(s.end, s.timezone_offset.as_deref());
            in_range(range, day).then(|| sample(s.end, rate, "bpm", zone))
        })
        .collect();
    oldest_first(rows, "timestamp")
}

fn workout_records(workouts: &[Workout], range: DateRange) -> Vec<Value> {
    let records = workouts
        .iter()
        .filter_map(|w| {
            let (day, zone) = local(w.start, w.timezone_offset.as_deref());
            if !in_range(range, day) {
                return None;
            }
            let sport = w.sport_name.as_deref().map_or_else(|| "other".to_owned(), sport_slug);
            let mut record = json!({
                "date": day.to_string(),
                "time_start": rfc3339(w.start),
                "time_end": rfc3339(w.end),
                "sport": sport,
            });
            if let Some(score) = scored(w.score_state, &w.score) {
                if let Some(kj) = score.kilojoule {
                    record["calories"] = json!(round1(kj / KJ_PER_KCAL));
                }
                if let Some(m) = score.distance_meter {
                    record["distance_m"] = json!(m);
                }
                if let Some(hr) = score.average_heart_rate {
                    record["average_hr"] = json!(hr);
                }
            }
            Some(with_zone(record, zone))
        })
        .collect();
    oldest_first(records, "time_start")
}

/// A recovery resource's rows, each at the end of the sleep the recovery belongs to.
fn recovery_rows(
    resource: &Resource,
    recoveries: &[Recovery],
    sleeps: &[Sleep],
    range: DateRange,
) -> Vec<Value> {
    let (pick, unit): (fn(&RecoveryScore) -> Option<f64>, &str) = match resource {
        Resource::Hrv => (|s| s.hrv_rmssd_milli, "ms"),
        Resource::BloodOxygen => (|s| s.spo2_percentage, "%"),
        _ => (|s| s.skin_temp_celsius, "°C"),
    };
    let rows = recoveries
        .iter()
        .filter_map(|r| {
            let value = pick(scored(r.score_state, &r.score)?)?;
            let sleep = sleeps.iter().find(|s| s.id == r.sleep_id)?;
            let (day, zone) = local(sleep.end, sleep.timezone_offset.as_deref());
            in_range(range, day).then(|| sample(sleep.end, value, unit, zone))
        })
        .collect();
    oldest_first(rows, "timestamp")
}

/// Activity records of the recoveries' resting heart rates (`score.resting_heart_rate`, bpm),
/// each on the local day its sleep ends on, as the recovery's timeseries are stamped. Of two
/// recoveries of one day (a nap's among them), the later sleep's.
fn resting_records(recoveries: &[Recovery], sleeps: &[Sleep], range: DateRange) -> Vec<Value> {
    let mut days: std::collections::BTreeMap<NaiveDate, (DateTime<Utc>, Value)> = Default::default();
    for r in recoveries {
        let Some(bpm) = scored(r.score_state, &r.score).and_then(|s| s.resting_heart_rate) else { continue };
        let Some(sleep) = sleeps.iter().find(|s| s.id == r.sleep_id) else { continue };
        let (day, zone) = local(sleep.end, sleep.timezone_offset.as_deref());
        if !in_range(range, day) || days.get(&day).is_some_and(|(end, _)| *end > sleep.end) {
            continue;
        }
        let record = with_zone(json!({"date": day.to_string(), "resting_hr_bpm": bpm}), zone);
        days.insert(day, (sleep.end, record));
    }
    days.into_values().map(|(_, r)| r).collect()
}

/// The body record: WHOOP keeps only the current weight, so it is dated `today` and given only
/// when today is in the range.
fn body_records(body: &Body, range: DateRange, today: NaiveDate) -> Vec<Value> {
    match body.weight_kilogram {
        Some(kg) if in_range(range, today) => vec![json!({"date": today.to_string(), "weight_kg": kg})],
        _ => vec![],
    }
}

fn profile_records(body: &Body) -> Vec<Value> {
    match body.height_meter {
        Some(m) => vec![json!({"height_m": m})],
        None => vec![],
    }
}

/// WHOOP's webhook body (v2 model).
#[derive(Debug, Deserialize)]
struct Event {
    user_id: i64,
    #[serde(rename = "type")]
    kind: String,
}

/// Reads a request to WHOOP's push endpoint at `now`: POST, signed
/// (`X-WHOOP-Signature` = base64 HMAC-SHA256 with the app's secret over
/// `X-WHOOP-Signature-Timestamp` + raw body) and fresh; anything else is refused.
pub fn read_push(client: &OauthClient, request: &PushRequest, now: DateTime<Utc>) -> PushOutcome {
    let refused = |why: &str| PushOutcome::Refused(format!("{SLUG} push {why}"));
    if !request.method.eq_ignore_ascii_case("POST") {
        return refused("is not a POST (WHOOP has no handshake)");
    }
    let (Some(signature), Some(timestamp)) =
        (request.header("x-whoop-signature"), request.header("x-whoop-signature-timestamp"))
    else {
        return refused("is unsigned");
    };
    let Ok(sent_ms) = timestamp.trim().parse::<i64>() else {
        return refused("has an unreadable timestamp");
    };
    if (now.timestamp_millis() - sent_ms).abs() > PUSH_MAX_SKEW_SECS * 1000 {
        return refused("is stale");
    }
    let mut signed = timestamp.as_bytes().to_vec();
    signed.extend_from_slice(&request.body);
    let expected = base64::engine::general_purpose::STANDARD
        .encode(hmac_sha256(client.client_secret.expose().as_bytes(), &signed));
    if !constant_time_eq(expected.as_bytes(), signature.trim().as_bytes()) {
        return refused("is badly signed");
    }
    let Ok(event) = serde_json::from_slice::<Event>(&request.body) else {
        return refused("has an unreadable body");
    };
    let resources: &[Resource] = match event.kind.split_once('.').map(|(family, _)| family) {
        Some("sleep") => SLEEP_RESOURCES,
        Some("workout") => &[Resource::Workouts],
        Some("recovery") => RECOVERY_RESOURCES,
        _ => &[],
    };
    if resources.is_empty() {
        return PushOutcome::Notices(vec![]);
    }
    PushOutcome::Notices(vec![PushNotice {
        external_user_id: event.user_id.to_string(),
        resources: resources.to_vec(),
        range: None,
    }])
}

#[async_trait]
impl Adapter for Whoop {
    fn api(&self) -> &Api {
        &self.api
    }

    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let credentials = self.api.exchange(exchange).await?;
        // Without `offline` WHOOP issues no refresh token: the link would die within the hour.
        if credentials.refresh_token.is_none() {
            return Err(ProviderError::ScopesNotGranted(vec!["offline".into()]));
        }
        let profile: Profile = self
            .api
            .get_json(&NoLimit, credentials.access_token.expose(), "/v2/user/profile/basic", &[])
            .await?;
        tracing::info!(provider = SLUG, external_user_id = profile.user_id, "linked");
        Ok(ProviderAccount { external_user_id: profile.user_id.to_string(), credentials })
    }

    async fn fetch(
        &self,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        let c = &account.credentials;
        let w = window(range);
        let records = match resource {
            Resource::Sleep => {
                sleep_records(&self.collection(gate, c, "/v2/activity/sleep", w).await?, range)
            }
            Resource::RespiratoryRate => {
                respiratory_rows(&self.collection(gate, c, "/v2/activity/sleep", w).await?, range)
            }
            Resource::Workouts => {
                workout_records(&self.collection(gate, c, "/v2/activity/workout", w).await?, range)
            }
            Resource::Activity => {
                let recoveries: Vec<Recovery> = self.collection(gate, c, "/v2/recovery", w).await?;
                let sleeps: Vec<Sleep> = self.collection(gate, c, "/v2/activity/sleep", w).await?;
                resting_records(&recoveries, &sleeps, range)
            }
            r if RECOVERY_SERIES.contains(r) => {
                let recoveries: Vec<Recovery> = self.collection(gate, c, "/v2/recovery", w).await?;
                let sleeps: Vec<Sleep> = self.collection(gate, c, "/v2/activity/sleep", w).await?;
                recovery_rows(r, &recoveries, &sleeps, range)
            }
            Resource::Body => {
                let body: Body = self
                    .api
                    .get_json(gate, c.access_token.expose(), "/v2/user/measurement/body", &[])
                    .await?;
                body_records(&body, range, Utc::now().date_naive())
            }
            Resource::Profile => profile_records(
                &self.api.get_json(gate, c.access_token.expose(), "/v2/user/measurement/body", &[]).await?,
            ),
            other => return Err(ProviderError::Unsupported(format!("{SLUG} does not serve {other}"))),
        };
        tracing::debug!(provider = SLUG, resource = %resource, records = records.len(), "fetched");
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    /// `DELETE /v2/user/access`, an expired access token refreshed first
    /// ([`oauth::revoke_refreshing`]).
    async fn revoke(&self, client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError> {
        oauth::revoke_refreshing(
            &account.credentials,
            |c| async move { self.delete_access(&c).await },
            || self.api.refresh(client, &account.credentials),
        )
        .await
    }

    fn push(
        &self,
        client: &OauthClient,
        _verification_token: Option<&str>,
        request: &PushRequest,
    ) -> PushOutcome {
        read_push(client, request, Utc::now())
    }

    fn push_claimed_user(&self, request: &PushRequest) -> Option<String> {
        serde_json::from_slice::<Event>(&request.body).ok().map(|e| e.user_id.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_give_the_local_day_and_an_etc_zone() {
        let t: DateTime<Utc> = "2026-11-22T04:05:00Z".parse().unwrap();
        assert_eq!(local(t, Some("-05:00")), ("2026-11-21".parse().unwrap(), Some("Etc/GMT+5".into())));
        assert_eq!(local(t, Some("+01:00")), ("2026-11-22".parse().unwrap(), Some("Etc/GMT-1".into())));
        assert_eq!(local(t, Some("+05:30")).1, None, "no IANA name for a half-hour offset");
        assert_eq!(local(t, Some("Z")).1, Some("Etc/UTC".into()));
        assert_eq!(local(t, Some("garbage")), (t.date_naive(), None));
        assert_eq!(local(t, None), (t.date_naive(), None));
    }

    #[test]
    fn a_score_is_read_only_in_the_scored_state() {
        let sleep = |state: &str| {
            serde_json::from_value::<Sleep>(json!({
                "id": "s", "start": "2026-11-21T00:00:00Z", "end": "2026-11-21T07:00:00Z",
                "timezone_offset": "Z", "nap": false, "score_state": state,
                "score": {"stage_summary": {"total_in_bed_time_milli": 1, "total_awake_time_milli": 0,
                    "total_light_sleep_time_milli": 0, "total_slow_wave_sleep_time_milli": 0,
                    "total_rem_sleep_time_milli": 0}, "respiratory_rate": 15.0}
            }))
            .unwrap()
        };
        assert!(sleep("SCORED").score().is_some());
        for state in ["PENDING_SCORE", "UNSCORABLE", "SOMETHING_NEW"] {
            assert!(sleep(state).score().is_none(), "{state}");
        }
    }

    #[test]
    fn body_is_dated_today_only() {
        let body = Body { height_meter: None, weight_kilogram: Some(80.0) };
        let day = |s: &str| s.parse::<NaiveDate>().unwrap();
        let range = DateRange { start: day("2026-11-01"), end: day("2026-11-10") };
        assert_eq!(body_records(&body, range, day("2026-11-10")).len(), 1);
        assert!(body_records(&body, range, day("2026-11-11")).is_empty());
    }
}
