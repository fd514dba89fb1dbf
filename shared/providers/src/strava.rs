//! Strava API v3 (https://www.strava.com/api/v3), catalog slug `strava` (linked through each
//! team's own Strava application): OAuth 2 with the client in the body, comma-separated scopes
//! and rotating refresh tokens; activities paged by `page`/`per_page` until a short page; one
//! push subscription per application, answered by a `hub.challenge` handshake, with unsigned
//! events. Facts: Strava's published documents, listed under "Sources" in the Strava section of
//! `docs/PROVIDERS.md`, chiefly Strava's published Swagger document
//! (https://developers.strava.com/swagger/swagger.json); what is mapped to what: that section
//! too.
//!
//! What is mapped (Strava's units are already Wearlab's: m, s, bpm):
//! - `workouts`: `GET /athlete/activities`, one per activity, dated by its local start day; its
//!   calories from the summary's `kilojoules` of work (see [`Activity::kilocalories`]).
//! - `heartrate`, `distance`, `workout_stream`: `GET /activities/{id}/streams` of those
//!   activities, each sample stamped at the activity's start plus the `time` stream; distance as
//!   the metres covered since the previous sample (Strava's stream is cumulative), and the
//!   workout stream's power (W) and cadence (rpm) samples, told apart by their unit. One streams
//!   call per activity asks every key at once and serves the three resources: an activity list
//!   and an activity's streams are kept for a short while ([`Kept`]), so the pipeline's fetches
//!   of the three (one round, at once) ask Strava once, not three times.
//! - `profile`: `GET /athlete` (Strava has neither height nor birth date in its schema: the
//!   profile only names its source).
//!
//! Private activities (`private`, "Only Me") are kept only when `activity:read_all` was granted;
//! without any activity scope the activity resources answer `ScopesNotGranted`.

use async_trait::async_trait;
use chrono::{DateTime, Duration, NaiveDate, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use wearlab_domain::common::ids::TimeZoneId;
use wearlab_domain::common::signing::constant_time_eq;
use wearlab_domain::ports::providers::{
    CodeExchange, DateRange, FetchedResource, NoLimit, OauthClient, ProviderAccount, ProviderCredentials,
    ProviderError, PushNotice, PushOutcome, PushRequest, RateWindow, RequestGate,
};
use wearlab_models::Resource;

use crate::adapter::{Adapter, sport_slug};
use crate::config::{AppConfig, Endpoints};
use crate::description::{Api, ProviderDescription, Refresh};
use crate::http;
use crate::kept::{Kept, TokenDigest, digest};
use crate::oauth::{self, ClientAuth, TokenAnswer};

pub const SLUG: &str = "strava";

/// What Wearlab asks for, comma-separated as Strava wants (Strava's Swagger document's
/// `securityDefinitions`): `read` (the athlete) and `activity:read_all` (activities, "Only Me" ones
/// included). The user may untick either at the consent; what was granted is respected when
/// fetching.
pub const SCOPES: &str = "read,activity:read_all";

/// Strava's largest page (`per_page`, default 30, max 200).
pub const PER_PAGE: usize = 200;

/// The streams asked for: `time` places the others.
pub const STREAM_KEYS: &str = "time,heartrate,watts,cadence,distance";

/// Strava's "non-upload" (read) limits of one application: 100 requests per 15 minutes and
/// 1,000 a day. Its windows turn over at :00/:15/:30/:45 and at 00:00 UTC, as
/// `throttle::take_app`'s epoch-aligned windows do.
const LIMITS: &[RateWindow] =
    &[RateWindow { requests: 100, window_secs: 900 }, RateWindow { requests: 1_000, window_secs: 86_400 }];

const RESOURCES: &[Resource] = &[
    Resource::Profile,
    Resource::Workouts,
    Resource::WorkoutStream,
    Resource::Heartrate,
    Resource::Distance,
];

/// The resources an activity fills (a push about one fetches them again).
const ACTIVITY_RESOURCES: &[Resource] =
    &[Resource::Workouts, Resource::WorkoutStream, Resource::Heartrate, Resource::Distance];

/// A provider that keeps answering full pages is cut off here (a loop, not data).
const MAX_PAGES: usize = 500;

/// Strava's short-term window (15 minutes).
const QUARTER_HOUR_SECS: i64 = 900;

/// How long an activity list is kept: long enough for the fetches of one pipeline round (they
/// run at once), short enough that a later poll or push reads Strava again.
const LIST_LIFE: std::time::Duration = std::time::Duration::from_secs(60);
/// How long an activity's streams are kept (recorded streams do not change once uploaded).
const STREAMS_LIFE: std::time::Duration = std::time::Duration::from_secs(300);
/// Most activity lists kept at once (each is one window of one access token).
const MOST_LISTS: usize = 64;
/// Most activities' streams kept at once: an hour at one sample a second is about 300 KB, so
/// about 10 MB; the pipeline's concurrent stream fetches read each one right after it arrives.
const MOST_STREAMS: usize = 32;

/// Strava as its published documents describe it: the client in the token form's body;
/// refresh tokens may rotate.
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: LIMITS,
    user_limits: &[],
    authorize_url: "https://www.strava.com/oauth/authorize",
    token_url: "https://www.strava.com/oauth/token",
    api_url: "https://www.strava.com/api/v3",
    scopes: SCOPES,
    authorize_extra: &[],
    client_auth: ClientAuth::Body,
    refresh: Refresh::Token { extra: &[] },
};

