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
pub mod http;
pub mod oauth;
pub mod router;

pub mod oura;
pub mod polar;
pub mod whoop;
pub mod withings;

#[cfg(feature = "fake")]
pub mod fake;

pub use adapter::Adapter;
pub use config::{AppConfig, Endpoints};
pub use router::{RealProviders, Route};

use std::sync::Arc;

use wearlab_domain::ports::providers::Providers;

/// The `Providers` port of a deployment: [`from_vars`] on the process environment.
pub fn from_env(sim: Arc<dyn Providers>) -> Arc<dyn Providers> {
    from_vars(sim, |k| std::env::var(k).ok())
}

/// The adapters the operator activated, the simulator behind them. A provider is real when its
/// platform OAuth app is configured (`WEARLAB_PROVIDER_<SLUG>_CLIENT_ID` and `_CLIENT_SECRET`),
/// or when `WEARLAB_PROVIDER_<SLUG>_ENABLED=true` (a provider linked only through teams' own
/// OAuth apps). Everything else, and every demo connection, stays simulated; with nothing
/// configured the deployment is the simulator alone.
pub fn from_vars(sim: Arc<dyn Providers>, var: impl Fn(&str) -> Option<String>) -> Arc<dyn Providers> {
    let enabled = |slug: &str, config: &AppConfig| {
        config.platform_client.is_some()
            || var(&format!("WEARLAB_PROVIDER_{}_ENABLED", slug.to_ascii_uppercase()))
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    };
    let mut routes = Vec::new();
    let mut available = Vec::new();
    let mut add = |adapter: Arc<dyn Adapter>, config: AppConfig| {
        available.push(adapter.slug());
        if enabled(adapter.slug(), &config) {
            routes.push(Route { adapter, config });
        }
    };
    let config = AppConfig::from_vars(oura::SLUG, oura::Oura::endpoints(), &var);
    add(Arc::new(oura::Oura::new(config.clone())), config);
    let config = AppConfig::from_vars(whoop::SLUG, whoop::Whoop::endpoints(), &var);
    add(Arc::new(whoop::Whoop::new(config.clone())), config);
    let config = AppConfig::from_vars(withings::SLUG, withings::Withings::endpoints(), &var);
    add(Arc::new(withings::Withings::new(config.clone())), config);
    let config = AppConfig::from_vars(polar::SLUG, polar::Polar::endpoints(), &var);
    add(Arc::new(polar::Polar::new(config.clone())), config);
    Arc::new(RealProviders::new(sim, routes).with_available(available))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wearlab_domain::ports::providers::AuthorizeRequest;

    fn request() -> AuthorizeRequest {
        AuthorizeRequest { client_id: "id".into(), redirect_uri: "https://w/cb".into(), state: "s".into() }
    }

    #[test]
    fn a_provider_is_real_once_its_app_is_configured() {
        let unconfigured = from_vars(wearlab_sim::providers(), |_| None);
        assert!(unconfigured.demo_only("oura"));
        assert!(!unconfigured.demo_only("garmin"), "no adapter: simulated by design");
        let sim_url = unconfigured.authorize_url("oura", &request()).unwrap();
        assert!(!sim_url.starts_with("https://cloud.ouraring.com/"), "{sim_url}");

        let configured = from_vars(wearlab_sim::providers(), |k| match k {
            "WEARLAB_PROVIDER_OURA_CLIENT_ID" => Some("id".into()),
            "WEARLAB_PROVIDER_OURA_CLIENT_SECRET" => Some("secret".into()),
            _ => None,
        });
        assert!(!configured.demo_only("oura"));
        assert_eq!(configured.platform_oauth_client("oura").unwrap().client_id, "id");
        let url = configured.authorize_url("oura", &request()).unwrap();
        assert!(url.starts_with("https://cloud.ouraring.com/oauth/authorize?"), "{url}");
    }

    #[test]
    fn the_catalog_says_which_providers_are_demo_only_and_that_fitbit_is_off() {
        use wearlab_domain::catalog::{DEMO_ONLY_NOTE, catalog};
        let description = |providers: &dyn Providers, slug: &str| {
            catalog().list_on(providers, None).into_iter().find(|e| e.slug == slug).unwrap().description
        };
        let unconfigured = from_vars(wearlab_sim::providers(), |_| None);
        assert!(description(unconfigured.as_ref(), "oura").ends_with(DEMO_ONLY_NOTE));
        assert!(!description(unconfigured.as_ref(), "garmin").contains(DEMO_ONLY_NOTE));
        assert!(description(unconfigured.as_ref(), "fitbit").contains("turned off on 2026-11-02"));
        let configured = from_vars(wearlab_sim::providers(), |k| {
            k.starts_with("WEARLAB_PROVIDER_OURA_CLIENT_").then(|| "x".to_owned())
        });
        assert!(!description(configured.as_ref(), "oura").contains(DEMO_ONLY_NOTE));
    }
}
