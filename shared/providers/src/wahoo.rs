//! Wahoo Cloud API (https://api.wahooligan.com), catalog slug `wahoo`: OAuth 2 with the client
//! and every field of the token request in the query string, space-separated scopes, access tokens
//! of two hours and rotating refresh tokens; the user's workouts paged newest first (no date
//! filter), each with its summary and the FIT file of its recording; the `workout_summary`
//! webhook authenticated by the app's `webhook_token`. Facts: Wahoo's Cloud API reference
//! (https://cloud-api.wahooligan.com, whose source is the repository `WahooFitness/slate`),
//! listed under "Sources" in the Wahoo section of `docs/PROVIDERS.md`, which also says what is
//! mapped to what.
//!
//! What is mapped (Wahoo writes decimals as JSON strings, read here as numbers):
//! - `workouts`: `GET /v1/workouts` with each workout's embedded `workout_summary`, dated by its
//!   local start day in the summary's `time_zone`: `distance_accum` (m), `duration_total_accum`
//!   (s, else `minutes`), `calories_accum` (kcal), `heart_rate_avg` (bpm); the sport from
//!   `workout_type_id` (Wahoo's table of workout types). A workout without a summary (planned,
//!   not yet uploaded, or recorded by a third-party app, whose summaries Wahoo stopped sharing on
//!   2025-04-01) is no record.
//! - `heartrate`, `distance`, `workout_stream`: the FIT file at `workout_summary.file.url`
//!   (pre-signed, fetched without the access token), decoded by [`crate::fit`].
//! - `profile`: `GET /v1/user`, `height` (m); `body`: its `weight` (kg), which Wahoo keeps only as
//!   the current value, dated today.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer};
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
use crate::fit::{self, FitSample};
use crate::http;
use crate::kept::{Kept, TokenDigest, digest};
use crate::oauth::{self, ClientAuth, TokenAnswer};

pub const SLUG: &str = "wahoo";

/// What Wearlab asks for, space-separated (Wahoo's reference, "Authorization"): the user
/// (without `user_read` every call answers 403), the workouts, and `offline_data`, without which
/// Wahoo sends no webhook.
pub const SCOPES: &str = "user_read workouts_read offline_data";

/// Workouts asked per page (Wahoo's default is 30; its largest is not documented, so the answer's
/// own `per_page` and `total` decide when the list ends).
pub const PER_PAGE: usize = 50;

/// The variable naming the app's mode at Wahoo: `sandbox` (the default) or `production`.
pub const APP_MODE_VAR: &str = "WEARLAB_PROVIDER_WAHOO_APP_MODE";

/// The limits of a Sandbox app (Wahoo's reference, "Rate Limiting"): 25 requests per 5 minutes,
/// 100 an hour, 250 a day.
pub const SANDBOX_LIMITS: &[RateWindow] = &[
    RateWindow { requests: 25, window_secs: 300 },
    RateWindow { requests: 100, window_secs: 3_600 },
    RateWindow { requests: 250, window_secs: 86_400 },
];

/// The limits of a Production app (same table): 200 per 5 minutes, 1,000 an hour, 5,000 a day.
pub const PRODUCTION_LIMITS: &[RateWindow] = &[
    RateWindow { requests: 200, window_secs: 300 },
    RateWindow { requests: 1_000, window_secs: 3_600 },
    RateWindow { requests: 5_000, window_secs: 86_400 },
];

const RESOURCES: &[Resource] = &[
    Resource::Profile,
    Resource::Body,
    Resource::Workouts,
    Resource::WorkoutStream,
    Resource::Heartrate,
    Resource::Distance,
];

/// The resources a workout fills (a webhook about one fetches them again).
const WORKOUT_RESOURCES: &[Resource] =
    &[Resource::Workouts, Resource::WorkoutStream, Resource::Heartrate, Resource::Distance];

/// A provider that keeps answering full pages is cut off here (a loop, not data).
const MAX_PAGES: usize = 500;

/// How long a page of the workout list is kept: the fetches of one pipeline round run at once,
/// and a history's chunks follow each other.
const LIST_LIFE: std::time::Duration = std::time::Duration::from_secs(60);
/// Pages kept at once (each at most [`PER_PAGE`] workouts).
const MOST_PAGES: usize = 256;