pub struct Strava {
    api: Api,
    /// Activity lists by (access token digest, window).
    kept_lists: Kept<(TokenDigest, i64, i64), Vec<Activity>>,
    /// Streams by (access token digest, activity id); `None`: Strava has none.
    kept_streams: Kept<(TokenDigest, i64), Option<Streams>>,
}

impl Strava {
    pub fn new(config: AppConfig) -> Self {
        Self {
            api: Api::new(&DESCRIPTION, config),
            kept_lists: Kept::new(LIST_LIFE, MOST_LISTS),
            kept_streams: Kept::new(STREAMS_LIFE, MOST_STREAMS),
        }
    }

    /// Strava's real hosts.
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
    }

    /// `POST /oauth/deauthorize`, beside the token endpoint.
    fn deauthorize_url(&self) -> String {
        self.api.config.endpoints.next_to_token("deauthorize")
    }

    async fn get(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<http::Answer, ProviderError> {
        check(self.api.send_get(gate, credentials.access_token.expose(), path, query).await?)
    }

    /// Every activity that started in `[after, before)`, page after page until a short one.
    async fn activities(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        (after, before): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<Vec<Activity>, ProviderError> {
        let mut out = Vec::new();
        for page in 1..=MAX_PAGES {
            let query = [
                ("after", after.timestamp().to_string()),
                ("before", before.timestamp().to_string()),
                ("page", page.to_string()),
                ("per_page", PER_PAGE.to_string()),
            ];
            let items: Vec<Activity> =
                self.get(gate, credentials, "/athlete/activities", &query).await?.json(SLUG)?;
            let short = items.len() < PER_PAGE;
            out.extend(items);
            if short {
                return Ok(out);
            }
        }
        Err(ProviderError::Api(format!("{SLUG} kept paging past {MAX_PAGES} pages")))
    }

    /// The activities of `range`'s local days the granted scopes let Wearlab read.
    async fn readable_activities(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        range: DateRange,
    ) -> Result<Vec<Activity>, ProviderError> {
        let read_all = activity_access(&credentials.scopes)?;
        let (after, before) = window(range);
        let key = (digest(credentials), after.timestamp(), before.timestamp());
        let all =
            self.kept_lists.get_or_fetch(key, || self.activities(gate, credentials, (after, before))).await?;
        Ok(all
            .iter()
            .filter(|a| read_all || !a.only_me())
            .filter(|a| a.local_day().is_some_and(|d| range.start <= d && d <= range.end))
            .cloned()
            .collect())
    }

    /// The streams of one activity; `None` when Strava has none (404: a manual activity, or
    /// one deleted since it was listed).
    async fn streams(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        id: i64,
    ) -> Result<Option<Streams>, ProviderError> {
        let query = [("keys", STREAM_KEYS), ("key_by_type", "true")];
        let path = format!("/activities/{id}/streams");
        let answer = self.api.send_get(gate, credentials.access_token.expose(), &path, &query).await?;
        if answer.status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Ok(Some(Streams::read(&check(answer)?.json(SLUG)?)))
    }

    /// One stream resource's rows over the activities of `range`.
    async fn stream_rows(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        resource: &Resource,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut rows = Vec::new();
        for activity in self.readable_activities(gate, credentials, range).await? {
            // A manual activity has no recorded streams: not asked for.
            if activity.manual {
                continue;
            }
            let key = (digest(credentials), activity.id);
            let streams =
                self.kept_streams.get_or_fetch(key, || self.streams(gate, credentials, activity.id)).await?;
            if let Some(streams) = streams.as_ref() {
                rows.extend(streams.rows(resource, &activity));
            }
        }
        Ok(rows)
    }

    async fn deauthorize(&self, credentials: &ProviderCredentials) -> Result<(), ProviderError> {
        let body = serde_urlencoded::to_string([("access_token", credentials.access_token.expose())])
            .map_err(|e| ProviderError::Api(e.to_string()))?;
        let request = self
            .api
            .http
            .post(self.deauthorize_url())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        check(http::send(SLUG, request).await?).map(|_| ())
    }

    /// The application's push subscriptions.
    fn subscriptions(&self) -> String {
        format!("{}/push_subscriptions", self.api.config.endpoints.api)
    }
}

/// A data call's answer: as [`http::check`], but a 429's wait read from Strava's usage headers.
fn check(answer: http::Answer) -> Result<http::Answer, ProviderError> {
    if answer.status.as_u16() == 429 {
        return Err(ProviderError::RateLimited {
            retry_after_secs: retry_after(&answer.headers, Utc::now()),
        });
    }
    http::check(SLUG, answer)
}

/// Seconds to wait after Strava's 429 at `now`. Strava sends no reset time, but its usage and
/// limits as "15-minute,daily" pairs (`X-ReadRateLimit-*` for reads, else `X-RateLimit-*`): a
/// spent daily budget waits for 00:00 UTC, otherwise the next quarter hour (:00/:15/:30/:45).
/// Without them, `Retry-After` or the shared default ([`http::retry_after`]).
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: DateTime<Utc>) -> u64 {
    let pair = |name: &str| -> Option<(u64, u64)> {
        let (a, b) = headers.get(name)?.to_str().ok()?.split_once(',')?;
        Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
    };
    let read = pair("x-readratelimit-usage").zip(pair("x-readratelimit-limit"));
    let overall = pair("x-ratelimit-usage").zip(pair("x-ratelimit-limit"));
    let Some(((_, daily_used), (_, daily_limit))) = read.or(overall) else {
        return http::retry_after(headers, now.timestamp());
    };
    let at = now.timestamp();
    let secs = if daily_used >= daily_limit {
        (at.div_euclid(86_400) + 1) * 86_400 - at
    } else {
        (at.div_euclid(QUARTER_HOUR_SECS) + 1) * QUARTER_HOUR_SECS - at
    };
    secs.max(1) as u64
}

