//! Parsed values. Each type has one constructor that enforces its rule, so a value of the type
//! is valid wherever it travels.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// The id of this UUID: the one constructor (every UUID is a valid id).
            pub const fn from_uuid(id: Uuid) -> Self {
                Self(id)
            }

            pub const fn as_uuid(self) -> Uuid {
                self.0
            }

            pub fn new_random() -> Self {
                Self::from_uuid(Uuid::new_v4())
            }

            pub fn parse(s: &str) -> Option<Self> {
                Uuid::parse_str(s).ok().map(Self::from_uuid)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

uuid_id!(
    /// A team (customer account).
    TeamId
);
uuid_id!(
    /// A user, issued by the service.
    UserId
);

/// Why a `client_user_id` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientUserIdError {
    Empty,
    TooLong,
    LooksLikeEmail,
    LooksLikePhoneNumber,
    ControlCharacter,
}

impl fmt::Display for ClientUserIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "client_user_id must not be empty",
            Self::TooLong => "client_user_id must be at most 256 characters",
            Self::LooksLikeEmail => "client_user_id must not be an email address",
            Self::LooksLikePhoneNumber => "client_user_id must not be a phone number",
            Self::ControlCharacter => "client_user_id must not contain control characters",
        })
    }
}

/// The team's own id for a user. Must not carry personal data: an email address or a phone
/// number is refused. Plain digit strings are allowed on purpose: numeric database ids are the
/// most common client ids, and a phone number is recognised by its `+` or its separators.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ClientUserId(String);

impl ClientUserId {
    pub const MAX_CHARS: usize = 256;

    pub fn parse(s: &str) -> Result<Self, ClientUserIdError> {
        if s.trim().is_empty() {
            return Err(ClientUserIdError::Empty);
        }
        if s.chars().count() > Self::MAX_CHARS {
            return Err(ClientUserIdError::TooLong);
        }
        if s.chars().any(char::is_control) {
            return Err(ClientUserIdError::ControlCharacter);
        }
        if looks_like_email(s) {
            return Err(ClientUserIdError::LooksLikeEmail);
        }
        if looks_like_phone_number(s) {
            return Err(ClientUserIdError::LooksLikePhoneNumber);
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as it may stand inside a storage key: `%` and `#` escaped, so that one id is
    /// never a prefix-match of another (`#` separates key parts).
    pub fn key_part(&self) -> String {
        self.0.replace('%', "%25").replace('#', "%23")
    }
}

impl<'de> Deserialize<'de> for ClientUserId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Stored values were validated when written; later rule changes must not hide them.
        Ok(Self(String::deserialize(d)?))
    }
}

impl fmt::Display for ClientUserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn looks_like_email(s: &str) -> bool {
    let s = s.trim();
    let Some((local, domain)) = s.rsplit_once('@') else { return false };
    !local.is_empty()
        && !local.contains(char::is_whitespace)
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains(char::is_whitespace)
}

fn looks_like_phone_number(s: &str) -> bool {
    let s = s.trim();
    let allowed = |c: char| c.is_ascii_digit() || " -().+/".contains(c);
    if !s.chars().all(allowed) {
        return false;
    }
    let digits = s.chars().filter(char::is_ascii_digit).count();
    let plus = s.starts_with('+') && s[1..].chars().all(|c| c != '+');
    let separated = s.chars().any(|c| " -().".contains(c));
    (7..=15).contains(&digits) && (plus || separated)
}

/// A valid IANA time zone identifier, with the zone's rules.
///
/// The rules come from the time zone database bundled into the binary as one blob (jiff's),
/// parsed on first use of a zone and then shared: the same answers on a laptop and on Lambda,
/// and no table of pointers for the loader to relocate at every cold start (chrono-tz's tables
/// cost about 28,000 relocations and 0.7 ms per init, docs/PERFORMANCE.md section 4).
#[derive(Debug, Clone)]
pub struct TimeZoneId(jiff::tz::TimeZone);

impl TimeZoneId {
    /// The zone named exactly `s` (case matters, as in the database: `Europe/London`).
    pub fn parse(s: &str) -> Option<Self> {
        let tz = jiff::tz::TimeZone::get(s).ok()?;
        (tz.iana_name() == Some(s)).then_some(Self(tz))
    }

