//! The provider catalog: reference data kept in `infra/data/providers.json` (see the README
//! there for where each fact came from), compiled into the binary.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use wearlab_models::{AuthType, ConnectedSource, ProviderAvailability, ProviderEntry, ProviderRef, Resource};

use crate::ports::providers::Providers;

const PROVIDERS_JSON: &str = include_str!("../../../../infra/data/providers.json");

/// Appended to the description of a provider that has a real adapter in this build but no OAuth
/// application on this deployment, which does not link simulated providers.
pub const DEMO_ONLY_NOTE: &str = " Demo only on this deployment: no OAuth application is configured for it.";
/// Appended to the description of a provider Wearlab has no adapter for, on a deployment that
/// does not link simulated providers.
pub const NO_ADAPTER_NOTE: &str =
    " Demo only on this deployment: Wearlab does not connect to this provider's own API yet.";
/// Appended to the description of a provider whose links this deployment simulates.
pub const SIMULATED_NOTE: &str = " Simulated on this deployment: a link gives synthetic data.";

/// Providers that can be connected with a demo account (POST /v2/link/connect/demo).
pub const DEMO_PROVIDERS: [&str; 4] = ["apple_health_kit", "fitbit", "freestyle_libre", "oura"];

/// One provider as the reference data describes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ProviderInfo {
    pub slug: String,
    pub name: String,
    pub description: String,
    pub logo: Option<String>,
    pub auth_type: Option<AuthType>,
    pub supported_resources: Vec<Resource>,
    /// Regions the provider serves (password providers with regional services); `None` when
    /// the provider has no regions, in which case a given region is ignored.
    #[serde(default)]
    pub regions: Option<Vec<String>>,
}

impl ProviderInfo {
    /// The catalog entry as `providers` offer it on this deployment: the resources a real link
    /// fills ([`Catalog::resources_on`]), how it can be linked, and a description that says so
    /// when the provider is simulated or demo only here.
    pub fn entry_on(&self, providers: &dyn Providers) -> ProviderEntry {
        let availability = self.availability_on(providers);
        let mut description = self.description.clone();
        let has_adapter = providers.resources(&self.slug).is_some();
        match availability {
            ProviderAvailability::Live => {}
            ProviderAvailability::DemoOnly if has_adapter => description.push_str(DEMO_ONLY_NOTE),
            ProviderAvailability::DemoOnly => description.push_str(NO_ADAPTER_NOTE),
            _ => description.push_str(SIMULATED_NOTE),
        }
        ProviderEntry {
            name: self.name.clone(),
            slug: self.slug.clone(),
            description,
            logo: self.logo.clone(),
            auth_type: self.auth_type.clone(),
            supported_resources: catalog().resources_on(providers, &self.slug),
            availability,
        }
    }

    /// How the provider can be linked on this deployment: an `sdk` provider is always `live`
    /// (its data comes from the user's phone through the mobile SDKs' routes, not from a
    /// provider's API or the simulator; its demo connections stay synthetic like any other's);
    /// every other provider as `providers` say.
    pub fn availability_on(&self, providers: &dyn Providers) -> ProviderAvailability {
        if self.is_sdk() { ProviderAvailability::Live } else { providers.availability(&self.slug) }
    }

    pub fn reference(&self) -> ProviderRef {
        ProviderRef { name: self.name.clone(), slug: self.slug.clone(), logo: self.logo.clone() }
    }

    pub fn is(&self, auth: &AuthType) -> bool {
        self.auth_type.as_ref() == Some(auth)
    }

    /// The providers whose data the mobile SDKs upload from the phone (`auth_type` `sdk`).
    pub fn is_sdk(&self) -> bool {
        self.is(&AuthType::Sdk)
    }

    /// OAuth providers, whether on the platform's app or only on the team's own.
    pub fn is_oauth(&self) -> bool {
        self.is(&AuthType::Oauth) || self.is(&AuthType::TeamOauth)
    }

    /// Resources whose data can be fetched (everything but the `connection` marker).
    pub fn data_resources(&self) -> impl Iterator<Item = &Resource> {
        self.supported_resources.iter().filter(|r| **r != Resource::Connection)
    }
}

pub struct Catalog {
    providers: Vec<ProviderInfo>,
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(|| Catalog {
    providers: serde_json::from_str(PROVIDERS_JSON)
        .expect("infra/data/providers.json is a list of providers"),
});

/// The compiled-in catalog.
pub fn catalog() -> &'static Catalog {
    &CATALOG
}

impl Catalog {
    pub fn get(&self, slug: &str) -> Option<&ProviderInfo> {
        self.providers.iter().find(|p| p.slug == slug)
    }

    pub fn all(&self) -> &[ProviderInfo] {
        &self.providers
    }

    /// The `sdk` provider `slug` (see [`ProviderInfo::is_sdk`]), else the refusal (400) naming
    /// the ones there are.
    pub fn sdk(&self, slug: &str) -> Result<&ProviderInfo, crate::common::error::DomainError> {
        self.get(slug).filter(|p| p.is_sdk()).ok_or_else(|| {
            crate::common::error::DomainError::Rejected(format!(
                "{slug} is not a provider of the mobile SDKs; the providers are: {}.",
                self.sdk_slugs().join(", ")
            ))
        })
    }

    /// The slugs of the `sdk` providers, in catalog order.
    pub fn sdk_slugs(&self) -> Vec<&str> {
        self.list(Some("sdk")).iter().map(|p| p.slug.as_str()).collect()
    }

