//! Hammerhead (Karoo) developer API (https://api.hammerhead.io, documented at
//! https://api.hammerhead.io/v1/docs), catalog slug `hammerhead`: OAuth 2 with the client in the
//! token form's body, the token answer naming the user (`user_id`); activities paged by
//! `page`/`perPage` from a `startDate`, each activity's recording as its original FIT file; a
//! webhook per app signed with hex HMAC-SHA256 (`X-Hmac-Signature`). Facts: the published
//! OpenAPI document (https://api.hammerhead.io/v1/docs/openapi.yml) as the client generated from
//! it shows it (repository `rchowell/hammerhead-python`), listed under "Sources" in the Hammerhead
//! section of `docs/PROVIDERS.md`, which also says what is mapped to what.
//!
//! What is mapped:
//! - `workouts`: `GET /activities`, one per activity: its `duration` (s) and `distance` (m) (the
//!   document states no unit; the open-source clients read seconds and metres), started when its
//!   FIT file's recording starts (the list names only `createdAt`, which is read when the file
//!   has no record), the sport the file's session names.
//! - `heartrate`, `distance`, `workout_stream`: `GET /activities/{id}/file`, decoded by
//!   [`crate::fit`]. Each file is read once for the four resources.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, NaiveDate, SecondsFormat, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
use wearlab_domain::common::signing::{hex_hmac_matches, hex_hmac_sha256};
use wearlab_domain::ports::providers::{
    CodeExchange, DateRange, FetchedResource, OauthClient, ProviderAccount, ProviderCredentials,
    ProviderError, PushNotice, PushOutcome, PushRequest, RequestGate,
};
use wearlab_models::Resource;

use crate::adapter::{Adapter, sport_slug};
use crate::config::{AppConfig, Endpoints};
use crate::description::{Api, ProviderDescription, Refresh};
use crate::fit::{self, FitActivity};
use crate::http;
use crate::kept::{Kept, TokenDigest, digest};
use crate::oauth::{self, ClientAuth, TokenAnswer};

pub const SLUG: &str = "hammerhead";

/// What Wearlab asks for: the activities (the document's scopes: `activity:read route:read
/// route:write workout:write`).
pub const SCOPES: &str = "activity:read";

/// Activities asked per page (what the open-source clients ask; the largest is not documented,
/// so the answer's `totalPages` says when the list ends).
pub const PER_PAGE: usize = 100;

/// The header a webhook delivery is signed in.
pub const SIGNATURE_HEADER: &str = "x-hmac-signature";

const RESOURCES: &[Resource] =
    &[Resource::Workouts, Resource::WorkoutStream, Resource::Heartrate, Resource::Distance];

/// A provider that keeps answering pages is cut off here (a loop, not data).
const MAX_PAGES: usize = 500;
const LIST_LIFE: std::time::Duration = std::time::Duration::from_secs(60);
const MOST_LISTS: usize = 64;

/// Hammerhead as its published document describes it: the client in the token form's body;
/// each new refresh token is kept. Hammerhead publishes no rate limits: none is enforced here,
/// and a 429 waits as the answer says (else a minute).
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: &[],
    user_limits: &[],
    authorize_url: "https://api.hammerhead.io/v1/auth/oauth/authorize",
    token_url: "https://api.hammerhead.io/v1/auth/oauth/token",
    api_url: "https://api.hammerhead.io/v1/api",
    scopes: SCOPES,
    authorize_extra: &[],
    client_auth: ClientAuth::Body,
    refresh: Refresh::Token { extra: &[] },
};

pub struct Hammerhead {
    api: Api,
    /// Activity lists by (access token digest, first day).
    kept_lists: Kept<(TokenDigest, NaiveDate), Vec<Activity>>,
    /// Decoded FIT files by (access token digest, activity id); `None`: none to read.
    kept_files: Kept<(TokenDigest, String), Option<FitActivity>>,
}

impl Hammerhead {
    pub fn new(config: AppConfig) -> Self {
        Self {
            api: Api::new(&DESCRIPTION, config),
            kept_lists: Kept::new(LIST_LIFE, MOST_LISTS),
            kept_files: fit::kept_files(),
        }
    }