/// Wahoo as its reference describes it: the token request's fields in the query string, refresh
/// tokens that rotate.
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: SANDBOX_LIMITS,
    user_limits: &[],
    authorize_url: "https://api.wahooligan.com/oauth/authorize",
    token_url: "https://api.wahooligan.com/oauth/token",
    api_url: "https://api.wahooligan.com",
    scopes: SCOPES,
    authorize_extra: &[],
    client_auth: ClientAuth::Query,
    refresh: Refresh::Token { extra: &[] },
};

/// The mode of the app at Wahoo, which sets its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AppMode {
    /// Open at once, with Wahoo's low limits.
    #[default]
    Sandbox,
    /// After Wahoo's review.
    Production,
}

impl AppMode {
    /// [`APP_MODE_VAR`] from `var`: `production` or `sandbox`. Unset, or any other value (logged
    /// as a warning naming the variable), is sandbox: its limits are within a production app's
    /// too, so a mistaken value never sends more than Wahoo allows.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        match var(APP_MODE_VAR).as_deref().map(str::trim) {
            None | Some("") => Self::Sandbox,
            Some(v) if v.eq_ignore_ascii_case("sandbox") => Self::Sandbox,
            Some(v) if v.eq_ignore_ascii_case("production") => Self::Production,
            Some(_) => {
                tracing::warn!(
                    variable = APP_MODE_VAR,
                    "neither sandbox nor production: sandbox limits kept"
                );
                Self::Sandbox
            }
        }
    }

    pub fn limits(self) -> &'static [RateWindow] {
        match self {
            Self::Sandbox => SANDBOX_LIMITS,
            Self::Production => PRODUCTION_LIMITS,
        }
    }
}

pub struct Wahoo {
    api: Api,
    mode: AppMode,
    /// Pages of the workout list by (access token digest, page).
    kept_pages: Kept<(TokenDigest, usize), WorkoutPage>,
    /// Decoded FIT files by (access token digest, workout id); `None`: no file to read.
    kept_files: Kept<(TokenDigest, i64), Option<Vec<FitSample>>>,
}

impl Wahoo {
    pub fn new(config: AppConfig) -> Self {
        Self {
            api: Api::new(&DESCRIPTION, config),
            mode: AppMode::Sandbox,
            kept_pages: Kept::new(LIST_LIFE, MOST_PAGES),
            kept_files: fit::kept_files(),
        }
    }

    /// The app's mode at Wahoo, which sets the limits enforced.
    pub fn mode(mut self, mode: AppMode) -> Self {
        self.mode = mode;
        self
    }