    /// Every provider, or those whose auth type is `source_type`.
    pub fn list(&self, source_type: Option<&str>) -> Vec<&ProviderInfo> {
        self.providers
            .iter()
            .filter(|p| match source_type {
                None | Some("") => true,
                Some(t) => p.auth_type.as_ref().is_some_and(|a| a.as_str() == t),
            })
            .collect()
    }

    /// GET /v2/providers: [`Catalog::list`] as this deployment offers it
    /// ([`ProviderInfo::entry_on`]).
    pub fn list_on(&self, providers: &dyn Providers, source_type: Option<&str>) -> Vec<ProviderEntry> {
        self.list(source_type).into_iter().map(|p| p.entry_on(providers)).collect()
    }

    /// The resources `slug` offers on a deployment: where the build has a real adapter for it,
    /// exactly those the adapter fills (for its demo connections too, so that no listed
    /// resource is one a real link leaves empty), else the reference data's. The `connection`
    /// marker stays where the reference data has it.
    pub fn resources_on(&self, providers: &dyn Providers, slug: &str) -> Vec<Resource> {
        let Some(info) = self.get(slug) else { return Vec::new() };
        let Some(filled) = providers.resources(slug) else { return info.supported_resources.clone() };
        let mut out = filled.to_vec();
        if info.supported_resources.contains(&Resource::Connection) {
            out.push(Resource::Connection);
        }
        out
    }

    /// [`Catalog::resources_on`] without the `connection` marker: what can be fetched.
    pub fn data_resources_on(&self, providers: &dyn Providers, slug: &str) -> Vec<Resource> {
        let mut out = self.resources_on(providers, slug);
        out.retain(|r| *r != Resource::Connection);
        out
    }

    /// How a provider is named on users and events; a slug no longer in the catalog keeps its
    /// slug as name.
    pub fn reference(&self, slug: &str) -> ProviderRef {
        self.get(slug).map(ProviderInfo::reference).unwrap_or_else(|| ProviderRef {
            name: slug.to_owned(),
            slug: slug.to_owned(),
            logo: None,
        })
    }

    pub fn connected_source(&self, slug: &str, created_on: DateTime<Utc>) -> ConnectedSource {
        let provider = self.reference(slug);
        ConnectedSource { source: provider.clone(), provider, created_on }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWORD: [&str; 11] = [
        "whoop",
        "renpho",
        "peloton",
        "zwift",
        "eight_sleep",
        "beurer_api",
        "dexcom",
        "my_fitness_pal",
        "kardia",
        "abbott_libreview",
        "tandem_source",
    ];
    const OAUTH: [&str; 17] = [
        "oura",
        "fitbit",
        "garmin",
        "strava",
        "wahoo",
        "ihealth",
        "withings",
        "google_fit",
        "dexcom_v3",
        "polar",
        "cronometer",
        "omron",
        "whoop_v2",
        "my_fitness_pal_v2",
        "ultrahuman",
        "runkeeper",
        "hammerhead",
    ];

    #[test]
    fn catalog_holds_the_documented_providers() {
        let c = catalog();
        assert!((35..=60).contains(&c.all().len()));
        for slug in PASSWORD {
            assert!(c.get(slug).unwrap().is(&AuthType::Password), "{slug}");
        }
        for slug in OAUTH {
            assert!(c.get(slug).unwrap().is_oauth(), "{slug}");
        }
        for slug in ["strava", "dexcom_v3", "whoop_v2", "my_fitness_pal_v2", "map_my_fitness"] {
            assert!(c.get(slug).unwrap().is(&AuthType::TeamOauth), "{slug}");
        }
        assert!(c.get("freestyle_libre").unwrap().is(&AuthType::Email));
        for slug in ["apple_health_kit", "health_connect", "samsung_health"] {
            assert!(c.get(slug).unwrap().is(&AuthType::Sdk), "{slug}");
        }
        for slug in DEMO_PROVIDERS {
            assert!(c.get(slug).is_some(), "{slug}");
        }
    }

    #[test]
    fn catalog_values_are_documented_ones() {
        let mut slugs = std::collections::HashSet::new();
        for p in catalog().all() {
            assert!(slugs.insert(p.slug.clone()), "duplicate slug {}", p.slug);
            assert!(!matches!(p.auth_type, Some(AuthType::Other(_)) | None), "{}", p.slug);
            assert!(p.supported_resources.iter().all(|r| !matches!(r, Resource::Other(_))), "{}", p.slug);
            assert!(p.logo.as_deref().is_some_and(|l| l.starts_with("https://")), "{}", p.slug);
            for r in p.regions.iter().flatten() {
                assert!(wearlab_models::Region::known(r).is_some(), "{}: {r}", p.slug);
            }
        }
    }

    #[test]
    fn the_eight_sdk_providers() {
        let sdk: Vec<&str> = catalog().list(Some("sdk")).iter().map(|p| p.slug.as_str()).collect();
        assert_eq!(sdk.len(), 8, "{sdk:?}");
        assert!(sdk.iter().all(|slug| catalog().sdk(slug).is_ok_and(ProviderInfo::is_sdk)));
        let refused = catalog().sdk("oura").unwrap_err().to_string();
        assert!(refused.contains("apple_health_kit") && refused.contains("freestyle_libre_ble"), "{refused}");
    }

    #[test]
    fn filter_by_source_type() {
        assert_eq!(catalog().list(Some("password")).len(), 11);
        assert_eq!(catalog().list(None).len(), catalog().all().len());
        assert!(catalog().list(Some("carrier_pigeon")).is_empty());
    }
}
