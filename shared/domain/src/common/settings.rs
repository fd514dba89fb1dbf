//! Operator settings given as text (the edge reads them from the environment and passes them
//! here): one rule for the bounded whole numbers, one wording for a refused value, and
//! [`Settings`], every setting of a process parsed once at its start.

use std::ops::RangeInclusive;

/// `value` of the setting `name` as a whole number within `range` (spaces around it allowed),
/// `default` when unset; anything else is refused with a message naming the setting.
pub fn whole_number(
    name: &str,
    value: Option<&str>,
    range: RangeInclusive<usize>,
    default: usize,
) -> Result<usize, String> {
    let Some(v) = value else { return Ok(default) };
    match v.trim().parse::<usize>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => {
            Err(format!("{name} must be a whole number from {} to {}, not {v:?}", range.start(), range.end()))
        }
    }
}

use crate::common::audit::Retention;
use crate::common::fair_use::{DEFAULT_REQUESTS_PER_MINUTE, MAX_REQUESTS_PER_MINUTE};

/// The API's public address (`https://api.example.com`): links handed to users and the address
/// providers push to. Required on a deployment; the local stack may leave it unset.
pub const PUBLIC_URL_VAR: &str = "WEARLAB_PUBLIC_URL";
/// API requests per minute of a team without a limit of its own.
pub const TEAM_RATE_LIMIT_VAR: &str = "WEARLAB_TEAM_RATE_LIMIT";
/// Days an audit log entry is kept.
pub const AUDIT_RETENTION_VAR: &str = "WEARLAB_AUDIT_RETENTION_DAYS";
/// Webhook POSTs at once to one endpoint from one process.
pub const WEBHOOK_IN_FLIGHT_VAR: &str = "WEARLAB_WEBHOOK_IN_FLIGHT";

/// Webhook POSTs at once to one endpoint unless [`WEBHOOK_IN_FLIGHT_VAR`] says otherwise.
pub const DEFAULT_WEBHOOK_IN_FLIGHT: usize = 16;

/// A setting whose value was refused: the message names the variable and the accepted values,
/// so a function stops at start saying what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SettingError {
    /// The variable whose value was refused.
    pub variable: &'static str,
    message: String,
}

impl SettingError {
    fn new(variable: &'static str, message: String) -> Self {
        Self { variable, message }
    }
}

/// The operator's settings of one process, read once at start (each function's `main.rs`, the
/// local stack) and passed down: no rule reads the environment, and a bad value stops the
/// process at start rather than being logged and replaced by a default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// [`PUBLIC_URL_VAR`], `http(s)://host[:port]` without a trailing slash; `None` when unset.
    pub public_url: Option<String>,
    /// [`TEAM_RATE_LIMIT_VAR`]: 1 to 1,000,000,000, default 3,000.
    pub team_rate_limit: u32,
    /// [`AUDIT_RETENTION_VAR`]: 1 to 3,660 days, default 2,192 (six years).
    pub audit_retention: Retention,
    /// [`WEBHOOK_IN_FLIGHT_VAR`]: 1 to 1,000, default 16.
    pub webhook_in_flight: usize,
}

impl Default for Settings {
    /// Every default, no public URL (tests, benchmarks).
    fn default() -> Self {
        Self {
            public_url: None,
            team_rate_limit: DEFAULT_REQUESTS_PER_MINUTE,
            audit_retention: Retention::default(),
            webhook_in_flight: DEFAULT_WEBHOOK_IN_FLIGHT,
        }
    }
}

impl Settings {
    /// Every setting from `var` (the process environment at the edge; a map in tests). A
    /// variable that is unset or empty takes its default; any other value must be valid, or the
    /// error names the variable.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, SettingError> {
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let number = |name: &'static str, range: RangeInclusive<usize>, default: usize| {
            whole_number(name, get(name).as_deref(), range, default).map_err(|e| SettingError::new(name, e))
        };
        let public_url = get(PUBLIC_URL_VAR).map(|u| public_url(&u)).transpose()?;
        let team_rate_limit = number(
            TEAM_RATE_LIMIT_VAR,
            1..=MAX_REQUESTS_PER_MINUTE as usize,
            DEFAULT_REQUESTS_PER_MINUTE as usize,
        )?;
        let audit_retention = match get(AUDIT_RETENTION_VAR) {
            None => Retention::default(),
            Some(v) => Retention::parse(&v).ok_or_else(|| {
                let m =
                    format!("{AUDIT_RETENTION_VAR} must be a whole number of days from 1 to 3660, not {v:?}");
                SettingError::new(AUDIT_RETENTION_VAR, m)
            })?,
        };
        Ok(Self {
            public_url,
            team_rate_limit: u32::try_from(team_rate_limit).unwrap_or(MAX_REQUESTS_PER_MINUTE),
            audit_retention,
            webhook_in_flight: number(WEBHOOK_IN_FLIGHT_VAR, 1..=1000, DEFAULT_WEBHOOK_IN_FLIGHT)?,
        })
    }

    /// The public URL, which a deployment cannot start without.
    pub fn required_public_url(&self) -> Result<&str, SettingError> {
        self.public_url.as_deref().ok_or_else(|| {
            SettingError::new(PUBLIC_URL_VAR, format!("environment variable {PUBLIC_URL_VAR} is not set"))
        })
    }
}

