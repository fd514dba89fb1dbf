//! Real provider adapters: each speaks one provider's public API (OAuth 2, data endpoints,
//! push notifications) and maps its records to the normalised records the data pipeline reads
//! (`wearlab_domain::pipeline::normalize`). [`RealProviders`] routes the `Providers` port: a
//! provider with an active adapter goes to it, everything else (demo connections, password
//! providers, providers without an adapter) to the simulator.
//!
//! Facts about each API (hosts, paths, fields, units, limits, signatures) come from the
//! providers' published documents; `docs/PROVIDERS.md` says which, and what each adapter maps.

pub mod adapter;
pub mod config;
pub mod description;
pub mod fit;
pub mod http;
pub mod kept;
pub mod oauth;
pub mod router;
pub mod tink;

pub mod dexcom;
pub mod google_health;
pub mod hammerhead;
pub mod oura;
pub mod polar;
pub mod strava;
pub mod suunto;
pub mod ultrahuman;
pub mod wahoo;
pub mod whoop;
pub mod withings;

#[cfg(feature = "fake")]
pub mod fake;

pub use adapter::Adapter;
pub use config::{AppConfig, Endpoints};
pub use description::{Api, ProviderDescription, Refresh};
pub use router::{RealProviders, Route};

use std::sync::Arc;

use wearlab_domain::ports::providers::Providers;

/// The variable that lets providers without a real adapter be linked to the simulator.
pub const SIMULATED_PROVIDERS_VAR: &str = "WEARLAB_SIMULATED_PROVIDERS";

/// `WEARLAB_SIMULATED_PROVIDERS` from `var`: `true` or `false`; unset is `false`, so that a
/// deployment never links a real person to synthetic data unless its operator asked for it.
pub fn simulated_links(var: impl Fn(&str) -> Option<String>) -> Result<bool, String> {
    match var(SIMULATED_PROVIDERS_VAR).as_deref().map(str::trim) {
        None | Some("") => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
        Some(v) => Err(format!("{SIMULATED_PROVIDERS_VAR} must be true or false, not {v:?}")),
    }
}

/// The adapters the operator activated, the simulator behind them. `var` answers the
/// `WEARLAB_PROVIDER_*` variables: on a deployment, `wearlab_aws::deps_from_env` hands over the
/// environment with the providers' secrets read from SSM; the local stack its own variables. A provider is real when its
/// platform OAuth app is configured (`WEARLAB_PROVIDER_<SLUG>_CLIENT_ID` and `_CLIENT_SECRET`),
/// or when `WEARLAB_PROVIDER_<SLUG>_ENABLED=true` (a provider linked only through teams' own
/// OAuth apps). Every other provider can be linked to the simulator only when
/// `WEARLAB_SIMULATED_PROVIDERS=true` ([`simulated_links`]); otherwise it is demo only. Demo
/// connections stay simulated either way.
///
/// # Panics
/// On a `WEARLAB_SIMULATED_PROVIDERS` that is neither `true` nor `false`: it is read once at a
/// function's start, which then stops with the message naming the variable.
pub fn from_vars(sim: Arc<dyn Providers>, var: impl Fn(&str) -> Option<String>) -> Arc<dyn Providers> {
    let simulating = simulated_links(&var).unwrap_or_else(|e| panic!("{e}"));
    let enabled = |slug: &str, config: &AppConfig| {
        config.platform_client.is_some()
            || var(&format!("WEARLAB_PROVIDER_{}_ENABLED", slug.to_ascii_uppercase()))
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    };
    let mut routes = Vec::new();
    let mut available = Vec::new();
    for (adapter, config) in adapters(&var) {
        available.push(adapter.clone());
        if enabled(adapter.slug(), &config) {
            routes.push(Route { adapter, config });
        }
    }
    Arc::new(RealProviders::new(sim, routes).with_available(&available).simulating(simulating))
}

