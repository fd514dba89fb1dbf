//! The provider catalog: reference data kept in `infra/data/providers.json` (see the README
//! there for where each fact came from), compiled into the binary.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use wearlab_models::{AuthType, ConnectedSource, ProviderAvailability, ProviderEntry, ProviderRef, Resource};

use crate::ports::providers::Providers;

pub use super::provider_marks::mark_path;

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
    /// The widget's group of the provider.
    pub category: Category,
    /// Other names a user may search for it by ("Apple Watch" for Apple HealthKit, "Karoo" for
    /// Hammerhead): the one place they are kept.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The vendor's colour (`RRGGBB`): of the vendored mark, or of the monogram where none is
    /// shipped.
    pub color: String,
    /// The vendored mark (`infra/data/marks/<mark>.svg`), when one can be shipped.
    #[serde(default)]
    pub mark: Option<String>,
    /// A service its maker turned off: the provider that replaces it (Fitbit's Web API and
    /// Google Fit: Google Health). The widget says so instead of offering a link.
    #[serde(default)]
    pub successor: Option<String>,
}

/// What a provider is, as the link widget groups them (in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Rings, watches and other devices worn or slept on, and bike computers.
    Devices,
    /// Training and nutrition apps.
    Fitness,
    /// Glucose meters, sensors and pumps.
    Glucose,
    /// Scales, blood pressure monitors, ECG.
    Body,
    /// The phone's health stores, connected by the team's app through the mobile SDKs.
    Phone,
}

impl Category {
    pub const ORDER: [Category; 5] =
        [Category::Devices, Category::Fitness, Category::Glucose, Category::Body, Category::Phone];

    /// A stable name (catalogue keys, HTML ids).
    pub fn name(self) -> &'static str {
        match self {
            Category::Devices => "devices",
            Category::Fitness => "fitness",
            Category::Glucose => "glucose",
            Category::Body => "body",
            Category::Phone => "phone",
        }
    }
}

/// The default order of the widget, most used first: Wearlab's editorial choice (widely owned
/// wearables and the phone's health stores first, then popular training, nutrition and
/// diabetes services, then niche devices), not a measurement. A team pins its own order on top
/// (`provider_order` of its link settings). Each family of versioned twins is ranked by its
/// best-ranked member.
pub const POPULARITY: [&str; 41] = [
    "apple_health_kit",
    "garmin",
    "google_health",
    "oura",
    "samsung_health",
    "health_connect",
    "whoop_v2",
    "whoop",
    "fitbit",
    "strava",
    "polar",
    "withings",
    "dexcom_v3",
    "dexcom",
    "freestyle_libre",
    "abbott_libreview",
    "my_fitness_pal_v2",
    "my_fitness_pal",
    "peloton",
    "coros",
    "suunto",
    "ultrahuman",
    "omron",
    "zwift",
    "wahoo",
    "eight_sleep",
    "google_fit",
    "runkeeper",
    "cronometer",
    "map_my_fitness",
    "renpho",
    "hammerhead",
    "ihealth",
    "kardia",
    "beurer_api",
    "tandem_source",
    "omron_ble",
    "beurer_ble",
    "freestyle_libre_ble",
    "accuchek_ble",
    "contour_ble",
];

/// Versioned twins and other entries a user sees as one thing, the preferred variant first:
/// the widget shows the first one it can really link.
pub const TWINS: [&[&str]; 6] = [
    &["whoop_v2", "whoop"],
    &["dexcom_v3", "dexcom"],
    &["my_fitness_pal_v2", "my_fitness_pal"],
    &["omron", "omron_ble"],
    &["beurer_api", "beurer_ble"],
    &["freestyle_libre", "freestyle_libre_ble"],
];

/// Text as search compares it: lower case, accents dropped, every run of other characters one
/// space ("Ōura  Ring" and "oura-ring" are both "oura ring").
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().flat_map(char::to_lowercase) {
        let c = unaccent(c);
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.ends_with(' ') && !out.is_empty() {
            out.push(' ');
        }
    }
    out.trim_end().to_owned()
}