/// A public address: `http(s)://host[:port]`, no path; a trailing slash is dropped.
fn public_url(url: &str) -> Result<String, SettingError> {
    let url = url.trim().trim_end_matches('/').to_owned();
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")).unwrap_or("");
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) || rest.contains(char::is_whitespace) {
        return Err(SettingError::new(
            PUBLIC_URL_VAR,
            format!("{PUBLIC_URL_VAR} must be https://host (no path), not {url:?}"),
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_whole_number_or_the_default_or_a_refusal_naming_the_setting() {
        assert_eq!(whole_number("N", None, 1..=9, 4), Ok(4));
        assert_eq!(whole_number("N", Some(" 9 "), 1..=9, 4), Ok(9));
        for bad in ["0", "10", "-1", "2x", ""] {
            let e = whole_number("N", Some(bad), 1..=9, 4).unwrap_err();
            assert!(e.starts_with("N must be a whole number from 1 to 9"), "{bad}: {e}");
        }
    }

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: std::collections::HashMap<String, String> =
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn unset_settings_take_the_documented_defaults() {
        let s = Settings::from_vars(vars(&[])).unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(s.public_url, None);
        assert_eq!(s.team_rate_limit, 3_000);
        assert_eq!(s.audit_retention.days(), 2_192, "six years");
        assert_eq!(s.webhook_in_flight, 16);
        assert_eq!(Settings::from_vars(vars(&[(TEAM_RATE_LIMIT_VAR, " ")])).unwrap(), s, "empty is unset");
    }

    #[test]
    fn set_settings_are_read_once_and_kept() {
        let s = Settings::from_vars(vars(&[
            (PUBLIC_URL_VAR, " https://api.example.com/ "),
            (TEAM_RATE_LIMIT_VAR, "1000000000"),
            (AUDIT_RETENTION_VAR, "30"),
            (WEBHOOK_IN_FLIGHT_VAR, "1"),
        ]))
        .unwrap();
        assert_eq!(s.public_url.as_deref(), Some("https://api.example.com"));
        assert_eq!(s.required_public_url(), Ok("https://api.example.com"));
        assert_eq!(s.team_rate_limit, 1_000_000_000);
        assert_eq!(s.audit_retention.days(), 30);
        assert_eq!(s.webhook_in_flight, 1);
    }

    #[test]
    fn a_bad_value_of_each_setting_is_refused_naming_its_variable() {
        let bad: [(&str, &[&str]); 4] = [
            (
                PUBLIC_URL_VAR,
                &["api.example.com", "https://", "https://a.example/x", "https://u@a.example", "ftp://a"],
            ),
            (TEAM_RATE_LIMIT_VAR, &["0", "-1", "1000000001", "3k", "1.5"]),
            (AUDIT_RETENTION_VAR, &["0", "3661", "-1", "ten", "1.5"]),
            (WEBHOOK_IN_FLIGHT_VAR, &["0", "1001", "-1", "many"]),
        ];
        for (name, values) in bad {
            for value in values {
                let e = Settings::from_vars(vars(&[(name, value)])).unwrap_err();
                assert_eq!(e.variable, name, "{value}");
                assert!(e.to_string().starts_with(&format!("{name} must be")), "{name}={value}: {e}");
            }
        }
    }

    #[test]
    fn a_deployment_needs_its_public_url() {
        let e = Settings::default().required_public_url().unwrap_err();
        assert_eq!(e.variable, PUBLIC_URL_VAR);
        assert_eq!(e.to_string(), "environment variable WEARLAB_PUBLIC_URL is not set");
    }
}