    /// Wahoo's real hosts.
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
    }

    /// One page of the workout list, kept a short while: a history's chunks each walk the list
    /// from its newest page (it has no date filter), so the pages a chunk read serve the next.
    async fn page(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        page: usize,
    ) -> Result<Arc<WorkoutPage>, ProviderError> {
        let token = credentials.access_token.expose();
        let query = [("page", page.to_string()), ("per_page", PER_PAGE.to_string())];
        self.kept_pages
            .get_or_fetch((digest(credentials), page), || {
                self.api.get_json(gate, token, "/v1/workouts", &query)
            })
            .await
    }

    /// Every workout that started in `[after, before)`, page after page, newest first, until a
    /// page reaches past `after` or the list ends.
    async fn workouts(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        (after, before): (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<Vec<Workout>, ProviderError> {
        let mut out = Vec::new();
        for page in 1..=MAX_PAGES {
            let answer = self.page(gate, credentials, page).await?;
            let seen = answer.workouts.len();
            let past = answer.workouts.last().is_none_or(|w| w.starts < after);
            out.extend(answer.workouts.iter().filter(|w| w.starts >= after && w.starts < before).cloned());
            let listed = (page - 1) * answer.per_page.unwrap_or(PER_PAGE) + seen;
            if past || seen == 0 || answer.total.is_some_and(|t| listed >= t) {
                return Ok(out);
            }
        }
        Err(ProviderError::Api(format!("{SLUG} kept paging past {MAX_PAGES} pages")))
    }

    /// The summarised workouts of `range`'s local days.
    async fn summarised(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        range: DateRange,
    ) -> Result<Vec<Workout>, ProviderError> {
        let all = self.workouts(gate, credentials, window(range)).await?;
        Ok(all
            .into_iter()
            .filter(|w| w.workout_summary.is_some())
            .filter(|w| range.start <= w.local_day() && w.local_day() <= range.end)
            .collect())
    }

    /// Whether Wearlab fetches a file from `url`: HTTPS, or the configured API's own origin (a
    /// local fake's). Anything else in an answer is not followed.
    fn fetchable(&self, url: &str) -> bool {
        let Ok(url) = url::Url::parse(url) else { return false };
        let api = url::Url::parse(&self.api.config.endpoints.api).ok();
        url.scheme() == "https" || api.is_some_and(|a| a.origin() == url.origin())
    }

    /// The workout's FIT file, decoded; `None` when there is none or it is gone (a pre-signed URL
    /// that expired or a file deleted since it was listed: 403, 404, 410). It is fetched without
    /// the access token, once `gate` admitted it.
    async fn fit_file(
        &self,
        gate: &dyn RequestGate,
        url: &str,
    ) -> Result<Option<Vec<FitSample>>, ProviderError> {
        if !self.fetchable(url) {
            tracing::warn!(
                provider = SLUG,
                "a workout's file URL is neither HTTPS nor Wahoo's API: not fetched"
            );
            return Ok(None);
        }
        // A pre-signed file URL that expired or was withdrawn: the file is gone.
        let file = fit::download(gate, SLUG, self.api.http.get(url), &[403, 404, 410]).await?;
        Ok(file.map(|f| f.samples))
    }

    /// One stream resource's rows over the summarised workouts of `range`.
    async fn stream_rows(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        resource: &Resource,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut rows = Vec::new();
        for workout in self.summarised(gate, credentials, range).await? {
            let Some(url) = workout.file_url() else { continue };
            let key = (digest(credentials), workout.id);
            let samples: Arc<Option<Vec<FitSample>>> =
                self.kept_files.get_or_fetch(key, || self.fit_file(gate, url)).await?;
            if let Some(samples) = samples.as_ref() {
                rows.extend(fit::rows(samples, resource, workout.zone().as_ref().map(TimeZoneId::name)));
            }
        }
        Ok(rows)
    }

    /// `DELETE /v1/permissions` (Wahoo's reference, "Deauthorize"): 204.
    async fn delete_permissions(&self, credentials: &ProviderCredentials) -> Result<(), ProviderError> {
        let request = self
            .api
            .http
            .delete(self.api.url("/v1/permissions"))
            .bearer_auth(credentials.access_token.expose());
        http::check(SLUG, http::send(SLUG, request).await?).map(|_| ())
    }
}

/// The epoch window asked for a range of local days: a day either side, since a local day
/// differs from the UTC one by up to 14 hours; workouts are kept by their local day.
fn window(range: DateRange) -> (DateTime<Utc>, DateTime<Utc>) {
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc();
    (midnight(range.start) - Duration::days(1), midnight(range.end) + Duration::days(2))
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A decimal as Wahoo writes it, a JSON string (`"24909.71"`); a number is read too.
fn decimal<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::String(s)) => s.trim().parse().ok(),
        Some(Value::Number(n)) => n.as_f64(),
        _ => None,
    })
}

/// A workout type of Wahoo's table (its reference, "Data Types", `workout_type_id`) as a Wearlab
/// sport slug.
pub fn sport(workout_type_id: Option<i64>) -> String {
    let name = match workout_type_id {
        Some(0) => "biking",
        Some(1) => "running",
        Some(2) => "fe",
        Some(3) => "running_track",
        Some(4) => "running_trail",
        Some(5) => "running_treadmill",
        Some(6) => "walking",
        Some(7) => "walking_speed",
        Some(8) => "walking_nordic",
        Some(9) => "hiking",
        Some(10) => "mountaineering",
        Some(11) => "biking_cyclecross",
        Some(12) => "biking_indoor",
        Some(13) => "biking_mountain",
        Some(14) => "biking_recumbent",
        Some(15) => "biking_road",
        Some(16) => "biking_track",
        Some(17) => "biking_motocycling",
        Some(18) => "fe_general",
        Some(19) => "fe_treadmill",
        Some(20) => "fe_elliptical",
        Some(21) => "fe_bike",
        Some(22) => "fe_rower",
        Some(23) => "fe_climber",
        Some(25) => "swimming_lap",
        Some(26) => "swimming_open_water",
        Some(27) => "snowboarding",
        Some(28) => "skiing",
        Some(29) => "skiing_downhill",
        Some(30) => "skiingcross_country",
        Some(31) => "skating",
        Some(32) => "skating_ice",
        Some(33) => "skating_inline",
        Some(34) => "long_boarding",
        Some(35) => "sailing",
        Some(36) => "windsurfing",
        Some(37) => "canoeing",
        Some(38) => "kayaking",
        Some(39) => "rowing",
        Some(40) => "kiteboarding",
        Some(41) => "stand_up_paddle_board",
        Some(42) => "workout",
        Some(43) => "cardio_class",
        Some(44) => "stair_climber",
        Some(45) => "wheelchair",
        Some(46) => "golfing",
        Some(49) => "biking_indoor_cycling_class",
        Some(56) => "walking_treadmill",
        Some(61) => "biking_indoor_trainer",
        Some(62) => "multisport",
        Some(63) => "transition",
        Some(64) => "ebiking",
        Some(65) => "tickr_offline",
        Some(66) => "yoga",
        Some(67) => "running_race",
        Some(68) => "biking_indoor_virtual",
        Some(69) => "mental_strength",
        Some(70) => "handcycling",
        Some(71) => "running_indoor_virtual",
        _ => "other",
    };
    sport_slug(name)
}

