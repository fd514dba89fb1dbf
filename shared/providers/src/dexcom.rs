//! Dexcom API v3 (continuous glucose monitors): OAuth 2 with the client in the body and
//! `scope=offline_access`, estimated glucose values (`egvs`) read by date windows, no push (the
//! data is pulled). One host serves the consent page, the token endpoint and the data, and which
//! host (sandbox, US, EU, JP) is configuration. Facts: Dexcom's v3 documentation, listed under
//! "Sources" in the Dexcom section of `docs/PROVIDERS.md`; what is mapped to what: that section
//! too.

use std::collections::HashSet;

use async_trait::async_trait;
use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime};
use serde::Deserialize;
use serde_json::{Value, json};
use wearlab_domain::ports::providers::{
    CodeExchange, DateRange, FetchedResource, NoLimit, OauthClient, ProviderAccount, ProviderCredentials,
    ProviderError, PushOutcome, PushRequest, RateWindow, RequestGate,
};
use wearlab_models::Resource;
use wearlab_models::data::GLUCOSE_MG_DL_PER_MMOL_L;

use crate::adapter::Adapter;
use crate::config::{AppConfig, Endpoints};
use crate::description::{Api, ProviderDescription, Refresh};
use crate::oauth::ClientAuth;

pub const SLUG: &str = "dexcom_v3";

/// Dexcom's production host in the US, the default. The others (sandbox
/// `https://sandbox-api.dexcom.com`, EU `https://api.dexcom.eu`, JP `https://api.dexcom.jp`) are
/// chosen with `WEARLAB_PROVIDER_DEXCOM_V3_API_URL` (Dexcom's endpoint overview,
/// https://developer.dexcom.com/docs/dexcomv3/endpoint-overview).
pub const US_HOST: &str = "https://api.dexcom.com";

/// Dexcom's one scope; it is what makes Dexcom issue a refresh token (Dexcom's authentication
/// page, https://developer.dexcom.com/docs/dexcom/authentication/).
pub const SCOPES: &str = "offline_access";

/// 60,000 calls per application per hour (§9 Rate, from the v2 page: the v3 page is truncated).
const LIMITS: &[RateWindow] = &[RateWindow { requests: 60_000, window_secs: 3600 }];

/// Only the glucose series: Dexcom's `devices` are not a series the pipeline models (it stores
/// `{timestamp, value}` samples), and events, calibrations and alerts have no catalog resource.
const RESOURCES: &[Resource] = &[Resource::Glucose];

/// Days asked per `egvs` call. Dexcom's largest window is not in the facts (§9 Endpoints: max
/// window unknown): a week of five-minute readings is about 2,000 records per answer, and a
/// 90-day history costs 13 calls of the 60,000 an hour allows.
pub const WINDOW_DAYS: i64 = 7;

/// `startDate`/`endDate`: ISO 8601 without an offset, read by Dexcom as UTC `systemTime` (§9
/// Endpoints, e.g. `2025-02-06T09:12:35`).
const DATE_FORMAT: &str = "%Y-%m-%dT%H:%M:%S";

/// The values of an EGV's `unit` (GlucoseUnit: `mg/dL`, `mmol/L`, and `unknown`, which Dexcom's
/// own EGVs example carries). A reading in `unknown` is kept with that unit stated rather than
/// dropped or guessed: its `rateUnit` may name the other unit (the example's does, beside a
/// value of 135), so nothing in the record says which it is.
const GLUCOSE_UNITS: [&str; 3] = ["mg/dL", "mmol/L", "unknown"];

/// Dexcom as its published documents describe it (US production; the other hosts are
/// configuration, [`Dexcom::endpoints_from`]): the client in the token form's body.
pub static DESCRIPTION: ProviderDescription = ProviderDescription {
    slug: SLUG,
    resources: RESOURCES,
    app_limits: LIMITS,
    user_limits: &[],
    authorize_url: "https://api.dexcom.com/v2/oauth2/login",
    token_url: "https://api.dexcom.com/v2/oauth2/token",
    api_url: US_HOST,
    scopes: SCOPES,
    authorize_extra: &[],
    client_auth: ClientAuth::Body,
    refresh: Refresh::Token { extra: &[] },
};

