//! The identity check of `communications` portal links. Such a link reaches the user by email
//! or SMS and lives four weeks, so before it shows anything on a device the user proves it is
//! theirs with a one-time code:
//!
//! 1. The user picks email or SMS; we emit `user.portal.verification_requested` carrying the
//!    code, and the team relays it (the platform holds no email or SMS sender of its own; the
//!    team already talks to its users). Only a MAC of the code is stored, with its expiry.
//! 2. The user types the code: at most `MAX_ATTEMPTS` tries per code, then a new code is
//!    needed; a code works once. New codes are limited (`RESEND_AFTER`, `MAX_SENDS_PER_DAY`)
//!    so a link cannot be used to flood the user.
//! 3. The device gets a signed, HttpOnly cookie bound to the link, valid `DEVICE_LIFETIME`
//!    (at most until the link expires).
//!
//! Every MAC uses the deployment's signing key; the link appears in MAC inputs only hashed.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::portal::Access;
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::signing;
use crate::keys::lab as keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key, StoreError};
use crate::users;

/// The event that carries a code for the team to relay.
pub const EVENT_VERIFICATION_REQUESTED: &str = "user.portal.verification_requested";
pub const CODE_DIGITS: u32 = 6;
pub const CODE_LIFETIME: Duration = Duration::minutes(10);
/// Wrong codes a code takes before it stops working.
pub const MAX_ATTEMPTS: u32 = 5;
/// Time between two codes for the same link.
pub const RESEND_AFTER: Duration = Duration::seconds(30);
/// Codes a link may ask for in a day.
pub const MAX_SENDS_PER_DAY: u32 = 5;
/// How long a verified device opens the link without a new code.
pub const DEVICE_LIFETIME: Duration = Duration::days(30);
/// Name of the device cookie (scoped by path to the one link).
pub const DEVICE_COOKIE: &str = "wearlab_portal_device";

/// Where the code goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Email,
    Sms,
}

impl Channel {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "email" => Some(Self::Email),
            "sms" => Some(Self::Sms),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Sms => "sms",
        }
    }
}

/// The user's destinations on file, redacted for the page (`a***@e******.com`, `*** *** **00`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Destinations {
    pub email: Option<String>,
    pub sms: Option<String>,
}

impl Destinations {
    pub fn hint(&self, channel: Channel) -> Option<&str> {
        match channel {
            Channel::Email => self.email.as_deref(),
            Channel::Sms => self.sms.as_deref(),
        }
    }
}

fn redact_email(email: &str) -> Option<String> {
    let (local, domain) = email.trim().split_once('@')?;
    let (name, tld) = domain.rsplit_once('.')?;
    let first = |s: &str| s.chars().next().map(|c| format!("{c}***"));
    Some(format!("{}@{}.{tld}", first(local)?, first(name)?))
}

fn redact_phone(phone: &str) -> Option<String> {
    let digits: Vec<char> = phone.chars().filter(char::is_ascii_digit).collect();
    (digits.len() >= 4).then(|| format!("*** *** **{}{}", digits[digits.len() - 2], digits[digits.len() - 1]))
}

/// Where a code can be sent, from the user's demographics.
pub async fn destinations(deps: &Deps, access: &Access) -> Result<Destinations, DomainError> {
    Ok(match super::demographics::find(deps, access.user_id).await? {
        Some(info) => {
            Destinations { email: redact_email(&info.email), sms: redact_phone(&info.phone_number) }
        }
        None => Destinations::default(),
    })
}

/// The pending check of one link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Pending {
    /// MAC of the current code; `None` once it was used up by wrong tries.
    code_mac: Option<String>,
    code_expires_at: DateTime<Utc>,
    attempts: u32,
    sent_at: DateTime<Utc>,
    /// Codes sent since `window_start` (a day).
    sends: u32,
    window_start: DateTime<Utc>,
}

fn link_hash(access: &Access) -> String {
    hex::encode(Sha256::digest(access.link.as_bytes()))
}

fn key_of(access: &Access) -> Key {
    keys::portal_verification(access.user_id, &link_hash(access))
}

fn code_mac(key: &[u8], access: &Access, code: &str) -> String {
    signing::sign(key, &format!("portal-code|{}|{code}", link_hash(access)))
}