/// `GET /v1/user` (Wahoo's reference, "Get Authenticated User").
#[derive(Debug, Deserialize)]
struct User {
    id: i64,
    /// m
    #[serde(default, deserialize_with = "decimal")]
    height: Option<f64>,
    /// kg
    #[serde(default, deserialize_with = "decimal")]
    weight: Option<f64>,
    #[serde(default)]
    birth: Option<NaiveDate>,
}

/// A page of `GET /v1/workouts` (Wahoo's reference, "Get all Workouts").
#[derive(Debug, Deserialize)]
struct WorkoutPage {
    #[serde(default)]
    workouts: Vec<Workout>,
    #[serde(default)]
    total: Option<usize>,
    #[serde(default)]
    per_page: Option<usize>,
}

#[derive(Debug, Clone, Deserialize)]
struct Workout {
    id: i64,
    starts: DateTime<Utc>,
    #[serde(default)]
    minutes: Option<i64>,
    #[serde(default)]
    workout_type_id: Option<i64>,
    #[serde(default)]
    workout_summary: Option<Summary>,
}

/// A workout summary (Wahoo's reference, "Get a Workout Summary"; units in the comments).
#[derive(Debug, Clone, Deserialize)]
struct Summary {
    /// kcal
    #[serde(default, deserialize_with = "decimal")]
    calories_accum: Option<f64>,
    /// m
    #[serde(default, deserialize_with = "decimal")]
    distance_accum: Option<f64>,
    /// s, pauses included
    #[serde(default, deserialize_with = "decimal")]
    duration_total_accum: Option<f64>,
    /// bpm
    #[serde(default, deserialize_with = "decimal")]
    heart_rate_avg: Option<f64>,
    #[serde(default)]
    time_zone: Option<String>,
    #[serde(default)]
    file: Option<FileRef>,
}

#[derive(Debug, Clone, Deserialize)]
struct FileRef {
    #[serde(default)]
    url: Option<String>,
}

impl Workout {
    fn zone(&self) -> Option<TimeZoneId> {
        self.workout_summary.as_ref()?.time_zone.as_deref().and_then(TimeZoneId::parse)
    }

    /// The day it started on where it happened (UTC without a zone).
    fn local_day(&self) -> NaiveDate {
        self.zone().map_or_else(|| self.starts.date_naive(), |z| z.local_date(self.starts))
    }

    fn file_url(&self) -> Option<&str> {
        self.workout_summary.as_ref()?.file.as_ref()?.url.as_deref().filter(|u| !u.is_empty())
    }

    fn record(&self) -> Option<Value> {
        let summary = self.workout_summary.as_ref()?;
        let secs = summary
            .duration_total_accum
            .map(|s| s.round() as i64)
            .or(self.minutes.map(|m| m * 60))
            .unwrap_or(0)
            .max(0);
        let mut record = json!({
            "date": self.local_day().to_string(),
            "time_start": rfc3339(self.starts),
            "time_end": rfc3339(self.starts + Duration::seconds(secs)),
            "sport": sport(self.workout_type_id),
        });
        let optional = [
            ("distance_m", summary.distance_accum),
            ("average_hr", summary.heart_rate_avg),
            ("calories", summary.calories_accum),
        ];
        for (key, value) in optional {
            if let Some(v) = value {
                record[key] = json!(v);
            }
        }
        if let Some(zone) = self.zone() {
            record["timezone"] = json!(zone.name());
        }
        Some(record)
    }
}