pub struct Dexcom {
    api: Api,
    /// The deployment's public URL (`WEARLAB_PUBLIC_URL`), from which the callback given at the
    /// link is rebuilt for refreshes: Dexcom's token form carries `redirect_uri` (§9 Token).
    public_url: Option<String>,
}

impl Dexcom {
    /// The endpoints on `host` (no trailing slash): the consent page, the token endpoint and the
    /// data all live there (§9 Authorize, Token).
    pub fn endpoints_on(host: &str) -> Endpoints {
        let host = host.trim().trim_end_matches('/');
        Endpoints {
            authorize: format!("{host}/v2/oauth2/login"),
            token: format!("{host}/v2/oauth2/token"),
            api: host.to_owned(),
        }
    }

    /// The real hosts (US production).
    pub fn endpoints() -> Endpoints {
        DESCRIPTION.endpoints()
    }

    /// The defaults of the configuration read through `var`: the host
    /// `WEARLAB_PROVIDER_DEXCOM_V3_API_URL` names (the sandbox, EU or JP) for all three
    /// endpoints, US production otherwise. `..._AUTHORIZE_URL` and `..._TOKEN_URL` still override
    /// one endpoint each ([`AppConfig::from_vars`]).
    pub fn endpoints_from(var: impl Fn(&str) -> Option<String>) -> Endpoints {
        let host = var("WEARLAB_PROVIDER_DEXCOM_V3_API_URL").filter(|h| !h.trim().is_empty());
        Self::endpoints_on(host.as_deref().unwrap_or(US_HOST))
    }

    pub fn new(config: AppConfig) -> Self {
        Self { api: Api::new(&DESCRIPTION, config), public_url: None }
    }

    /// The deployment's public URL, when configured: refreshes send the link's callback.
    pub fn with_public_url(mut self, public_url: Option<String>) -> Self {
        self.public_url = public_url.map(|u| u.trim().to_owned()).filter(|u| !u.is_empty());
        self
    }

    pub fn config(&self) -> &AppConfig {
        &self.api.config
    }

    async fn data_range(&self, gate: &dyn RequestGate, token: &str) -> Result<DataRange, ProviderError> {
        self.api.get(gate, token, "/v3/users/self/dataRange", &[]).await?.json(SLUG)
    }

    /// The EGVs of `range`, one call per [`WINDOW_DAYS`] (Dexcom does not page: the window is the
    /// page). A range longer than one window is first cut to the user's data (`dataRange`), so a
    /// historical pull asks nothing before the first reading or after the last.
    async fn egvs(
        &self,
        gate: &dyn RequestGate,
        token: &str,
        range: DateRange,
    ) -> Result<Vec<Value>, ProviderError> {
        let mut from = range.start.and_hms_opt(0, 0, 0).expect("midnight");
        let mut until = (range.end + Duration::days(1)).and_hms_opt(0, 0, 0).expect("midnight");
        if until - from > Duration::days(WINDOW_DAYS) {
            let held = self.data_range(gate, token).await?.egvs.unwrap_or_default();
            match (held.start.and_then(|m| m.system_time), held.end.and_then(|m| m.system_time)) {
                (Some(first), Some(last)) => {
                    let first = system_time(&first)?;
                    let last = system_time(&last)?;
                    from = from.max(first);
                    until = until.min(last + Duration::seconds(1));
                }
                // No reading at all yet.
                _ => return Ok(vec![]),
            }
        }
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        while from < until {
            let to = (from + Duration::days(WINDOW_DAYS)).min(until);
            let query = [
                ("startDate", from.format(DATE_FORMAT).to_string()),
                ("endDate", to.format(DATE_FORMAT).to_string()),
            ];
            let page: Egvs = self.api.get(gate, token, "/v3/users/self/egvs", &query).await?.json(SLUG)?;
            for r in page.records {
                // Window bounds may be inclusive at both ends: a reading on a bound comes twice.
                let key = r
                    .get("recordId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| r.to_string());
                if seen.insert(key) {
                    out.extend(egv_sample(&r, range));
                }
            }
            from = to;
        }
        out.sort_by(|a, b| a["timestamp"].as_str().cmp(&b["timestamp"].as_str()));
        Ok(out)
    }
}

#[derive(Deserialize)]
struct Egvs {
    #[serde(default)]
    records: Vec<Value>,
}

#[derive(Deserialize)]
struct DataRange {
    #[serde(default, rename = "userId")]
    user_id: Option<String>,
    /// Absent or `null`: no readings, as `null` `start`/`end` times are in Dexcom's example.
    #[serde(default)]
    egvs: Option<Window>,
}

#[derive(Deserialize, Default)]
struct Window {
    #[serde(default)]
    start: Option<Moment>,
    #[serde(default)]
    end: Option<Moment>,
}

#[derive(Deserialize)]
struct Moment {
    #[serde(default, rename = "systemTime")]
    system_time: Option<String>,
}

/// A `systemTime`: UTC, written without an offset (§9 EGV fields); one with an offset or a
/// fraction of a second is read too.
fn system_time(s: &str) -> Result<NaiveDateTime, ProviderError> {
    parse_system_time(s)
        .ok_or_else(|| ProviderError::Api(format!("{SLUG} answered an unreadable systemTime")))
}

fn parse_system_time(s: &str) -> Option<NaiveDateTime> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.naive_utc());
    }
    NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").ok()
}