    /// Hammerhead's real hosts.
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
    }

    /// `POST /v1/auth/oauth/deauthorize`, beside the token endpoint.
    fn deauthorize_url(&self) -> String {
        self.api.config.endpoints.next_to_token("deauthorize")
    }

    /// Every activity from `from` on, page after page until the last.
    async fn activities(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        from: NaiveDate,
    ) -> Result<Vec<Activity>, ProviderError> {
        let mut out = Vec::new();
        for page in 1..=MAX_PAGES {
            let query = [
                ("page", page.to_string()),
                ("perPage", PER_PAGE.to_string()),
                ("startDate", from.to_string()),
            ];
            let answer: ActivityPage = self.api.get_json(gate, token, "/activities", &query).await?;
            let last = answer.data.is_empty() || answer.total_pages.is_none_or(|t| page >= t);
            out.extend(answer.data);
            if last {
                return Ok(out);
            }
        }
        Err(ProviderError::Api(format!("{SLUG} kept paging past {MAX_PAGES} pages")))
    }

    /// The activities created in `range` (a day either side: the user's day is not the UTC one).
    async fn listed(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        range: DateRange,
    ) -> Result<Vec<Activity>, ProviderError> {
        let from = range.start - Duration::days(1);
        let until = range.end + Duration::days(1);
        let token = credentials.access_token.expose();
        let all = self
            .kept_lists
            .get_or_fetch((digest(credentials), from), || self.activities(gate, token, from))
            .await?;
        Ok(all.iter().filter(|a| a.created_day().is_none_or(|d| from <= d && d <= until)).cloned().collect())
    }

    /// The activity's FIT file, decoded; `None` when Hammerhead has none (404).
    async fn fit_file(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        id: &str,
    ) -> Result<Option<FitActivity>, ProviderError> {
        let path = format!("/activities/{id}/file");
        let request = self
            .api
            .http
            .get(self.api.url(&path))
            .bearer_auth(token)
            .header("accept", "application/vnd.ant.fit");
        fit::download(gate, SLUG, request, &[404]).await
    }

    /// Each listed activity of `range` with its decoded file.
    async fn with_files(
        &self,
        gate: &dyn RequestGate,
        credentials: &ProviderCredentials,
        range: DateRange,
    ) -> Result<Vec<(Activity, Arc<Option<FitActivity>>)>, ProviderError> {
        let token = credentials.access_token.expose();
        let mut out = Vec::new();
        for activity in self.listed(gate, credentials, range).await? {
            let key = (digest(credentials), activity.id.clone());
            let file = self.kept_files.get_or_fetch(key, || self.fit_file(gate, token, &activity.id)).await?;
            out.push((activity, file));
        }
        Ok(out)
    }

    async fn deauthorize(
        &self,
        client: &OauthClient,
        credentials: &ProviderCredentials,
    ) -> Result<(), ProviderError> {
        let form = [
            ("token", credentials.access_token.expose()),
            ("client_id", client.client_id.as_str()),
            ("client_secret", client.client_secret.expose()),
        ];
        let body = serde_urlencoded::to_string(form).map_err(|e| ProviderError::Api(e.to_string()))?;
        let request = self
            .api
            .http
            .post(self.deauthorize_url())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        http::check(SLUG, http::send(SLUG, request).await?).map(|_| ())
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A page of `GET /activities` (the document's `Pagination` with `data`).
#[derive(Debug, Deserialize)]
struct ActivityPage {
    #[serde(default)]
    data: Vec<Activity>,
    #[serde(default, rename = "totalPages")]
    total_pages: Option<usize>,
}

/// An activity as listed (the document's `ActivitySummary`).
#[derive(Debug, Clone, Deserialize)]
struct Activity {
    id: String,
    #[serde(default, rename = "createdAt")]
    created_at: Option<DateTime<Utc>>,
    /// Seconds (not stated by the document).
    #[serde(default)]
    duration: Option<f64>,
    /// Metres (not stated by the document).
    #[serde(default)]
    distance: Option<f64>,
}

impl Activity {
    fn created_day(&self) -> Option<NaiveDate> {
        self.created_at.map(|t| t.date_naive())
    }

    /// The workout record: started when its recording starts, else when it was created; dated by
    /// the pipeline in the user's zone (Hammerhead names none).
    fn record(&self, file: Option<&FitActivity>) -> Option<Value> {
        let start = file.and_then(FitActivity::start).or(self.created_at)?;
        let secs = self.duration.map_or(0, |d| d.round() as i64).max(0);
        let sport = file.and_then(|f| f.sport.as_deref()).map_or_else(|| "other".to_owned(), sport_slug);
        let mut record = json!({
            "time_start": rfc3339(start),
            "time_end": rfc3339(start + Duration::seconds(secs)),
            "sport": sport,
        });
        if let Some(m) = self.distance {
            record["distance_m"] = json!(m);
        }
        if let Some(f) = file {
            let hr: Vec<f64> = f.samples.iter().filter_map(|s| s.heart_rate).collect();
            if !hr.is_empty() {
                let average = hr.iter().sum::<f64>() / hr.len() as f64;
                record["average_hr"] = json!((average * 10.0).round() / 10.0);
            }
        }
        Some(record)
    }
}

/// A webhook delivery: `{activityId, userId}` when an activity syncs.
#[derive(Debug, Deserialize)]
struct Delivery {
    #[serde(rename = "userId")]
    user_id: Value,
}

/// The signature Hammerhead would send: hex HMAC-SHA256 of the raw body with the webhook secret
/// (for the fake and tests).
pub fn sign(secret: &str, body: &[u8]) -> String {
    hex_hmac_sha256(secret.as_bytes(), body)
}

/// Hammerhead's signature check: the header's hex HMAC-SHA256 of the raw body with the webhook
/// secret, an optional `<scheme>=` prefix stripped, compared case-insensitively in constant
/// time.
pub fn signature_ok(secret: &str, body: &[u8], header: &str) -> bool {
    let given = header.trim();
    let given = given.split_once('=').map_or(given, |(_, hex)| hex);
    hex_hmac_matches(secret.as_bytes(), body, given)
}

#[async_trait]
impl Adapter for Hammerhead {
    fn api(&self) -> &Api {
        &self.api
    }

    /// The token answer names the user (`user_id`), which webhooks name too.
    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let answer: TokenAnswer = self.api.exchange_answer(exchange).await?;
        let user_id = match answer.extra.get("user_id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(ProviderError::Api(format!("{SLUG}'s token answer has no user_id"))),
        };
        let mut credentials = answer.into_credentials(Utc::now(), None);
        if credentials.scopes.is_empty() {
            credentials.scopes = vec![SCOPES.to_owned()];
        }
        tracing::info!(provider = SLUG, "linked");
        Ok(ProviderAccount { external_user_id: user_id, credentials })
    }

    /// A refresh naming no scopes keeps the granted ones.
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

    async fn fetch(
        &self,
        account: &ProviderAccount,
        resource: &Resource,
        range: DateRange,
        gate: &dyn RequestGate,
    ) -> Result<FetchedResource, ProviderError> {
        let c = &account.credentials;
        let activities = match resource {
            Resource::Workouts | Resource::Heartrate | Resource::Distance | Resource::WorkoutStream => {
                self.with_files(gate, c, range).await?
            }
            other => return Err(ProviderError::Unsupported(format!("{SLUG} does not serve {other}"))),
        };
        let records: Vec<Value> = match resource {
            Resource::Workouts => {
                activities.iter().filter_map(|(a, file)| a.record(file.as_ref().as_ref())).collect()
            }
            _ => activities
                .iter()
                .filter_map(|(_, file)| file.as_ref().as_ref())
                .flat_map(|f| fit::rows(&f.samples, resource, None))
                .collect(),
        };
        tracing::debug!(provider = SLUG, resource = %resource, records = records.len(), "fetched");
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    /// `POST /v1/auth/oauth/deauthorize` with the access token and the client, an expired access
    /// token refreshed first ([`oauth::revoke_refreshing`]).
    async fn revoke(&self, client: &OauthClient, account: &ProviderAccount) -> Result<(), ProviderError> {
        oauth::revoke_refreshing(
            &account.credentials,
            |c| async move { self.deauthorize(client, &c).await },
            || self.refresh(client, &account.credentials),
        )
        .await
    }

    /// A delivery must carry `X-Hmac-Signature` made with the webhook's secret
    /// (`verification_token`: the configured push token, set in Hammerhead's dashboard beside the
    /// webhook URL); unsigned, badly signed, or without a configured secret it is refused and
    /// nothing changes. It names the user, not the activity's day: the user's connections are
    /// polled from their last poll.
    fn push(
        &self,
        _client: &OauthClient,
        verification_token: Option<&str>,
        request: &PushRequest,
    ) -> PushOutcome {
        if !request.method.eq_ignore_ascii_case("POST") {
            return PushOutcome::Refused("Hammerhead only POSTs".into());
        }
        let Some(secret) = verification_token.filter(|s| !s.is_empty()) else {
            return PushOutcome::Refused("no Hammerhead webhook secret is configured".into());
        };
        let Some(signature) = request.header(SIGNATURE_HEADER) else {
            return PushOutcome::Refused("unsigned push".into());
        };
        if !signature_ok(secret, &request.body, signature) {
            return PushOutcome::Refused("bad push signature".into());
        }
        let Ok(delivery) = serde_json::from_slice::<Delivery>(&request.body) else {
            return PushOutcome::Refused("unreadable push body".into());
        };
        let user = match delivery.user_id {
            Value::String(s) if !s.is_empty() => s,
            Value::Number(n) => n.to_string(),
            _ => return PushOutcome::Refused("a push without userId".into()),
        };
        PushOutcome::Notices(vec![PushNotice {
            external_user_id: user,
            resources: RESOURCES.to_vec(),
            range: None,
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_hex_with_an_optional_prefix() {
        let sig = sign("secret", b"{}");
        assert!(signature_ok("secret", b"{}", &sig));
        assert!(signature_ok("secret", b"{}", &format!("sha256={sig}")));
        assert!(signature_ok("secret", b"{}", &sig.to_ascii_uppercase()));
        assert!(!signature_ok("secret", b"{ }", &sig));
        assert!(!signature_ok("other", b"{}", &sig));
        assert!(!signature_ok("secret", b"{}", ""));
    }
}
