//! Users and what the users endpoints take and answer.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::patch::Patch;

/// `DateTime<Utc>` exactly as chrono's own serde writes and reads it, for `#[serde(with)]` on
/// the times every user answer and stored user carry; both directions are cheaper than
/// chrono's (see each function).
pub mod rfc3339 {
    use chrono::{DateTime, NaiveDate, NaiveTime, SecondsFormat, Utc};
    use serde::{Deserializer, Serializer, de};

    /// RFC 3339 with `Z` and as many fractional digits as needed, written in one piece:
    /// `to_rfc3339_opts(AutoSi, true)` is the function chrono's `Serialize` calls, through
    /// `collect_str`, whose JSON escaping runs once per character written.
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::AutoSi, true))
    }

    /// What chrono's `Deserialize` accepts, with the same result; the form this API writes
    /// (`YYYY-MM-DDTHH:MM:SS[.fraction]Z`) is read directly, anything else by chrono's parser.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        d.deserialize_str(Visitor)
    }

    struct Visitor;

    impl de::Visitor<'_> for Visitor {
        type Value = DateTime<Utc>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an RFC 3339 formatted date and time string")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<DateTime<Utc>, E> {
            match canonical(v) {
                Some(t) => Ok(t),
                None => v
                    .parse::<DateTime<chrono::FixedOffset>>()
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(E::custom),
            }
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS[.1 to 9 digits]Z` naming a valid time (no leap second); `None` for
    /// anything else.
    pub(crate) fn canonical(s: &str) -> Option<DateTime<Utc>> {
        let b = s.as_bytes();
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
            return None;
        }
        let number = |digits: &[u8]| {
            digits.iter().try_fold(0u32, |n, &c| c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0')))
        };
        let nanos = match b[19..].strip_suffix(b"Z")? {
            [] => 0,
            [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => {
                number(digits)? * 10u32.pow(9 - digits.len() as u32)
            }
            _ => return None,
        };
        let second = number(&b[17..19])?;
        if second >= 60 {
            return None;
        }
        let date = NaiveDate::from_ymd_opt(number(&b[0..4])? as i32, number(&b[5..7])?, number(&b[8..10])?)?;
        let time = NaiveTime::from_hms_nano_opt(number(&b[11..13])?, number(&b[14..16])?, second, nanos)?;
        Some(date.and_time(time).and_utc())
    }
}

/// A provider as it is named on a user or an event: `{name, slug, logo}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ProviderRef {
    pub name: String,
    pub slug: String,
    #[schema(required = true)]
    pub logo: Option<String>,
}

/// A connected provider of a user.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ConnectedSource {
    pub provider: ProviderRef,
    #[serde(with = "rfc3339")]
    pub created_on: DateTime<Utc>,
    /// Deprecated: the same content as `provider`.
    pub source: ProviderRef,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct FallbackTimeZone {
    /// IANA time zone identifier, e.g. `Europe/London`.
    pub id: String,
    pub source_slug: String,
    #[serde(with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct FallbackBirthDate {
    pub value: NaiveDate,
    pub source_slug: String,
    #[serde(with = "rfc3339")]
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct User {
    pub user_id: Uuid,
    pub team_id: Uuid,
    pub client_user_id: String,
    #[serde(with = "rfc3339")]
    pub created_on: DateTime<Utc>,
    pub connected_sources: Vec<ConnectedSource>,
    /// Always present in responses, `null` when not set.
    #[schema(required = true)]
    pub fallback_time_zone: Option<FallbackTimeZone>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_birth_date: Option<FallbackBirthDate>,
    #[schema(required = true)]
    pub ingestion_start: Option<NaiveDate>,
    #[schema(required = true)]
    pub ingestion_end: Option<NaiveDate>,
}

/// POST /v2/user body.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct CreateUserBody {
    pub client_user_id: String,
    #[serde(default)]
    pub fallback_time_zone: Option<String>,
    /// For maximum heart rate when a provider gives no age: from 1900-01-01 up to today.
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
    /// From 1900-01-01 up to today.
    #[serde(default)]
    #[schema(value_type = Option<NaiveDate>)]
    pub fallback_birth_date: Patch<NaiveDate>,
    #[serde(default)]
    #[schema(value_type = Option<NaiveDate>)]
    pub ingestion_start: Patch<NaiveDate>,
    #[serde(default)]
    #[schema(value_type = Option<NaiveDate>)]
    pub ingestion_end: Patch<NaiveDate>,
    /// A new id for the user; `null` (or omitted) keeps the current one.
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
            rfc3339::serialize(&t, &mut ours).unwrap();
            let text = String::from_utf8(ours.into_inner()).unwrap();
            assert_eq!(text, serde_json::to_string(&t).unwrap());
            let mut back = serde_json::Deserializer::from_str(&text);
            assert_eq!(rfc3339::deserialize(&mut back).unwrap(), t);
        }
    }

    #[test]
    fn times_are_read_as_chrono_reads_them() {
        let texts = [
            "2026-03-01T09:00:00Z",
            "2026-03-01T09:00:00.5Z",
            "2026-03-01T09:00:00.123456Z",
            "2026-03-01T09:00:00.123456789Z",
            "2026-03-01T09:00:00.1234567890Z",
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999999Z",
            "2016-12-31T23:59:60Z",
            "2016-12-31T23:59:60.5Z",
            "2024-02-29T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-03-01T24:00:00Z",
            "2026-03-01T09:60:00Z",
            "2026-03-01T09:00:00.Z",
            "2026-03-01T09:00:00z",
            "2026-03-01t09:00:00Z",
            "2026-03-01 09:00:00Z",
            "2026-03-01T09:00:00+01:00",
            "2026-03-01T09:00:00-00:00",
            "+12026-03-01T09:00:00Z",
            "2026-3-01T09:00:00Z",
            "2026-03-01T09:00:0aZ",
            "2026-03-01T09:00:00",
            "",
            "x",
        ];
        for text in texts {
            let json = serde_json::to_string(text).unwrap();
            let chrono: Result<DateTime<Utc>, _> = serde_json::from_str(&json);
            let ours = rfc3339::deserialize(&mut serde_json::Deserializer::from_str(&json));
            match (chrono, ours) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text}"),
                (a, b) => panic!("{text}: chrono {a:?}, ours {b:?}"),
            }
        }
        assert!(rfc3339::canonical("2026-03-01T09:00:00.25Z").is_some());
        assert!(rfc3339::canonical("2016-12-31T23:59:60Z").is_none(), "leap seconds go to chrono");
        let wrong_type: Result<DateTime<Utc>, _> =
            rfc3339::deserialize(&mut serde_json::Deserializer::from_str("1"));
        let chrono_wrong_type: Result<DateTime<Utc>, _> = serde_json::from_str("1");
        assert_eq!(wrong_type.unwrap_err().to_string(), chrono_wrong_type.unwrap_err().to_string());
    }
}