    pub fn utc() -> Self {
        Self(jiff::tz::TimeZone::UTC)
    }

    pub fn name(&self) -> &str {
        self.0.iana_name().unwrap_or("UTC")
    }

    /// Seconds the zone's local time is ahead of UTC at `t`; 0 (UTC) outside the years -9999 to
    /// 9999, which the database does not reach (chrono's range is wider).
    pub fn offset_seconds_at(&self, t: chrono::DateTime<chrono::Utc>) -> i32 {
        match jiff::Timestamp::new(t.timestamp(), 0) {
            Ok(at) => self.0.to_offset(at).seconds(),
            Err(_) => 0,
        }
    }

    /// The calendar day in this zone at `t`.
    pub fn local_date(&self, t: chrono::DateTime<chrono::Utc>) -> chrono::NaiveDate {
        let local = t + chrono::Duration::seconds(i64::from(self.offset_seconds_at(t)));
        local.date_naive()
    }
}

impl PartialEq for TimeZoneId {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for TimeZoneId {}

/// Who a request's API key is: its team and which of the team's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    pub team_id: TeamId,
    pub key_id: KeyId,
}

/// An API key's id (12 lowercase hex digits, as issued): names a key in listings and audit
/// entries without revealing it. `Copy`, so the per-process key cache hands it out for free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId([u8; KEY_ID_LEN]);

const KEY_ID_LEN: usize = 12;

impl KeyId {
    pub fn parse(s: &str) -> Option<Self> {
        let ok = s.len() == KEY_ID_LEN && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| Self(s.as_bytes().try_into().expect("length checked")))
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("ASCII by construction")
    }
}

impl std::fmt::Display for KeyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_user_id_rules() {
        assert!(ClientUserId::parse("user-42").is_ok());
        assert!(ClientUserId::parse("1234567890").is_ok(), "numeric ids are ids, not phones");
        assert!(ClientUserId::parse("a@b").is_ok(), "no domain dot: not an email");
        assert_eq!(ClientUserId::parse(""), Err(ClientUserIdError::Empty));
        assert_eq!(ClientUserId::parse("   "), Err(ClientUserIdError::Empty));
        assert_eq!(ClientUserId::parse("jane@example.com"), Err(ClientUserIdError::LooksLikeEmail));
        assert_eq!(ClientUserId::parse("+44 20 7946 0958"), Err(ClientUserIdError::LooksLikePhoneNumber));
        assert_eq!(ClientUserId::parse("(555) 123-4567"), Err(ClientUserIdError::LooksLikePhoneNumber));
        assert_eq!(ClientUserId::parse("+15551234567"), Err(ClientUserIdError::LooksLikePhoneNumber));
        assert_eq!(ClientUserId::parse(&"x".repeat(257)), Err(ClientUserIdError::TooLong));
        assert_eq!(ClientUserId::parse("a\nb"), Err(ClientUserIdError::ControlCharacter));
    }

    #[test]
    fn key_part_escapes_separators() {
        let a = ClientUserId::parse("a#b").unwrap();
        assert_eq!(a.key_part(), "a%23b");
        let b = ClientUserId::parse("a%23b").unwrap();
        assert_ne!(a.key_part(), b.key_part());
    }

    #[test]
    fn time_zones() {
        assert_eq!(TimeZoneId::parse("Europe/London").unwrap().name(), "Europe/London");
        assert!(TimeZoneId::parse("Mars/Olympus").is_none());
        assert!(TimeZoneId::parse("europe/london").is_none(), "names are exact");
        assert_eq!(TimeZoneId::parse("UTC").unwrap(), TimeZoneId::utc());
        let berlin = TimeZoneId::parse("Europe/Berlin").unwrap();
        let winter = "2026-01-15T12:00:00Z".parse().unwrap();
        let summer = "2026-07-15T12:00:00Z".parse().unwrap();
        assert_eq!((berlin.offset_seconds_at(winter), berlin.offset_seconds_at(summer)), (3600, 7200));
        let late = "2026-07-15T23:30:00Z".parse().unwrap();
        assert_eq!(berlin.local_date(late).to_string(), "2026-07-16");
        let la = TimeZoneId::parse("America/Los_Angeles").unwrap();
        assert_eq!(la.local_date("2026-07-16T03:00:00Z".parse().unwrap()).to_string(), "2026-07-15");
    }
}