fn random_code() -> String {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..8]);
    // 64 random bits reduced to 6 digits: the bias is below one in 10^13.
    format!("{:0width$}", u64::from_le_bytes(bytes) % 10u64.pow(CODE_DIGITS), width = CODE_DIGITS as usize)
}

async fn load(deps: &Deps, key: &Key) -> Result<Option<(Pending, u64)>, DomainError> {
    Ok(match deps.table.get(key).await? {
        Some(item) => Some((item.decode()?, item.version)),
        None => None,
    })
}

/// What asking for a code did.
#[derive(Debug, Clone, PartialEq)]
pub enum Requested {
    /// A code was made and handed to the team to deliver.
    Sent { channel: Channel, expires_at: DateTime<Utc> },
    /// A code was sent moments ago, or the day's codes are used up.
    TooSoon { retry_after: Duration },
    /// The user has no destination of that kind on file.
    NoDestination,
}

/// Makes a code for the link and emits it for the team to deliver by `channel`.
pub async fn request(deps: &Deps, access: &Access, channel: Channel) -> Result<Requested, DomainError> {
    if destinations(deps, access).await?.hint(channel).is_none() {
        return Ok(Requested::NoDestination);
    }
    let now = deps.now();
    let key = key_of(access);
    let existing = load(deps, &key).await?;
    let (sends, window_start) = match &existing {
        Some((p, _)) if now - p.window_start < Duration::days(1) => {
            if now - p.sent_at < RESEND_AFTER {
                return Ok(Requested::TooSoon { retry_after: RESEND_AFTER - (now - p.sent_at) });
            }
            if p.sends >= MAX_SENDS_PER_DAY {
                return Ok(Requested::TooSoon { retry_after: p.window_start + Duration::days(1) - now });
            }
            (p.sends + 1, p.window_start)
        }
        _ => (1, now),
    };
    let code = random_code();
    let signing_key = signing::key(deps).await?;
    let expires_at = now + CODE_LIFETIME;
    let pending = Pending {
        code_mac: Some(code_mac(&signing_key, access, &code)),
        code_expires_at: expires_at,
        attempts: 0,
        sent_at: now,
        sends,
        window_start,
    };
    let keep_until = (window_start + Duration::days(1)).max(expires_at);
    let (version, condition) = match &existing {
        Some((_, v)) => (v + 1, Condition::VersionIs(*v)),
        None => (1, Condition::NotExists),
    };
    let mut item = Item::new(key, to_body(&pending)).with_expiry(Some(keep_until.timestamp()));
    item.version = version;
    match deps.table.put(item, condition).await {
        Ok(()) => {}
        // Another request for this link won the race: its code is the one on its way.
        Err(StoreError::ConditionFailed { .. }) => {
            return Ok(Requested::TooSoon { retry_after: RESEND_AFTER });
        }
        Err(e) => return Err(e.into()),
    }
    let Some((user, _)) = users::load(deps, access.team_id, access.user_id).await? else {
        return Err(DomainError::NotFound("The user of this link no longer exists.".into()));
    };
    let data = serde_json::json!({
        "user_id": access.user_id,
        "channel": channel.as_str(),
        "code": code,
        "expires_at": expires_at,
        "order_id": access.order_id,
    });
    let event = crate::events::of_user(&user, EVENT_VERIFICATION_REQUESTED, data);
    // Without the event the user never gets the code: a failure is the request's failure.
    deps.bus.publish(vec![event]).await?;
    tracing::info!(team_id = %access.team_id, user_id = %access.user_id, channel = channel.as_str(), "portal verification code requested");
    Ok(Requested::Sent { channel, expires_at })
}

/// What checking a typed code found.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// The code is right: the device token for the cookie, valid `max_age`.
    Verified { device: String, max_age: Duration },
    /// Wrong; this many tries are left for this code.
    Wrong { attempts_left: u32 },
    /// The code took its last wrong try: ask for a new one.
    TooManyAttempts,
    /// No live code: never asked for, expired, or already used.
    NoCode,
    /// Other checks of the same link kept winning the race to record theirs: try again in a
    /// moment (the tries are counted, never lost).
    Busy,
}