/// One EGV as a glucose sample `{timestamp, value, unit}` in Wearlab's unit, mg/dL: a reading
/// in mmol/L (the user's Dexcom setting) is converted ([`GLUCOSE_MG_DL_PER_MMOL_L`]), so that a
/// user's glucose reads the same from every source; `unknown` stays stated, unconverted.
/// `None` for a reading outside `range`, without a value or without a unit.
fn egv_sample(r: &Value, range: DateRange) -> Option<Value> {
    let at = parse_system_time(r.get("systemTime")?.as_str()?)?;
    let day: NaiveDate = at.date();
    if day < range.start || day > range.end {
        return None;
    }
    let unit = r.get("unit")?.as_str().filter(|u| GLUCOSE_UNITS.contains(u))?;
    let value = r.get("value")?.as_f64()?;
    let (value, unit) = match unit {
        "mmol/L" => (value * GLUCOSE_MG_DL_PER_MMOL_L, "mg/dL"),
        unit => (value, unit),
    };
    Some(json!({"timestamp": at.and_utc().to_rfc3339(), "value": value, "unit": unit}))
}

#[async_trait]
impl Adapter for Dexcom {
    fn api(&self) -> &Api {
        &self.api
    }

    /// The code exchange, then the user's id: Dexcom's token answer names no user, its records
    /// do (`userId`). `dataRange` is the smallest call that carries it.
    async fn exchange_code(&self, exchange: &CodeExchange) -> Result<ProviderAccount, ProviderError> {
        let credentials = self.api.exchange(exchange).await?;
        let range = self.data_range(&NoLimit, credentials.access_token.expose()).await?;
        let id = range
            .user_id
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ProviderError::Api(format!("{SLUG} dataRange has no userId")))?;
        Ok(ProviderAccount { external_user_id: id, credentials })
    }

    /// Whether Dexcom rotates refresh tokens is not in the facts (§9): the one it returns is
    /// kept, the old one when it returns none.
    async fn refresh(
        &self,
        client: &OauthClient,
        credentials: &ProviderCredentials,
    ) -> Result<ProviderCredentials, ProviderError> {
        let extra = match &self.public_url {
            Some(public_url) => {
                vec![("redirect_uri", wearlab_domain::linking::oauth::callback_url(public_url, SLUG))]
            }
            None => vec![],
        };
        self.api.refresh_with(client, credentials, extra).await
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
            Resource::Glucose => self.egvs(gate, token, range).await?,
            other => return Err(ProviderError::Unsupported(format!("{SLUG} does not serve {other}"))),
        };
        tracing::debug!(provider = SLUG, resource = %resource, records = records.len(), "fetched");
        Ok(FetchedResource { resource: resource.clone(), records })
    }

    /// Dexcom publishes no revoke endpoint (§9 Refresh rotation / revoke: unknown): nothing is
    /// called. The user ends the access in their Dexcom account; Wearlab drops the credentials.
    async fn revoke(&self, _client: &OauthClient, _account: &ProviderAccount) -> Result<(), ProviderError> {
        Ok(())
    }

    fn pushes(&self) -> bool {
        false
    }

    /// Dexcom has no webhooks (§9 Webhooks: none found): every push is refused.
    fn push(&self, _client: &OauthClient, _token: Option<&str>, _request: &PushRequest) -> PushOutcome {
        PushOutcome::Refused(format!("{SLUG} sends no push notifications; its data is pulled"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range() -> DateRange {
        DateRange { start: "2026-11-21".parse().unwrap(), end: "2026-11-21".parse().unwrap() }
    }

    #[test]
    fn an_egv_is_read_in_mg_per_dl_as_utc() {
        let r = json!({"recordId": "a", "systemTime": "2026-11-21T08:05:00", "value": 7.9, "unit": "mmol/L"});
        assert_eq!(
            egv_sample(&r, range()),
            Some(json!({"timestamp": "2026-11-21T08:05:00+00:00", "value": 7.9 * 18.0182, "unit": "mg/dL"}))
        );
        let r = json!({"recordId": "b", "systemTime": "2026-11-21T08:10:00", "value": 142, "unit": "mg/dL"});
        assert_eq!(
            egv_sample(&r, range()),
            Some(json!({"timestamp": "2026-11-21T08:10:00+00:00", "value": 142.0, "unit": "mg/dL"}))
        );
        let unknown = json!({"systemTime": "2026-11-21T08:05:00", "value": 135, "unit": "unknown"});
        assert_eq!(
            egv_sample(&unknown, range()),
            Some(json!({"timestamp": "2026-11-21T08:05:00+00:00", "value": 135.0, "unit": "unknown"})),
            "kept, its unit stated"
        );
        let other = json!({"systemTime": "2026-11-21T08:05:00", "value": 135, "unit": "mg/dL/min"});
        assert_eq!(egv_sample(&other, range()), None, "not a GlucoseUnit");
        let next_day = json!({"systemTime": "2026-11-22T00:00:00", "value": 135, "unit": "mg/dL"});
        assert_eq!(egv_sample(&next_day, range()), None);
    }

    #[test]
    fn a_data_range_without_readings_reads() {
        let empty: DataRange = serde_json::from_value(json!({"userId": "u", "egvs": null})).unwrap();
        assert!(empty.egvs.is_none());
        let example: DataRange = serde_json::from_value(
            json!({"userId": "u", "egvs": {"start": {"systemTime": null}, "end": {"systemTime": null}}}),
        )
        .unwrap();
        assert!(example.egvs.unwrap().start.unwrap().system_time.is_none());
    }

    #[test]
    fn the_host_variable_moves_all_three_endpoints() {
        let e = Dexcom::endpoints_from(|k| {
            (k == "WEARLAB_PROVIDER_DEXCOM_V3_API_URL").then(|| "https://sandbox-api.dexcom.com/".to_owned())
        });
        assert_eq!(e.authorize, "https://sandbox-api.dexcom.com/v2/oauth2/login");
        assert_eq!(e.token, "https://sandbox-api.dexcom.com/v2/oauth2/token");
        assert_eq!(e.api, "https://sandbox-api.dexcom.com");
        assert_eq!(Dexcom::endpoints_from(|_| None), Dexcom::endpoints());
        assert_eq!(DESCRIPTION.endpoints(), Dexcom::endpoints_on(US_HOST), "one US host for all three");
        assert_eq!(Dexcom::endpoints().authorize, "https://api.dexcom.com/v2/oauth2/login");
    }
}