/// Whether the granted scopes read "Only Me" activities too (`activity:read_all`), or only the
/// others (`activity:read`); neither is a clear refusal (Strava's Swagger document: the activity
/// paths require `activity:read`).
pub fn activity_access(scopes: &[String]) -> Result<bool, ProviderError> {
    let granted = |s: &str| scopes.iter().any(|g| g == s);
    if granted("activity:read_all") {
        Ok(true)
    } else if granted("activity:read") {
        Ok(false)
    } else {
        Err(ProviderError::ScopesNotGranted(vec!["activity:read".into()]))
    }
}

/// The epoch window asked for a range of local days: a day either side, since a local day
/// differs from the UTC one by up to 14 hours; activities are kept by their local day.
fn window(range: DateRange) -> (DateTime<Utc>, DateTime<Utc>) {
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc();
    (midnight(range.start) - Duration::days(1), midnight(range.end) + Duration::days(2))
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Strava's `timezone` ("(GMT-08:00) America/Los_Angeles") as its IANA name, when it is one.
fn iana_zone(timezone: &str) -> Option<String> {
    let name = timezone.rsplit_once(") ").map_or(timezone, |(_, n)| n).trim();
    TimeZoneId::parse(name).map(|_| name.to_owned())
}

/// A sport type in Strava's CamelCase (`MountainBikeRide`, `EMountainBikeRide`) as words, then
/// a Wearlab sport slug (`mountain_bike_ride`, `e_mountain_bike_ride`).
fn sport(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut words = String::with_capacity(name.len() + 4);
    for (i, c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1);
        let starts_word = c.is_uppercase()
            && prev.is_some_and(|p| {
                p.is_lowercase() || (p.is_uppercase() && next.is_some_and(|n| n.is_lowercase()))
            });
        if starts_word {
            words.push(' ');
        }
        words.push(*c);
    }
    sport_slug(&words)
}