/// The `workout_summary` webhook (Wahoo's reference, "Webhooks"). Wahoo's own example names the
/// kind `event_type` and nests the workout; a modelled copy of the reference names them `event`
/// and `workout_id`: both are read.
#[derive(Debug, Deserialize)]
struct Delivery {
    #[serde(default)]
    event_type: Option<String>,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    webhook_token: Option<String>,
    #[serde(default)]
    user: Option<UserRef>,
    #[serde(default)]
    workout_summary: Option<DeliveredSummary>,
}

#[derive(Debug, Deserialize)]
struct UserRef {
    id: Value,
}

#[derive(Debug, Deserialize)]
struct DeliveredSummary {
    #[serde(default)]
    workout: Option<DeliveredWorkout>,
}

#[derive(Debug, Deserialize)]
struct DeliveredWorkout {
    #[serde(default)]
    starts: Option<DateTime<Utc>>,
}

/// Reads a webhook delivery. Wahoo signs none: a delivery is Wahoo's when its `webhook_token` is
/// the one set in the app's settings at Wahoo (`expected`, the configured push token), compared
/// in constant time; without one configured, or without or with another token in the body, it is
/// refused and nothing changes. A `workout_summary` delivery fetches the workout resources of its
/// workout's days (the day before and after too: the day is the user's local one); other kinds
/// are read and ignored.
pub fn read_push(expected: Option<&str>, request: &PushRequest) -> PushOutcome {
    let refused = |why: &str| PushOutcome::Refused(format!("{SLUG} push {why}"));
    if !request.method.eq_ignore_ascii_case("POST") {
        return refused("is not a POST");
    }
    let Some(expected) = expected.filter(|t| !t.is_empty()) else {
        return refused("cannot be checked: no webhook token is configured");
    };
    let Ok(delivery) = serde_json::from_slice::<Delivery>(&request.body) else {
        return refused("has an unreadable body");
    };
    let Some(given) = delivery.webhook_token.as_deref() else {
        return refused("carries no webhook token");
    };
    if !constant_time_eq(expected.as_bytes(), given.as_bytes()) {
        return refused("carries a wrong webhook token");
    }
    let kind = delivery.event_type.as_deref().or(delivery.event.as_deref());
    if kind != Some("workout_summary") {
        return PushOutcome::Notices(vec![]);
    }
    let user = match delivery.user.map(|u| u.id) {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) if !s.is_empty() => s,
        _ => return refused("names no user"),
    };
    let starts = delivery.workout_summary.and_then(|s| s.workout).and_then(|w| w.starts);
    let range = starts.map(|t| {
        let day = t.date_naive();
        DateRange { start: day - Duration::days(1), end: day + Duration::days(1) }
    });
    PushOutcome::Notices(vec![PushNotice {
        external_user_id: user,
        resources: WORKOUT_RESOURCES.to_vec(),
        range,
    }])
}

#[async_trait]
impl Adapter for Wahoo {
    fn api(&self) -> &Api {
        &self.api
    }

