//! The provider catalog, a user's connections and the team's OAuth apps, as the API speaks them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{AuthType, open_enum};

open_enum!(
    /// A data resource a provider can supply.
    Resource {
        Profile => "profile",
        Activity => "activity",
        Sleep => "sleep",
        Body => "body",
        Workouts => "workouts",
        WorkoutStream => "workout_stream",
        Connection => "connection",
        Order => "order",
        Result => "result",
        MatchReview => "match_review",
        Appointment => "appointment",
        Glucose => "glucose",
        Heartrate => "heartrate",
        Hrv => "hrv",
        Ige => "ige",
        Igg => "igg",
        BloodOxygen => "blood_oxygen",
        BloodPressure => "blood_pressure",
        Cholesterol => "cholesterol",
        Device => "device",
        DeviceLegacy => "device_legacy",
        Weight => "weight",
        Fat => "fat",
        BodyTemperature => "body_temperature",
        BodyTemperatureDelta => "body_temperature_delta",
        Meal => "meal",
        Water => "water",
        Caffeine => "caffeine",
        MindfulnessMinutes => "mindfulness_minutes",
        Steps => "steps",
        CaloriesActive => "calories_active",
        Distance => "distance",
        FloorsClimbed => "floors_climbed",
        RespiratoryRate => "respiratory_rate",
        Vo2Max => "vo2_max",
        CaloriesBasal => "calories_basal",
        StressLevel => "stress_level",
        MenstrualCycle => "menstrual_cycle",
        SleepCycle => "sleep_cycle",
        Electrocardiogram => "electrocardiogram",
        ElectrocardiogramVoltage => "electrocardiogram_voltage",
        AfibBurden => "afib_burden",
        HeartRateAlert => "heart_rate_alert",
        StandHour => "stand_hour",
        StandDuration => "stand_duration",
        SleepApneaAlert => "sleep_apnea_alert",
        SleepBreathingDisturbance => "sleep_breathing_disturbance",
        WheelchairPush => "wheelchair_push",
        ForcedExpiratoryVolume1 => "forced_expiratory_volume_1",
        ForcedVitalCapacity => "forced_vital_capacity",
        PeakExpiratoryFlowRate => "peak_expiratory_flow_rate",
        InhalerUsage => "inhaler_usage",
        Fall => "fall",
        UvExposure => "uv_exposure",
        DaylightExposure => "daylight_exposure",
        Handwashing => "handwashing",
        BasalBodyTemperature => "basal_body_temperature",
        HeartRateRecoveryOneMinute => "heart_rate_recovery_one_minute",
        BodyMassIndex => "body_mass_index",
        LeanBodyMass => "lean_body_mass",
        WaistCircumference => "waist_circumference",
        WorkoutDistance => "workout_distance",
        WorkoutSwimmingStroke => "workout_swimming_stroke",
        WorkoutDuration => "workout_duration",
        InsulinInjection => "insulin_injection",
        Carbohydrates => "carbohydrates",
        Note => "note",
        SleepStream => "sleep_stream",
        Hypnogram => "hypnogram",
    }
);

/// Resources sort by their wire names (a map keyed by resource lists them as a map keyed by
/// the names did).
impl Ord for Resource {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Resource {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

open_enum!(
    /// State of a user's connection to a provider.
    ConnectionStatus {
        Connected => "connected",
        Error => "error",
        Paused => "paused",
    }
);

open_enum!(
    /// How a provider can be linked on this deployment (our addition to the catalog entry).
    /// `live`: Wearlab speaks the provider's own API here, so a link gives the user's real data.
    /// `simulated`: this deployment lets simulated providers be linked (a local stack, a demo
    /// or staging deployment): a link succeeds and its data is synthetic. `demo_only`: the
    /// provider cannot be linked for real here; only a demo connection
    /// (`POST /v2/link/connect/demo`) is offered.
    ProviderAvailability {
        Live => "live",
        Simulated => "simulated",
        DemoOnly => "demo_only",
    }
);

open_enum!(
    /// Whether a resource of a connection can be read.
    AvailabilityStatus {
        Available => "available",
        Unavailable => "unavailable",
    }
);

/// One provider of the catalog (GET /v2/providers).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ProviderEntry {
    pub name: String,
    pub slug: String,
    pub description: String,
    /// URL of the provider's logo.
    #[schema(required = true)]
    pub logo: Option<String>,
    #[schema(required = true)]
    pub auth_type: Option<AuthType>,
    pub supported_resources: Vec<Resource>,
    /// How the provider can be linked on this deployment (our addition; see
    /// `ProviderAvailability`).
    pub availability: ProviderAvailability,
}

/// A catalog entry with the URL that starts the provider's OAuth consent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct OauthProviderEntry {
    pub name: String,
    pub slug: String,
    pub description: String,
    #[schema(required = true)]
    pub logo: Option<String>,
    #[schema(required = true)]
    pub auth_type: Option<AuthType>,
    pub supported_resources: Vec<Resource>,
    /// Send the end user's browser here; the provider's consent ends on the callback, which
    /// redirects to the link token's `redirect_url`.
    pub oauth_url: String,
}