/// Checks a code typed for the link.
pub async fn check(deps: &Deps, access: &Access, code: &str) -> Result<Checked, DomainError> {
    let key = key_of(access);
    let signing_key = signing::key(deps).await?;
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    // Checks of one link in this process take turns; across processes the version-checked
    // writes below see that two guesses at once never both count as the first.
    static TURNS: std::sync::LazyLock<crate::common::per_key::PerKey<tokio::sync::Mutex<()>>> =
        std::sync::LazyLock::new(|| crate::common::per_key::PerKey::new(Default::default));
    let turn = TURNS.get(&format!("{}|{}", key.pk, key.sk));
    let _turn = turn.lock().await;
    for attempt in 0..5u32 {
        if attempt > 0 {
            let wait = std::time::Duration::from_millis(10 << attempt);
            tokio::time::sleep(wait + crate::common::backoff::jitter(wait)).await;
        }
        let Some((mut p, version)) = load(deps, &key).await? else { return Ok(Checked::NoCode) };
        let now = deps.now();
        let Some(mac) = p.code_mac.clone().filter(|_| now < p.code_expires_at) else {
            return Ok(if p.attempts >= MAX_ATTEMPTS { Checked::TooManyAttempts } else { Checked::NoCode });
        };
        let right = code.len() == CODE_DIGITS as usize
            && signing::constant_time_eq(mac.as_bytes(), code_mac(&signing_key, access, &code).as_bytes());
        p.attempts += 1;
        if right {
            // The code works once.
            p.code_mac = None;
        } else if p.attempts >= MAX_ATTEMPTS {
            p.code_mac = None;
        }
        let keep = p.window_start + Duration::days(1);
        let mut item =
            Item::new(key.clone(), to_body(&p)).with_expiry(Some(keep.max(p.code_expires_at).timestamp()));
        item.version = version + 1;
        match deps.table.put(item, Condition::VersionIs(version)).await {
            Ok(()) => {}
            Err(StoreError::ConditionFailed { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
        if right {
            tracing::info!(team_id = %access.team_id, user_id = %access.user_id, "portal device verified");
            let expires = (now + DEVICE_LIFETIME).min(access.expires_at);
            return Ok(Checked::Verified {
                device: device_token(&signing_key, access, expires),
                max_age: expires - now,
            });
        }
        tracing::info!(team_id = %access.team_id, user_id = %access.user_id, attempts = p.attempts, "wrong portal verification code");
        return Ok(if p.attempts >= MAX_ATTEMPTS {
            Checked::TooManyAttempts
        } else {
            Checked::Wrong { attempts_left: MAX_ATTEMPTS - p.attempts }
        });
    }
    Ok(Checked::Busy)
}

fn device_message(access: &Access, expires: i64) -> String {
    format!("portal-device|{}|{expires}", link_hash(access))
}

fn device_token(key: &[u8], access: &Access, expires: DateTime<Utc>) -> String {
    let exp = expires.timestamp();
    format!("{exp}.{}", signing::sign(key, &device_message(access, exp)))
}

/// Whether a device cookie proves an earlier check for this link.
pub async fn device_verified(
    deps: &Deps,
    access: &Access,
    cookie: Option<&str>,
) -> Result<bool, DomainError> {
    let Some((exp, mac)) = cookie.and_then(|c| c.split_once('.')) else { return Ok(false) };
    let Ok(exp) = exp.parse::<i64>() else { return Ok(false) };
    if exp <= deps.now().timestamp() {
        return Ok(false);
    }
    let key = signing::key(deps).await?;
    Ok(signing::verify(&key, &device_message(access, exp), mac))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits() {
        for _ in 0..100 {
            let c = random_code();
            assert_eq!(c.len(), 6, "{c}");
            assert!(c.bytes().all(|b| b.is_ascii_digit()));
        }
    }

    #[test]
    fn destinations_are_redacted() {
        assert_eq!(redact_email("ada@example.com").as_deref(), Some("a***@e***.com"));
        assert_eq!(redact_email("not an address"), None);
        assert_eq!(redact_phone("+1 (212) 555-0100").as_deref(), Some("*** *** **00"));
        assert_eq!(redact_phone("12"), None);
    }
}