    fn app_limits(&self) -> &'static [RateWindow] {
        self.mode.limits()
    }

    /// Wahoo's refresh returns a new pair; the old pair stays usable until the new access token
    /// is first used, then Wahoo revokes it (its reference, "Token Limits"). The pipeline refreshes
    /// only credentials that expired or were refused, one refresh per connection at a time (its
    /// refresh lease), and uses the new token at once, so a user never holds more than two of the
    /// ten unrevoked tokens Wahoo allows. The refresh names no scopes: the granted ones stay.
    async fn refresh(
        &self,
        client: &OauthClient,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        let mut fresh = self.api.refresh(client, credentials).await?;
        if fresh.scopes.is_empty() {
            fresh.scopes = credentials.scopes.clone();
        }
        Ok(fresh)
    }

    /// The code exchanged (the fields in the query string), then `GET /v1/user` for the user's
    /// id: Wahoo's token answer names no user.
    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let answer: TokenAnswer = self.api.exchange_answer(exchange).await?;
        let mut credentials = answer.into_credentials(Utc::now(), None);
        if credentials.scopes.is_empty() {
            credentials.scopes = SCOPES.split(' ').map(str::to_owned).collect();
        }
        let user: User =
            self.api.get_json(&NoLimit, credentials.access_token.expose(), "/v1/user", &[]).await?;
        tracing::info!(provider = SLUG, external_user_id = user.id, "linked");
        Ok(ProviderAccount { external_user_id: user.id.to_string(), credentials })
    }

    async fn fetch(
        &self,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        let c = &account.credentials;
        let token = c.access_token.expose();
        let records = match resource {
            Resource::Workouts => {
                self.summarised(gate, c, range).await?.iter().filter_map(Workout::record).collect()
            }
            Resource::Heartrate | Resource::Distance | Resource::WorkoutStream => {
                self.stream_rows(gate, c, resource, range).await?
            }
            Resource::Profile => {
                let user: User = self.api.get_json(gate, token, "/v1/user", &[]).await?;
                vec![
                    json!({"height_m": user.height, "birth_year": user.birth.map(|b| chrono::Datelike::year(&b))}),
                ]
            }
            Resource::Body => {
                let today = Utc::now().date_naive();
                if range.start <= today && today <= range.end {
                    let user: User = self.api.get_json(gate, token, "/v1/user", &[]).await?;
                    user.weight
                        .map(|kg| json!({"date": today.to_string(), "weight_kg": kg}))
                        .into_iter()
                        .collect()
                } else {
                    vec![]
                }
            }
            other => return Err(ProviderError::Unsupported(format!("{SLUG} does not serve {other}"))),
        };
        tracing::debug!(provider = SLUG, resource = %resource, records = records.len(), "fetched");
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    /// `DELETE /v1/permissions`, an expired access token refreshed first
    /// ([`oauth::revoke_refreshing`]).
    async fn revoke(&self, client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError> {
        oauth::revoke_refreshing(
            &account.credentials,
            |c| async move { self.delete_permissions(&c).await },
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

    /// The webhook token is the app's, not an OAuth client's: read without one.
    fn push_unsigned(&self, verification_token: Option<&str>, request: &PushRequest) -> Option<PushOutcome> {
        Some(read_push(verification_token, request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: &str) -> PushRequest {
        PushRequest { method: "POST".into(), body: body.as_bytes().to_vec(), ..Default::default() }
    }

    #[test]
    fn decimals_written_as_strings_are_numbers() {
        let user: User = serde_json::from_value(json!({"id": 1, "height": "2.0", "weight": 80.5})).unwrap();
        assert_eq!((user.height, user.weight), (Some(2.0), Some(80.5)));
        let user: User = serde_json::from_value(json!({"id": 1, "height": null, "weight": "n/a"})).unwrap();
        assert_eq!((user.height, user.weight), (None, None));
    }

    #[test]
    fn workout_types_become_sports() {
        assert_eq!(sport(Some(0)), "biking");
        assert_eq!(sport(Some(61)), "biking_indoor_trainer");
        assert_eq!(sport(Some(255)), "other");
        assert_eq!(sport(None), "other");
    }

    #[test]
    fn the_app_mode_sets_the_limits_and_anything_else_keeps_the_sandboxs() {
        assert_eq!(AppMode::from_vars(|_| None).limits(), SANDBOX_LIMITS);
        assert_eq!(AppMode::from_vars(|_| Some(" Production ".into())).limits(), PRODUCTION_LIMITS);
        assert_eq!(AppMode::from_vars(|_| Some("live".into())).limits(), SANDBOX_LIMITS);
    }

    #[test]
    fn a_delivery_needs_the_webhook_token_and_either_event_name() {
        let body = |token: &str, kind: &str| {
            json!({kind: "workout_summary", "webhook_token": token, "user": {"id": 60462},
                "workout_summary": {"id": 8297, "workout": {"id": 56519, "starts": "2026-11-21T09:00:00.000Z"}}})
            .to_string()
        };
        let PushOutcome::Notices(n) = read_push(Some("t"), &post(&body("t", "event_type"))) else { panic!() };
        assert_eq!(n[0].external_user_id, "60462");
        let range = n[0].range.unwrap();
        assert_eq!(
            (range.start.to_string(), range.end.to_string()),
            ("2026-11-20".into(), "2026-11-22".into())
        );
        assert!(
            matches!(read_push(Some("t"), &post(&body("t", "event"))), PushOutcome::Notices(n) if n.len() == 1)
        );
        assert!(matches!(read_push(Some("t"), &post(&body("u", "event_type"))), PushOutcome::Refused(_)));
        assert!(matches!(read_push(None, &post(&body("t", "event_type"))), PushOutcome::Refused(_)));
        let without = r#"{"event_type":"workout_summary","user":{"id":1}}"#;
        assert!(matches!(read_push(Some("t"), &post(without)), PushOutcome::Refused(_)));
    }
}