/// What the provider reported when a connection broke.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ConnectionErrorDetails {
    pub error_type: String,
    pub error_message: String,
    pub created_on: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ScopeSet {
    pub required: Vec<String>,
    pub optional: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ScopeRequirements {
    pub user_granted: ScopeSet,
    pub user_denied: ScopeSet,
}

/// Whether one resource of a connection can be read, and the OAuth scopes behind it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ResourceAvailability {
    pub status: AvailabilityStatus,
    #[schema(required = true)]
    pub scope_requirements: Option<ScopeRequirements>,
}

/// One connection of a user (GET /v2/user/providers/{user_id}).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct UserConnection {
    pub name: String,
    pub slug: String,
    #[schema(required = true)]
    pub logo: Option<String>,
    /// `YYYY-MM-DDTHH:MM:SS+00:00`, as the mobile SDKs read times.
    #[serde(serialize_with = "crate::phone_sync::serialize_sdk_time")]
    pub created_on: DateTime<Utc>,
    pub status: ConnectionStatus,
    /// The user's id at the provider.
    #[schema(required = true)]
    pub external_user_id: Option<String>,
    #[schema(required = true)]
    pub error_details: Option<ConnectionErrorDetails>,
    /// Per resource (key: resource name).
    pub resource_availability: BTreeMap<String, ResourceAvailability>,
    /// The connection's data is synthetic (our addition): a demo connection, or a link to a
    /// provider this deployment simulates.
    pub demo: bool,
}

/// GET /v2/user/providers/{user_id} answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct UserConnections {
    pub providers: Vec<UserConnection>,
}

/// PUT /v2/team/oauth_app/{provider} body. The secret is stored encrypted and never returned.
#[derive(Clone, Deserialize, PartialEq, ToSchema)]
pub struct OauthAppBody {
    pub client_id: String,
    pub client_secret: String,
}

impl std::fmt::Debug for OauthAppBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OauthAppBody").field("client_id", &self.client_id).finish_non_exhaustive()
    }
}

/// The team's OAuth app for a provider, without its secret.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct OauthApp {
    pub provider: String,
    pub client_id: String,
    /// Always true: the secret is kept (encrypted) but never shown.
    pub client_secret_set: bool,
    pub created_on: DateTime<Utc>,
    pub updated_on: DateTime<Utc>,
}

/// The team's linking settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct LinkConfig {
    /// When true, a provider account already connected to a user of the team cannot be
    /// connected again (to that user or another): the link ends in `duplicate_connection`.
    pub reject_duplicate_connection: bool,
    /// Providers the link widget lists first, in this order (each within its group; a versioned
    /// twin pins its family). Empty: the widget's default order, most used first.
    #[serde(default)]
    pub provider_order: Vec<String>,
    /// Providers the link widget never offers, on top of a token's `filter_on_providers`.
    #[serde(default)]
    pub hidden_providers: Vec<String>,
}

/// PATCH /v2/team/link_config body. A field left out keeps its value.
#[derive(Debug, Clone, Deserialize, PartialEq, ToSchema)]
pub struct LinkConfigPatch {
    #[serde(default)]
    pub reject_duplicate_connection: Option<bool>,
    /// Provider slugs the widget lists first, in this order: known slugs, each at most once.
    #[serde(default)]
    pub provider_order: Option<Vec<String>>,
    /// Provider slugs the widget never offers: known slugs, each at most once.
    #[serde(default)]
    pub hidden_providers: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_auth_types_and_resources_still_serialize() {
        let e: ProviderEntry = serde_json::from_str(
            r#"{"name":"X","slug":"x","description":"d","logo":null,"auth_type":"telepathy",
                "supported_resources":["sleep","dreams"],"availability":"by_appointment"}"#,
        )
        .unwrap();
        assert_eq!(e.supported_resources[1], Resource::Other("dreams".into()));
        let back = serde_json::to_value(&e).unwrap();
        assert_eq!(back["auth_type"], "telepathy");
        assert_eq!(back["supported_resources"][1], "dreams");
        assert_eq!(back["availability"], "by_appointment");
    }

    #[test]
    fn a_resource_is_read_and_written_by_its_wire_name() {
        let r: Resource = serde_json::from_str(r#""sleep_cycle""#).unwrap();
        assert_eq!(r, Resource::SleepCycle);
        assert_eq!("sleep_cycle".parse::<Resource>(), Ok(Resource::SleepCycle));
        assert_eq!(serde_json::to_string(&Resource::BloodOxygen).unwrap(), r#""blood_oxygen""#);
        assert_eq!(Resource::Vo2Max.to_string(), "vo2_max");
        let mut sorted = [Resource::Workouts, Resource::Other("dreams".into()), Resource::Activity];
        sorted.sort();
        assert_eq!(
            sorted.iter().map(Resource::as_str).collect::<Vec<_>>(),
            ["activity", "dreams", "workouts"]
        );
    }

    #[test]
    fn oauth_app_body_debug_hides_the_secret() {
        let b = OauthAppBody { client_id: "id".into(), client_secret: "s3cr3t".into() };
        assert!(!format!("{b:?}").contains("s3cr3t"));
    }
}