#[derive(Debug, Deserialize)]
struct AthleteRef {
    id: i64,
}

/// Strava's token answer: the standard fields and the athlete it was issued for.
#[derive(Debug, Deserialize)]
struct TokenWithAthlete {
    #[serde(flatten)]
    token: TokenAnswer,
    #[serde(default)]
    athlete: Option<AthleteRef>,
}

/// The fields of a SummaryActivity Wearlab reads (Strava's Swagger document; units in the
/// comments).
#[derive(Debug, Clone, Deserialize)]
struct Activity {
    id: i64,
    #[serde(default)]
    sport_type: Option<String>,
    /// Deprecated for `sport_type`, read when that is missing.
    #[serde(default, rename = "type")]
    kind: Option<String>,
    start_date: DateTime<Utc>,
    /// The local wall-clock time, written with a `Z` although it is not UTC.
    #[serde(default)]
    start_date_local: Option<String>,
    #[serde(default)]
    timezone: Option<String>,
    /// Seconds.
    #[serde(default)]
    elapsed_time: Option<i64>,
    /// Metres.
    #[serde(default)]
    distance: Option<f64>,
    /// Beats per minute.
    #[serde(default)]
    average_heartrate: Option<f64>,
    /// Kilocalories: only in a DetailedActivity, never in the list's summaries.
    #[serde(default)]
    calories: Option<f64>,
    /// Kilojoules of mechanical work (rides with a power meter or Strava's estimated power);
    /// in the list's summaries.
    #[serde(default)]
    kilojoules: Option<f64>,
    #[serde(default)]
    private: bool,
    /// "Only Me" as Strava's Swagger document's `activity:read_all` scope words it; read besides
    /// `private`.
    #[serde(default)]
    visibility: Option<String>,
    #[serde(default)]
    manual: bool,
}

impl Activity {
    fn only_me(&self) -> bool {
        self.private || self.visibility.as_deref() == Some("only_me")
    }

    /// The day it started on where it happened.
    fn local_day(&self) -> Option<NaiveDate> {
        match &self.start_date_local {
            Some(s) => s.get(..10)?.parse().ok(),
            None => Some(self.start_date.date_naive()),
        }
    }

    fn zone(&self) -> Option<String> {
        self.timezone.as_deref().and_then(iana_zone)
    }

    /// The energy burned (kcal): a DetailedActivity's `calories`, else the summary's
    /// `kilojoules` of work taken 1:1 as kilocalories. Strava computes a ride's calories from its
    /// power output and a coefficient of human efficiency (Strava's support article "Calorie
    /// Calculation", https://support.strava.com/hc/en-us/articles/216917097-Calorie-Calculation):
    /// at the gross efficiency usually taken for cycling, about 24 %, the 4.184 kJ of a
    /// kilocalorie cancel out (kJ / (4.184 x 0.24) = 0.996 kJ), so kilojoules of work are about
    /// the kilocalories burned. Without either (a run, a ride without power) there are none.
    fn kilocalories(&self) -> Option<f64> {
        self.calories.or(self.kilojoules)
    }

    fn record(&self) -> Option<Value> {
        let day = self.local_day()?;
        let end = self.start_date + Duration::seconds(self.elapsed_time.unwrap_or(0).max(0));
        let kind = self.sport_type.as_deref().or(self.kind.as_deref());
        let mut record = json!({
            "date": day.to_string(),
            "time_start": rfc3339(self.start_date),
            "time_end": rfc3339(end),
            "sport": kind.map_or_else(|| "other".to_owned(), sport),
        });
        let optional = [
            ("distance_m", self.distance),
            ("average_hr", self.average_heartrate),
            ("calories", self.kilocalories()),
        ];
        for (key, value) in optional {
            if let Some(v) = value {
                record[key] = json!(v);
            }
        }
        if let Some(zone) = self.zone() {
            record["timezone"] = json!(zone);
        }
        Some(record)
    }
}

/// The streams of one activity Wearlab reads, each a value per `time` offset (null gaps kept as
/// `None` so the series stay aligned).
#[derive(Debug, Default)]
struct Streams {
    time: Vec<Option<f64>>,
    heartrate: Vec<Option<f64>>,
    watts: Vec<Option<f64>>,
    cadence: Vec<Option<f64>>,
    distance: Vec<Option<f64>>,
}

