//! Field rules shared by demographics, insurance and orders. Each check appends one issue per
//! offending field at its location, so a request learns every problem at once.

use chrono::NaiveDate;
use wearlab_models::ValidationIssue;
use wearlab_models::lab::{GuarantorDetails, PersonGender, UserAddress};

use crate::common::error::issue;

/// Longest free-text field we keep (addresses, notes, ids).
pub const MAX_TEXT: usize = 200;

/// Collects issues under a location prefix such as `["insured"]`.
pub struct Issues {
    pub list: Vec<ValidationIssue>,
}

impl Issues {
    pub fn new() -> Self {
        Self { list: Vec::new() }
    }

    pub fn push(&mut self, loc: &[&str], msg: impl Into<String>, kind: &str) {
        self.list.push(issue(loc, msg, kind));
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn into_result(self) -> Result<(), crate::DomainError> {
        if self.list.is_empty() { Ok(()) } else { Err(crate::DomainError::Validation(self.list)) }
    }
}

impl Default for Issues {
    fn default() -> Self {
        Self::new()
    }
}

fn at<'a>(prefix: &[&'a str], field: &'a str) -> Vec<&'a str> {
    let mut loc = prefix.to_vec();
    loc.push(field);
    loc
}

/// Patient names, as labs accept them: ASCII letters and digits plus `- . , '`, single inner
/// spaces, starting with a letter or digit, 1 to 50 characters.
pub fn name_problem(s: &str) -> Option<&'static str> {
    if s.is_empty() || s.len() > 50 {
        return Some("must be 1 to 50 characters");
    }
    if !s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric()) {
        return Some("must start with a letter or a digit");
    }
    if !s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ',' | '\'' | ' ')) {
        return Some("may contain only ASCII letters, digits, spaces and - . , '");
    }
    if s.ends_with(' ') || s.contains("  ") {
        return Some("may contain only single spaces between words");
    }
    None
}

pub fn check_name(issues: &mut Issues, prefix: &[&str], field: &str, value: &str) {
    if let Some(p) = name_problem(value) {
        issues.push(&at(prefix, field), format!("{field} {p}"), "value_error");
    }
}

/// A practical email check: one `@`, a non-empty local part, a dotted domain, no spaces.
pub fn is_email(s: &str) -> bool {
    if s.len() > 254 || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let Some((local, domain)) = s.split_once('@') else { return false };
    if local.is_empty() || local.len() > 64 || domain.contains('@') {
        return false;
    }
    let labels: Vec<&str> = domain.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
        && labels.last().is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()))
}

pub fn check_email(issues: &mut Issues, prefix: &[&str], field: &str, value: &str) {
    if !is_email(value) {
        issues.push(&at(prefix, field), "value is not a valid email address", "value_error");
    }
}

/// A phone number: digits with optional `+`, spaces, dashes, dots and parentheses; 7 to 15 digits.
pub fn is_phone(s: &str) -> bool {
    let digits = s.chars().filter(char::is_ascii_digit).count();
    (7..=15).contains(&digits)
        && s.chars().all(|c| c.is_ascii_digit() || matches!(c, '+' | ' ' | '-' | '.' | '(' | ')'))
}

pub fn check_phone(issues: &mut Issues, prefix: &[&str], field: &str, value: &str) {
    if !is_phone(value) {
        issues.push(&at(prefix, field), "phone_number must have 7 to 15 digits", "value_error");
    }
}

pub fn check_dob(issues: &mut Issues, prefix: &[&str], field: &str, dob: NaiveDate, today: NaiveDate) {
    if dob >= today {
        issues.push(&at(prefix, field), format!("{field} must be a date in the past"), "value_error");
    } else if dob < NaiveDate::from_ymd_opt(1900, 1, 1).expect("valid date") {
        issues.push(&at(prefix, field), format!("{field} must be after 1900-01-01"), "value_error");
    }
}

pub fn check_text(issues: &mut Issues, prefix: &[&str], field: &str, value: &str) {
    if value.trim().is_empty() {
        issues.push(&at(prefix, field), format!("{field} must not be empty"), "value_error");
    } else if value.len() > MAX_TEXT {
        issues.push(
            &at(prefix, field),
            format!("{field} must be at most {MAX_TEXT} characters"),
            "value_error",
        );
    }
}

pub fn check_optional_text(issues: &mut Issues, prefix: &[&str], field: &str, value: Option<&str>) {
    if let Some(v) = value
        && v.len() > MAX_TEXT
    {
        issues.push(
            &at(prefix, field),
            format!("{field} must be at most {MAX_TEXT} characters"),
            "value_error",
        );
    }
}

/// US states, the District of Columbia and the territories.
pub const US_STATES: &[&str] = &[
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
    "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC",
    "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY",
    "AS", "GU", "MP", "PR", "VI",
];