/// Every adapter in this build with its configuration from `var`, whether the operator
/// activated it or not.
pub fn adapters(var: impl Fn(&str) -> Option<String>) -> Vec<(Arc<dyn Adapter>, AppConfig)> {
    let mut all = Vec::new();
    let mut add = |adapter: Arc<dyn Adapter>, config: AppConfig| all.push((adapter, config));
    let config = oura::DESCRIPTION.config(&var);
    add(Arc::new(oura::Oura::new(config.clone())), config);
    let config = whoop::DESCRIPTION.config(&var);
    add(Arc::new(whoop::Whoop::new(config.clone())), config);
    let config = withings::DESCRIPTION.config(&var);
    add(Arc::new(withings::Withings::new(config.clone())), config);
    let config = strava::DESCRIPTION.config(&var);
    add(Arc::new(strava::Strava::new(config.clone())), config);
    let config = AppConfig::from_vars(dexcom::SLUG, dexcom::Dexcom::endpoints_from(&var), &var);
    add(Arc::new(dexcom::Dexcom::new(config.clone()).with_public_url(var("WEARLAB_PUBLIC_URL"))), config);
    let config = google_health::DESCRIPTION.config(&var);
    let urls = google_health::GoogleUrls::from_vars(&var);
    add(Arc::new(google_health::GoogleHealth::new(config.clone(), urls)), config);
    let config = polar::DESCRIPTION.config(&var);
    add(Arc::new(polar::Polar::new(config.clone())), config);
    let config = ultrahuman::DESCRIPTION.config(&var);
    add(Arc::new(ultrahuman::Ultrahuman::new(config.clone())), config);
    let config = suunto::DESCRIPTION.config(&var);
    let key = var(suunto::SUBSCRIPTION_KEY_VAR);
    add(Arc::new(suunto::Suunto::new(config.clone()).with_subscription_key(key)), config);
    let config = hammerhead::DESCRIPTION.config(&var);
    add(Arc::new(hammerhead::Hammerhead::new(config.clone())), config);
    let config = wahoo::DESCRIPTION.config(&var);
    add(Arc::new(wahoo::Wahoo::new(config.clone()).mode(wahoo::AppMode::from_vars(&var))), config);
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use wearlab_domain::ports::providers::AuthorizeRequest;
    use wearlab_models::{ProviderAvailability, Resource};

    fn request() -> AuthorizeRequest {
        AuthorizeRequest { client_id: "id".into(), redirect_uri: "https://w/cb".into(), state: "s".into() }
    }

    #[test]
    fn a_provider_is_real_once_its_app_is_configured() {
        let unconfigured = from_vars(wearlab_sim::providers(), |_| None);
        assert_eq!(unconfigured.availability("oura"), ProviderAvailability::DemoOnly);
        assert_eq!(unconfigured.availability("garmin"), ProviderAvailability::DemoOnly);
        let sim_url = unconfigured.authorize_url("oura", &request()).unwrap();
        assert!(!sim_url.starts_with("https://cloud.ouraring.com/"), "{sim_url}");

        let configured = from_vars(wearlab_sim::providers(), |k| match k {
            "WEARLAB_PROVIDER_OURA_CLIENT_ID" => Some("id".into()),
            "WEARLAB_PROVIDER_OURA_CLIENT_SECRET" => Some("secret".into()),
            _ => None,
        });
        assert_eq!(configured.availability("oura"), ProviderAvailability::Live);
        assert_eq!(configured.availability("garmin"), ProviderAvailability::DemoOnly);
        assert_eq!(configured.platform_oauth_client("oura").unwrap().client_id, "id");
        let url = configured.authorize_url("oura", &request()).unwrap();
        assert!(url.starts_with("https://cloud.ouraring.com/oauth/authorize?"), "{url}");
    }

    #[test]
    fn every_adapter_is_listed_with_exactly_the_resources_it_fills() {
        use wearlab_domain::common::provider_catalog::catalog;
        use wearlab_domain::pipeline::normalize::is_modelled;
        let all = adapters(|_| None);
        assert!(all.len() >= 3);
        // Configured or not, the listing is the adapter's: demo connections of a provider with an
        // adapter pull the same resources a real link would.
        for configured in [false, true] {
            let providers = from_vars(wearlab_sim::providers(), |k| {
                (configured && k.starts_with("WEARLAB_PROVIDER_")).then(|| "x".to_owned())
            });
            let listed = catalog().list_on(providers.as_ref(), None);
            for (adapter, _) in &all {
                let slug = adapter.slug();
                let entry =
                    listed.iter().find(|e| e.slug == slug).unwrap_or_else(|| panic!("{slug} not listed"));
                let data: Vec<&Resource> =
                    entry.supported_resources.iter().filter(|r| **r != Resource::Connection).collect();
                assert_eq!(data, adapter.resources().iter().collect::<Vec<_>>(), "{slug}");
                for r in adapter.resources() {
                    assert!(!matches!(r, Resource::Other(_)), "{slug}: {r} is not a documented resource");
                    assert!(is_modelled(r), "{slug}: {r} is not stored by the pipeline");
                }
                let pulled = wearlab_domain::pipeline::pull::data_resources(providers.as_ref(), slug);
                let mut pulled_sorted = pulled.clone();
                pulled_sorted.sort();
                let mut filled = adapter.resources().to_vec();
                filled.sort();
                assert_eq!(pulled_sorted, filled, "{slug}: the pull fetches what the adapter fills");
            }
        }
    }

    #[test]
    fn the_catalog_says_which_providers_are_demo_only_and_that_fitbit_is_off() {
        use wearlab_domain::common::provider_catalog::{
            DEMO_ONLY_NOTE, NO_ADAPTER_NOTE, SIMULATED_NOTE, catalog,
        };
        let entry = |providers: &dyn Providers, slug: &str| {
            catalog().list_on(providers, None).into_iter().find(|e| e.slug == slug).unwrap()
        };
        let unconfigured = from_vars(wearlab_sim::providers(), |_| None);
        let oura = entry(unconfigured.as_ref(), "oura");
        assert!(oura.description.ends_with(DEMO_ONLY_NOTE));
        assert_eq!(oura.availability, ProviderAvailability::DemoOnly);
        let garmin = entry(unconfigured.as_ref(), "garmin");
        assert!(garmin.description.ends_with(NO_ADAPTER_NOTE), "{}", garmin.description);
        assert_eq!(garmin.availability, ProviderAvailability::DemoOnly);
        assert!(entry(unconfigured.as_ref(), "fitbit").description.contains("turned off on 2026-11-02"));
        let configured = from_vars(wearlab_sim::providers(), |k| {
            k.starts_with("WEARLAB_PROVIDER_OURA_CLIENT_").then(|| "x".to_owned())
        });
        let oura = entry(configured.as_ref(), "oura");
        assert!(!oura.description.contains("on this deployment"), "{}", oura.description);
        assert_eq!(oura.availability, ProviderAvailability::Live);

        let simulating = from_vars(wearlab_sim::providers(), |k| {
            (k == SIMULATED_PROVIDERS_VAR).then(|| "true".to_owned())
        });
        for slug in ["oura", "garmin", "peloton"] {
            let e = entry(simulating.as_ref(), slug);
            assert_eq!(e.availability, ProviderAvailability::Simulated, "{slug}");
            assert!(e.description.ends_with(SIMULATED_NOTE), "{slug}: {}", e.description);
        }
    }

    #[test]
    fn simulated_links_are_off_unless_asked_for_and_a_bad_value_is_named() {
        assert_eq!(simulated_links(|_| None), Ok(false));
        let with = |v: &'static str| simulated_links(move |_| Some(v.to_owned()));
        assert_eq!(with("true"), Ok(true));
        assert_eq!(with(" TRUE "), Ok(true));
        assert_eq!(with("false"), Ok(false));
        assert_eq!(with(""), Ok(false));
        assert!(with("yes").unwrap_err().contains(SIMULATED_PROVIDERS_VAR));
    }

    #[test]
    fn google_health_is_an_oauth_provider_listing_exactly_what_its_adapter_fills() {
        use wearlab_domain::common::provider_catalog::catalog;
        let entry = catalog().get(google_health::SLUG).expect("google_health in the catalog");
        assert!(entry.is_oauth());
        assert!(entry.description.contains("Fitbit connections cannot be carried over"));
        let adapter = google_health::GoogleHealth::new(
            AppConfig::from_vars(google_health::SLUG, google_health::GoogleHealth::endpoints(), |_| None),
            google_health::GoogleUrls::real(),
        );
        let mut expected = adapter.resources().to_vec();
        expected.push(Resource::Connection);
        assert_eq!(entry.supported_resources, expected);

        let configured = from_vars(wearlab_sim::providers(), |k| {
            k.starts_with("WEARLAB_PROVIDER_GOOGLE_HEALTH_CLIENT_").then(|| "x".to_owned())
        });
        let url = configured.authorize_url("google_health", &request()).unwrap();
        assert!(url.starts_with("https://accounts.google.com/o/oauth2/v2/auth?"), "{url}");
    }
}
