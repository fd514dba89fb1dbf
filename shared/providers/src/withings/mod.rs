//! Withings Public Health Data API (https://wbsapi.withings.net): OAuth 2 through
//! `/v2/oauth2` (`action=requesttoken`), every call a form POST with `action`, errors as
//! HTTP 200 with a non-zero `status` in the body, pages by `more`/`offset`, per-user
//! notification subscriptions. Facts: Withings's published documents, listed under "Sources" in
//! the Withings section of `docs/PROVIDERS.md`; paths, parameters, answer shapes, types, units and
//! codes as in the Withings API reference (https://developer.withings.com/api-reference), read in
//! its OpenAPI source (repository `api-evangelist/withings`,
//! `openapi/_original/withings-data-api-openapi.yml`).
//!
//! What is mapped (value x 10^unit for measures; seconds, meters, kcal as Withings gives them):
//! - `getmeas` (`/measure`, real measures only): `body` (weight kg, height m, fat ratio %, the
//!   day's last of each, dated by its measure group), `weight` (1), `fat` (6), `blood_oxygen`
//!   (54), `body_temperature` (12, 71), and `profile` (the last height, 4).
//! - `getactivity`: `activity` (steps, distance m, elevation as floors, soft -> low and
//!   intense -> high minutes, active and total kcal).
//! - `getintradayactivity`, one 24 h window a day (Withings answers only the first 24 h of a
//!   longer span): `heartrate`, `steps`, `distance`, `calories_active`.
//! - `getworkouts`: `workouts`, the sport from the Withings API reference's workout category
//!   table; `sleep getsummary`: `sleep` (the longest per day).
//!
//! Blood pressure is not offered. The Withings API reference reports it as one measure group
//! holding a diastolic (type 9), a systolic (10) and a pulse (11) measure, in mmHg and bpm;
//! Wearlab's timeseries sample carries one `value`, and its `blood_pressure` resource documents no
//! systolic/diastolic pair (the simulator writes one mmHg value a sample), so either half alone
//! would be mislabelled data.
//!
//! The files: this one is the client (the calls, pages, tokens and the `Adapter`); [`wire`] the
//! answer envelope and its status codes; [`mappings`] what Withings's JSON becomes in Wearlab's
//! records; [`push`] the notifications; `categories` the workout category table.

use async_trait::async_trait;
use chrono::{Duration, Utc};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{
    CodeExchange, DateRange, FetchedResource, NoLimit, OauthClient, ProviderAccount, ProviderCredentials,
    ProviderError, PushOutcome, PushRequest, RateWindow, RequestGate,
};
use wearlab_models::Resource;

use crate::adapter::Adapter;
use crate::config::{AppConfig, Endpoints};
use crate::description::{Api, ProviderDescription, Refresh};
use crate::http;
use crate::oauth::{self, ClientAuth};

mod categories;
mod mappings;
mod push;
mod wire;

use mappings::{
    BODY_TYPES, MeasureGroup, Measures, SleepSummary, activity_records, body_records, intraday_field,
    intraday_rows, measure_rows, measure_types, midnight, profile_records, sleep_records, workout_records,
};
pub use push::{APPLI_USER, NOTIFY_APPLIS, read_push, resources_of_appli};
use wire::{Envelope, Nonce, Paging, TokenBody};
pub use wire::{Status, signature};

pub const SLUG: &str = "withings";

/// Withings separates scopes with commas.
pub const SCOPES: &str = "user.info,user.metrics,user.activity,user.sleepevents";

/// A provider that keeps answering `more` is cut off here (a loop, not data).
const MAX_PAGES: usize = 10_000;

const RESOURCES: &[Resource] = &[
    Resource::Profile,
    Resource::Body,
    Resource::Weight,
    Resource::Fat,
    Resource::BloodOxygen,
    Resource::BodyTemperature,
    Resource::Activity,
    Resource::Workouts,
    Resource::Sleep,
    Resource::Heartrate,
    Resource::Steps,
    Resource::Distance,
    Resource::CaloriesActive,
];

const LIMITS: &[RateWindow] = &[RateWindow { requests: 120, window_secs: 60 }];

/// The longest span of one sleep call: the Withings API reference's sleep `enddate` (in
/// `sleep_summary_object` too) says "A single call can span up to 7 days maximum".
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

/// Withings as its published documents describe it. Its token endpoint is not RFC 6749's (a
/// form with `action=requesttoken`, the client in it, answered in Withings's envelope), so the
/// code exchange and the refresh are this adapter's own; the rest is shared.
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: LIMITS,
    user_limits: &[],
    authorize_url: "https://account.withings.com/oauth2_user/authorize2",
    token_url: "https://wbsapi.withings.net/v2/oauth2",
    api_url: "https://wbsapi.withings.net",
    scopes: SCOPES,
    authorize_extra: &[],
    client_auth: ClientAuth::Body,
    refresh: Refresh::Token { extra: &[] },
};

pub struct Withings {
    api: Api,
}

impl Withings {
    pub fn new(config: AppConfig) -> Self {
        Self { api: Api::new(&DESCRIPTION, config) }
    }

    /// Withings's real hosts.
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
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
            self.api.http.post(url).header("content-type", "application/x-www-form-urlencoded").body(body);
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
        let url = format!("{}/{service}", self.api.config.endpoints.api);
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
        self.post(&NoLimit, &self.api.config.endpoints.token, None, &form, |s| s.token_error(refusal)).await
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
        let url = format!("{}/v2/signature", self.api.config.endpoints.api);
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
    fn api(&self) -> &Api {
        &self.api
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
        resource: &Resource,
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
            Resource::Body => body_records(&self.measures(gate, c, &BODY_TYPES, Some(range)).await?, range),
            Resource::Profile => profile_records(&self.measures(gate, c, &[4], None).await?),
            Resource::Activity => {
                let form = ymd(
                    "getactivity",
                    "steps,distance,elevation,soft,moderate,intense,active,calories,totalcalories",
                );
                activity_records(&self.paged(gate, c, "v2/measure", form, "activities").await?, range)
            }
            Resource::Workouts => {
                let form = ymd("getworkouts", "calories,hr_average,distance");
                workout_records(&self.paged(gate, c, "v2/measure", form, "series").await?, range)
            }
            Resource::Sleep => {
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
        tracing::debug!(provider = SLUG, resource = %resource, records = records.len(), "fetched");
        Ok(FetchedResource { resource: resource.clone(), records })
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
            .post(&NoLimit, &self.api.config.endpoints.token, None, &form, |s| {
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
    use chrono::NaiveDate;

    use super::*;

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
}