/// The base letter of a lower-case Latin letter with a diacritic (the letters of the pages'
/// languages and a few more); any other character as it is.
fn unaccent(c: char) -> char {
    const FROM: &str = "àáâãäåāăąçćčďèéêëēėęěìíîïīįñńňòóôõöøōőùúûüūůűųýÿźżžß";
    const TO: &str = "aaaaaaaaacccdeeeeeeeeiiiiiinnnoooooooouuuuuuuuyyzzzs";
    FROM.chars().position(|f| f == c).and_then(|i| TO.chars().nth(i)).unwrap_or(c)
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

    /// The folded name and aliases search looks in ([`fold`]).
    pub fn search_text(&self) -> String {
        let mut all = self.name.clone();
        for a in &self.aliases {
            all.push(' ');
            all.push_str(a);
        }
        fold(&all)
    }

    /// Whether a search for `query` finds the provider: every word of the folded query is in its
    /// folded name or aliases. An empty query finds everything.
    pub fn matches(&self, query: &str) -> bool {
        let haystack = self.search_text();
        fold(query).split(' ').all(|word| haystack.contains(word))
    }

    /// Its place in [`POPULARITY`] (unlisted last).
    pub fn popularity(&self) -> usize {
        POPULARITY.iter().position(|s| *s == self.slug).unwrap_or(POPULARITY.len())
    }

    /// The entries a user sees as this one thing, preferred first ([`TWINS`]); itself alone
    /// when it has no twin.
    pub fn family(&self) -> Vec<&'static str> {
        TWINS.iter().find(|f| f.contains(&self.slug.as_str())).map_or_else(
            || catalog().get(&self.slug).map(|p| vec![p.slug.as_str()]).unwrap_or_default(),
            |f| f.to_vec(),
        )
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
            // Served by Wearlab itself (link-api's marks route), never by a third-party host.
            assert_eq!(p.logo.as_deref(), Some(mark_path(&p.slug).as_str()), "{}", p.slug);
            assert!(p.color.len() == 6 && p.color.bytes().all(|b| b.is_ascii_hexdigit()), "{}", p.slug);
            if let Some(s) = &p.successor {
                assert!(catalog().get(s).is_some_and(|s| s.successor.is_none()), "{}", p.slug);
            }
            for r in p.regions.iter().flatten() {
                assert!(wearlab_models::Region::known(r).is_some(), "{}: {r}", p.slug);
            }
        }
    }

    #[test]
    fn every_provider_is_ranked_once_and_twins_are_known() {
        let mut ranked: Vec<&str> = POPULARITY.to_vec();
        ranked.sort_unstable();
        let mut slugs: Vec<&str> = catalog().all().iter().map(|p| p.slug.as_str()).collect();
        slugs.sort_unstable();
        assert_eq!(ranked, slugs);
        for family in TWINS {
            for slug in family {
                let p = catalog().get(slug).unwrap();
                assert_eq!(p.family(), family.to_vec());
                assert_eq!(p.category, catalog().get(family[0]).unwrap().category, "{slug}");
            }
        }
        assert_eq!(catalog().get("oura").unwrap().family(), vec!["oura"]);
    }

    #[test]
    fn search_finds_names_and_aliases_whatever_the_case_and_accents() {
        let found = |q: &str| -> Vec<&str> {
            catalog().all().iter().filter(|p| p.matches(q)).map(|p| p.slug.as_str()).collect()
        };
        assert_eq!(found("apple watch"), vec!["apple_health_kit"]);
        assert_eq!(found("KAROO"), vec!["hammerhead"]);
        assert_eq!(found("galaxy  watch"), vec!["samsung_health"]);
        assert!(found("fitbit").contains(&"google_health") && found("fitbit").contains(&"fitbit"));
        assert_eq!(found("ōura"), vec!["oura"]);
        assert_eq!(found("Garmín"), vec!["garmin"]);
        assert_eq!(found("").len(), catalog().all().len());
        assert!(found("carrier pigeon").is_empty());
        assert_eq!(fold("  Accu-Chek (Bluetooth) "), "accu chek bluetooth");
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