pub fn is_us(country: &str) -> bool {
    matches!(country.trim().to_ascii_uppercase().as_str(), "US" | "USA" | "UNITED STATES")
}

/// `12345` or `12345-6789`.
pub fn is_us_zip(zip: &str) -> bool {
    let b = zip.as_bytes();
    let five = |s: &[u8]| s.len() == 5 && s.iter().all(u8::is_ascii_digit);
    five(b) || (b.len() == 10 && five(&b[..5]) && b[5] == b'-' && b[6..].iter().all(u8::is_ascii_digit))
}

/// The five-digit ZIP of a US ZIP or ZIP+4.
pub fn zip5(zip: &str) -> &str {
    zip.get(..5).unwrap_or(zip)
}

pub fn check_address(issues: &mut Issues, prefix: &[&str], a: &UserAddress) {
    check_text(issues, prefix, "first_line", &a.first_line);
    check_optional_text(issues, prefix, "second_line", a.second_line.as_deref());
    check_text(issues, prefix, "city", &a.city);
    check_text(issues, prefix, "country", &a.country);
    check_optional_text(issues, prefix, "access_notes", a.access_notes.as_deref());
    if is_us(&a.country) {
        if !US_STATES.contains(&a.state.as_str()) {
            issues.push(
                &at(prefix, "state"),
                "state must be a two-letter US state code, e.g. NY",
                "value_error",
            );
        }
        if !is_us_zip(&a.zip) {
            issues.push(&at(prefix, "zip"), "zip must be a US ZIP code: 12345 or 12345-6789", "value_error");
        }
    } else {
        check_text(issues, prefix, "state", &a.state);
        check_text(issues, prefix, "zip", &a.zip);
    }
}

pub fn check_guarantor(issues: &mut Issues, prefix: &[&str], g: &GuarantorDetails) {
    check_name(issues, prefix, "first_name", &g.first_name);
    check_name(issues, prefix, "last_name", &g.last_name);
    check_address(issues, &at(prefix, "address"), &g.address);
    check_phone(issues, prefix, "phone_number", &g.phone_number);
    if let Some(e) = &g.email {
        check_email(issues, prefix, "email", e);
    }
    if g.household_income.is_some_and(|v| !v.is_finite() || v < 0.0) {
        issues.push(&at(prefix, "household_income"), "household_income must be at least 0", "value_error");
    }
    if g.household_size.is_some_and(|v| !v.is_finite() || v < 1.0) {
        issues.push(&at(prefix, "household_size"), "household_size must be at least 1", "value_error");
    }
}

/// Input enums take their documented values; unknown ones are kept only when read back.
pub fn check_known<T>(issues: &mut Issues, loc: &[&str], known: Option<T>, value: &str, allowed: &[&str]) {
    if known.is_none() {
        issues.push(loc, format!("'{value}' is not one of: {}", allowed.join(", ")), "enum");
    }
}

pub fn check_person_gender(issues: &mut Issues, prefix: &[&str], g: &PersonGender) {
    check_known(
        issues,
        &at(prefix, "gender"),
        PersonGender::known(g.as_str()),
        g.as_str(),
        PersonGender::KNOWN,
    );
}

/// National Provider Identifier: 10 digits whose last is the Luhn check digit of `80840` + the
/// first nine.
pub fn is_npi(s: &str) -> bool {
    if s.len() != 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let digits: Vec<u32> = format!("80840{s}").bytes().map(|b| u32::from(b - b'0')).collect();
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| if i % 2 == 1 { if d * 2 > 9 { d * 2 - 9 } else { d * 2 } } else { d })
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["Ann", "O'Brien", "Mary-Jane", "St. John", "Smith, Jr.", "J2", "Van der Berg"] {
            assert_eq!(name_problem(ok), None, "{ok}");
        }
        for bad in ["", " Ann", "Ann  Lee", "Ann ", "-Ann", "Zoë", "Ann_Lee", &"a".repeat(51)] {
            assert!(name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn emails() {
        assert!(is_email("ann.lee+lab@example.co.uk"));
        for bad in
            ["ann", "ann@", "@example.com", "ann@example", "ann lee@example.com", "a@b@c.com", "a@ex..com"]
        {
            assert!(!is_email(bad), "{bad}");
        }
    }

    #[test]
    fn npi_check_digit() {
        assert!(is_npi("1234567893"));
        assert!(!is_npi("1234567890"));
        assert!(!is_npi("123456789"));
    }

    #[test]
    fn zips() {
        assert!(is_us_zip("10001") && is_us_zip("10001-1234"));
        assert!(!is_us_zip("1000") && !is_us_zip("10001-12") && !is_us_zip("ABCDE"));
    }
}
