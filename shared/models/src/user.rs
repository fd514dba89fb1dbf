//! Users and what the users endpoints take and answer.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde::{Deserialize, Serialize, Serializer};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::patch::Patch;

/// A time as chrono's own `Serialize` writes it (RFC 3339, `Z`, as many fractional digits as
/// needed: `to_rfc3339_opts(AutoSi, true)` is the same function), but formatted in one piece:
/// chrono's goes through `collect_str`, whose JSON escaping runs once per character written.
/// The users' answers carry these on every read.
fn rfc3339<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::AutoSi, true))
}

/// A provider as it is named on a user or an event: `{name, slug, logo}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ProviderRef {
    pub name: String,
    pub slug: String,
    pub logo: Option<String>,
}

/// A connected provider of a user.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ConnectedSource {
    pub provider: ProviderRef,
    #[serde(serialize_with = "rfc3339")]
    pub created_on: DateTime<Utc>,
    /// Deprecated: the same content as `provider`.
    pub source: ProviderRef,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct FallbackTimeZone {
    /// IANA time zone identifier, e.g. `Europe/London`.
    pub id: String,
    pub source_slug: String,
    #[serde(serialize_with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct FallbackBirthDate {
    pub value: NaiveDate,
    pub source_slug: String,
    #[serde(serialize_with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct User {
    pub user_id: Uuid,
    pub team_id: Uuid,
    pub client_user_id: String,
    #[serde(serialize_with = "rfc3339")]
    pub created_on: DateTime<Utc>,
    pub connected_sources: Vec<ConnectedSource>,
    /// Always present in responses, `null` when not set.
    pub fallback_time_zone: Option<FallbackTimeZone>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_birth_date: Option<FallbackBirthDate>,
    pub ingestion_start: Option<NaiveDate>,
    pub ingestion_end: Option<NaiveDate>,
}

/// POST /v2/user body.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct CreateUserBody {
    pub client_user_id: String,
    #[serde(default)]
    pub fallback_time_zone: Option<String>,
    #[serde(default)]
    pub fallback_birth_date: Option<NaiveDate>,
    #[serde(default)]
    pub ingestion_start: Option<NaiveDate>,
    #[serde(default)]
    pub ingestion_end: Option<NaiveDate>,
}

/// PATCH /v2/user/{user_id} body: omitted keeps, `null` clears.
#[derive(Debug, Clone, Deserialize, Default, PartialEq, ToSchema)]
pub struct PatchUserBody {
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub fallback_time_zone: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<NaiveDate>)]
    pub fallback_birth_date: Patch<NaiveDate>,
    #[serde(default)]
    #[schema(value_type = Option<NaiveDate>)]
    pub ingestion_start: Patch<NaiveDate>,
    #[serde(default)]
    #[schema(value_type = Option<NaiveDate>)]
    pub ingestion_end: Patch<NaiveDate>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub client_user_id: Patch<String>,
}

/// GET /v2/user answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct UserPage {
    pub users: Vec<User>,
    pub total: u64,
    pub offset: u64,
    pub limit: u64,
}

/// POST /v2/user/refresh/{user_id} answer. Entries are `provider-slug/resource`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct RefreshResult {
    pub success: bool,
    pub user_id: Uuid,
    pub refreshed_sources: Vec<String>,
    pub in_progress_sources: Vec<String>,
    pub failed_sources: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_distinguishes_omitted_from_null() {
        let b: PatchUserBody =
            serde_json::from_str(r#"{"fallback_time_zone": null, "ingestion_end": "2024-01-02"}"#).unwrap();
        assert_eq!(b.fallback_time_zone, Patch::Clear);
        assert_eq!(b.ingestion_start, Patch::Keep);
        assert_eq!(b.ingestion_end, Patch::Set(NaiveDate::from_ymd_opt(2024, 1, 2).unwrap()));
    }

    #[test]
    fn user_always_carries_fallback_time_zone_key() {
        let u = User {
            user_id: Uuid::nil(),
            team_id: Uuid::nil(),
            client_user_id: "c".into(),
            created_on: DateTime::UNIX_EPOCH,
            connected_sources: vec![],
            fallback_time_zone: None,
            fallback_birth_date: None,
            ingestion_start: None,
            ingestion_end: None,
        };
        let v = serde_json::to_value(&u).unwrap();
        assert!(v.as_object().unwrap().contains_key("fallback_time_zone"));
        assert!(!v.as_object().unwrap().contains_key("fallback_birth_date"));
    }

    #[test]
    fn times_are_written_as_chrono_writes_them() {
        use chrono::TimeZone;
        let mut times = vec![DateTime::UNIX_EPOCH, Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap()];
        for nanos in [1, 120, 1_000, 123_000, 1_000_000, 500_000_000, 999_999_999, 1_500_000_000] {
            // The last is a leap second.
            let t =
                chrono::NaiveDate::from_ymd_opt(2016, 12, 31).unwrap().and_hms_nano_opt(23, 59, 59, nanos);
            times.push(t.unwrap().and_utc());
        }
        for year in [1, 999, 10_000, -1] {
            times
                .push(Utc.with_ymd_and_hms(year, 1, 2, 3, 4, 5).unwrap() + chrono::Duration::microseconds(7));
        }
        for t in times {
            let mut ours = serde_json::Serializer::new(Vec::new());
            rfc3339(&t, &mut ours).unwrap();
            assert_eq!(String::from_utf8(ours.into_inner()).unwrap(), serde_json::to_string(&t).unwrap());
        }
    }
}