impl Streams {
    /// Strava's answer keyed by type (`key_by_type=true`, a StreamSet), or a list of streams
    /// each naming its `type` (Strava's Swagger document's example).
    fn read(answer: &Value) -> Self {
        let data = |s: &Value| -> Vec<Option<f64>> {
            s.get("data")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Value::as_f64).collect())
                .unwrap_or_default()
        };
        let mut out = Self::default();
        let mut put = |kind: &str, stream: &Value| {
            let slot = match kind {
                "time" => &mut out.time,
                "heartrate" => &mut out.heartrate,
                "watts" => &mut out.watts,
                "cadence" => &mut out.cadence,
                "distance" => &mut out.distance,
                _ => return,
            };
            *slot = data(stream);
        };
        match answer {
            Value::Object(map) => map.iter().for_each(|(k, s)| put(k, s)),
            Value::Array(list) => {
                for s in list {
                    if let Some(kind) = s.get("type").and_then(Value::as_str) {
                        put(kind, s);
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// The rows of `resource` for `activity`.
    fn rows(&self, resource: &Resource, activity: &Activity) -> Vec<Value> {
        let zone = activity.zone();
        let at = |i: usize| -> Option<String> {
            let offset = self.time.get(i).copied().flatten()?;
            Some(rfc3339(activity.start_date + Duration::milliseconds((offset * 1000.0) as i64)))
        };
        let row = |i: usize, value: f64, unit: &str| -> Option<Value> {
            let mut r = json!({"timestamp": at(i)?, "value": value, "unit": unit});
            if let Some(z) = &zone {
                r["timezone"] = json!(z);
            }
            Some(r)
        };
        let series = |values: &[Option<f64>], unit: &str| -> Vec<Value> {
            values.iter().enumerate().filter_map(|(i, v)| row(i, (*v)?, unit)).collect()
        };
        match resource {
            Resource::Heartrate => series(&self.heartrate, "bpm"),
            Resource::WorkoutStream => {
                let mut rows = series(&self.watts, "W");
                rows.extend(series(&self.cadence, "rpm"));
                rows
            }
            Resource::Distance => {
                // Cumulative metres -> metres since the previous sample (a gap carries over).
                let mut last = 0.0;
                self.distance
                    .iter()
                    .enumerate()
                    .filter_map(|(i, d)| {
                        let d = (*d)?;
                        let covered = (d - last).max(0.0);
                        last = d;
                        row(i, (covered * 100.0).round() / 100.0, "m")
                    })
                    .collect()
            }
            _ => vec![],
        }
    }
}

/// A push subscription as Strava lists it.
#[derive(Debug, Deserialize)]
struct Subscription {
    #[serde(default)]
    callback_url: String,
}

/// Strava's webhook event (https://developers.strava.com/docs/webhooks/).
#[derive(Debug, Deserialize)]
struct Event {
    object_type: String,
    aspect_type: String,
    owner_id: i64,
    #[serde(default)]
    updates: serde_json::Map<String, Value>,
    /// Epoch seconds.
    #[serde(default)]
    event_time: Option<i64>,
}

impl Event {
    /// `updates.authorized = "false"` on the athlete: the user deauthorised the application.
    fn deauthorizes(&self) -> bool {
        let refused = match self.updates.get("authorized") {
            Some(Value::String(s)) => s == "false",
            Some(Value::Bool(b)) => !b,
            _ => false,
        };
        self.object_type == "athlete" && refused
    }
}

/// Reads a request to Strava's push endpoint. GET is the subscription handshake: `hub.mode`
/// `subscribe` with Wearlab's `verification_token` as `hub.verify_token` is answered 200
/// `{"hub.challenge": ...}`, anything else refused. POST is an event: Strava signs none (the
/// facts sheet), so it is trusted only as far as the user it names has a connection (the push
/// use case looks the owner up): an activity created or changed fetches its days' activity
/// resources again, a deauthorisation of the athlete ends the connections. Deletions and other
/// changes are read and ignored.
pub fn read_push(verification_token: Option<&str>, request: &PushRequest) -> PushOutcome {
    let refused = |why: &str| PushOutcome::Refused(format!("{SLUG} push {why}"));
    if request.method.eq_ignore_ascii_case("GET") {
        let (Some(expected), Some(given), Some(challenge)) =
            (verification_token, request.query("hub.verify_token"), request.query("hub.challenge"))
        else {
            return refused("handshake without verify token or challenge");
        };
        if request.query("hub.mode") != Some("subscribe") {
            return refused("handshake is not a subscription");
        }
        if !constant_time_eq(expected.as_bytes(), given.as_bytes()) {
            return refused("handshake with a wrong verify token");
        }
        return PushOutcome::Handshake { status: 200, body: Some(json!({"hub.challenge": challenge})) };
    }
    if !request.method.eq_ignore_ascii_case("POST") {
        return refused("is neither the handshake nor an event");
    }
    let Ok(event) = serde_json::from_slice::<Event>(&request.body) else {
        return refused("has an unreadable body");
    };
    let owner = event.owner_id.to_string();
    if event.object_type == "athlete" {
        return if event.deauthorizes() {
            PushOutcome::Deauthorized { external_user_id: owner }
        } else {
            PushOutcome::Notices(vec![])
        };
    }
    if event.object_type != "activity" || !matches!(event.aspect_type.as_str(), "create" | "update") {
        return PushOutcome::Notices(vec![]);
    }
    // The event names the activity, not its day: the day of the event and the one before (an
    // activity is uploaded after it ends, possibly past midnight).
    let range = event.event_time.and_then(|t| DateTime::from_timestamp(t, 0)).map(|t| {
        let end = t.date_naive();
        DateRange { start: end - Duration::days(1), end }
    });
    PushOutcome::Notices(vec![PushNotice {
        external_user_id: owner,
        resources: ACTIVITY_RESOURCES.to_vec(),
        range,
    }])
}

#[async_trait]
impl Adapter for Strava {
    fn api(&self) -> &Api {
        &self.api
    }

    async fn refresh(
        &self,
        client: &OauthClient,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        // Strava may rotate the refresh token (the latest is kept) and names no scopes: the ones
        // granted at the consent stay.
        let mut fresh = self.api.refresh(client, credentials).await?;
        if fresh.scopes.is_empty() {
            fresh.scopes = credentials.scopes.clone();
        }
        Ok(fresh)
    }

    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let now = Utc::now();
        // Strava's form has no `redirect_uri` (https://developers.strava.com/docs/authentication/:
        // `client_id, client_secret, code, grant_type`); sending it is harmless, as other providers
        // need it.
        let answer: TokenWithAthlete = self.api.exchange_answer(exchange).await?;
        let credentials = answer.token.into_credentials(now, None);
        let athlete = match answer.athlete {
            Some(a) => a,
            // Not in the answer: the athlete the token reads is the user.
            None => self.get(&NoLimit, &credentials, "/athlete", &[]).await?.json::<AthleteRef>(SLUG)?,
        };
        tracing::info!(provider = SLUG, external_user_id = athlete.id, "linked");
        Ok(ProviderAccount { external_user_id: athlete.id.to_string(), credentials })
    }

    async fn fetch(
        &self,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        let c = &account.credentials;
        let records = match resource {
            Resource::Workouts => {
                self.readable_activities(gate, c, range).await?.iter().filter_map(Activity::record).collect()
            }
            Resource::Heartrate | Resource::Distance | Resource::WorkoutStream => {
                self.stream_rows(gate, c, resource, range).await?
            }
            Resource::Profile => {
                // Read for its id only: Strava's athlete has no field of Wearlab's profile.
                let _: AthleteRef = self.get(gate, c, "/athlete", &[]).await?.json(SLUG)?;
                vec![json!({})]
            }
            other => return Err(ProviderError::Unsupported(format!("{SLUG} does not serve {other}"))),
        };
        tracing::debug!(provider = SLUG, resource = %resource, records = records.len(), "fetched");
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    /// `POST /oauth/deauthorize`, an expired access token refreshed first
    /// ([`oauth::revoke_refreshing`]).
    async fn revoke(&self, client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError> {
        oauth::revoke_refreshing(
            &account.credentials,
            |c| async move { self.deauthorize(&c).await },
            || self.refresh(client, &account.credentials),
        )
        .await
    }

    fn push(
        &self,
        _client: &OauthClient,
        verification_token: Option<&str>,
        request: &PushRequest,
    ) -> PushOutcome {
        read_push(verification_token, request)
    }

    fn push_unsigned(&self, verification_token: Option<&str>, request: &PushRequest) -> Option<PushOutcome> {
        Some(read_push(verification_token, request))
    }

    /// Strava keeps one subscription per application: listed with the app's credentials in the
    /// query, created with them in the form with `callback_url` and `verify_token` (Strava then
    /// calls the handshake). One to another callback URL is left alone and reported.
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
        let url = self.subscriptions();
        let creds =
            [("client_id", client.client_id.as_str()), ("client_secret", client.client_secret.expose())];
        let existing: Vec<Subscription> =
            check(http::send(SLUG, self.api.http.get(&url).query(&creds)).await?)?.json(SLUG)?;
        if existing.iter().any(|s| s.callback_url == callback_url) {
            return Ok(0);
        }
        if !existing.is_empty() {
            return Err(ProviderError::Api(format!(
                "{SLUG} already pushes this application's events to another callback URL"
            )));
        }
        let mut form: Vec<(&str, &str)> = creds.to_vec();
        form.extend([("callback_url", callback_url), ("verify_token", token)]);
        let body = serde_urlencoded::to_string(&form).map_err(|e| ProviderError::Api(e.to_string()))?;
        let request =
            self.api.http.post(&url).header("content-type", "application/x-www-form-urlencoded").body(body);
        check(http::send(SLUG, request).await?)?;
        Ok(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderMap;
    use wearlab_domain::common::throttle::{ThrottleState, decide_app};

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn sport_types_become_slugs() {
        assert_eq!(sport("Run"), "run");
        assert_eq!(sport("MountainBikeRide"), "mountain_bike_ride");
        assert_eq!(sport("EMountainBikeRide"), "e_mountain_bike_ride");
        assert_eq!(sport("HighIntensityIntervalTraining"), "high_intensity_interval_training");
    }

    #[test]
    fn zones_are_read_from_stravas_label() {
        assert_eq!(iana_zone("(GMT-08:00) America/Los_Angeles").as_deref(), Some("America/Los_Angeles"));
        assert_eq!(iana_zone("(GMT+00:00) Nowhere/Special"), None);
    }

    #[test]
    fn a_detailed_activity_gives_its_calories() {
        let a: Activity = serde_json::from_value(json!({"id": 1, "type": "Run", "calories": 537.9,
            "start_date": "2013-12-12T19:36:41Z", "start_date_local": "2013-12-12T11:36:41Z",
            "timezone": "(GMT-08:00) America/Los_Angeles", "elapsed_time": 3140, "distance": 5781.1}))
        .unwrap();
        let r = a.record().unwrap();
        assert_eq!(r["calories"], 537.9);
        assert_eq!(r["date"], "2013-12-12");
        assert_eq!(r["time_end"], "2013-12-12T20:29:01Z");
    }

    #[test]
    fn a_429_waits_for_stravas_quarter_hour_or_the_utc_midnight() {
        let headers = |usage: &str| {
            let mut h = HeaderMap::new();
            h.insert("x-readratelimit-limit", "100,1000".parse().unwrap());
            h.insert("x-readratelimit-usage", usage.parse().unwrap());
            h
        };
        assert_eq!(retry_after(&headers("101,400"), at("2026-11-25T10:14:30Z")), 30);
        assert_eq!(retry_after(&headers("100,1000"), at("2026-11-25T23:50:00Z")), 600);
        assert_eq!(
            retry_after(&HeaderMap::new(), at("2026-11-25T10:14:30Z")),
            http::DEFAULT_RETRY_AFTER_SECS
        );
    }

    #[test]
    fn the_app_windows_turn_over_when_stravas_do() {
        let mut state = ThrottleState::default();
        let start = at("2026-11-25T10:00:00Z");
        for i in 0..100 {
            assert_eq!(
                decide_app(LIMITS, &mut state, start + Duration::seconds(i)),
                wearlab_domain::common::throttle::Decision::Granted
            );
        }
        // The 101st in the 10:00 quarter waits until 10:15:00, like Strava's own window.
        assert_eq!(
            decide_app(LIMITS, &mut state, at("2026-11-25T10:14:00Z")),
            wearlab_domain::common::throttle::Decision::Wait(std::time::Duration::from_secs(60))
        );
        assert_eq!(
            decide_app(LIMITS, &mut state, at("2026-11-25T10:15:00Z")),
            wearlab_domain::common::throttle::Decision::Granted
        );
    }
}
