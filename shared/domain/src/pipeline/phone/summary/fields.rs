//! Reading the fields of one uploaded object, every offending field reported at its location
//! (`data.0.day_summary.steps_sum`) and the reading carried on, so one refusal names them all.

use std::ops::RangeInclusive;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value};
use wearlab_models::{LocPart, ValidationIssue};

use super::super::instant;

/// What is wrong with an upload so far.
pub(super) type Issues = Vec<ValidationIssue>;

/// One JSON object of an upload and where it is.
#[derive(Clone)]
pub(super) struct Obj<'a> {
    pub o: &'a Map<String, Value>,
    pub loc: Vec<LocPart>,
}

/// `loc` and one more part.
pub(super) fn at(loc: &[LocPart], part: impl Into<LocPart>) -> Vec<LocPart> {
    let mut loc = loc.to_vec();
    loc.push(part.into());
    loc
}

pub(super) fn refuse(issues: &mut Issues, loc: Vec<LocPart>, msg: impl Into<String>, kind: &str) {
    issues.push(ValidationIssue { loc, msg: msg.into(), kind: kind.into() });
}

/// `v` at `loc` as an object; refused otherwise.
pub(super) fn object<'a>(v: &'a Value, loc: Vec<LocPart>, issues: &mut Issues) -> Option<Obj<'a>> {
    match v.as_object() {
        Some(o) => Some(Obj { o, loc }),
        None => {
            refuse(issues, loc, "Input should be an object", "dict_type");
            None
        }
    }
}

/// The elements of the list `v` at `loc`, each with its location; refused when not a list.
pub(super) fn list<'a>(
    v: &'a Value,
    loc: Vec<LocPart>,
    issues: &mut Issues,
) -> Vec<(Vec<LocPart>, &'a Value)> {
    match v.as_array() {
        Some(items) => items.iter().enumerate().map(|(i, v)| (at(&loc, i), v)).collect(),
        None => {
            refuse(issues, loc, "Input should be a valid list", "list_type");
            Vec::new()
        }
    }
}

impl<'a> Obj<'a> {
    pub fn loc_of(&self, key: &str) -> Vec<LocPart> {
        at(&self.loc, key)
    }

    /// The field, absent and `null` alike `None`.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.o.get(key).filter(|v| !v.is_null())
    }

    /// Refuses `key` as missing when `required` and absent.
    fn present(&self, key: &str, required: bool, issues: &mut Issues) -> Option<&'a Value> {
        let v = self.get(key);
        if v.is_none() && required {
            refuse(issues, self.loc_of(key), "Field required", "missing");
        }
        v
    }

    /// A number within `range` (Wearlab's bounds of the field).
    pub fn number(&self, key: &str, range: RangeInclusive<f64>, issues: &mut Issues) -> Option<f64> {
        self.number_of(key, false, range, issues)
    }

    pub fn number_of(
        &self,
        key: &str,
        required: bool,
        range: RangeInclusive<f64>,
        issues: &mut Issues,
    ) -> Option<f64> {
        let v = self.present(key, required, issues)?;
        match v.as_f64() {
            Some(n) if n.is_finite() && range.contains(&n) => Some(n),
            Some(_) => {
                let (lo, hi) = (range.start(), range.end());
                let msg = if hi.is_infinite() {
                    format!("{key} must be a number of at least {lo}")
                } else {
                    format!("{key} must be a number from {lo} to {hi}")
                };
                refuse(issues, self.loc_of(key), msg, "value_error");
                None
            }
            None => {
                refuse(issues, self.loc_of(key), "Input should be a number", "float_type");
                None
            }
        }
    }

    /// A string.
    pub fn text(&self, key: &str, required: bool, issues: &mut Issues) -> Option<&'a str> {
        let v = self.present(key, required, issues)?;
        let s = v.as_str();
        if s.is_none() {
            refuse(issues, self.loc_of(key), "Input should be a string", "string_type");
        }
        s
    }

    /// A string among `allowed`.
    pub fn one_of(
        &self,
        key: &str,
        required: bool,
        allowed: &[&str],
        issues: &mut Issues,
    ) -> Option<&'a str> {
        let s = self.text(key, required, issues)?;
        if allowed.contains(&s) {
            return Some(s);
        }
        let known: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
        refuse(issues, self.loc_of(key), format!("Input should be {}", known.join(", ")), "enum");
        None
    }

    /// A boolean.
    pub fn flag(&self, key: &str, issues: &mut Issues) -> Option<bool> {
        let v = self.get(key)?;
        let b = v.as_bool();
        if b.is_none() {
            refuse(issues, self.loc_of(key), "Input should be a valid boolean", "bool_type");
        }
        b
    }

    /// An RFC 3339 instant.
    pub fn instant(&self, key: &str, required: bool, issues: &mut Issues) -> Option<DateTime<Utc>> {
        let v = self.present(key, required, issues)?;
        let t = v.as_str().and_then(instant);
        if t.is_none() {
            refuse(issues, self.loc_of(key), "Input should be a valid datetime", "datetime_parsing");
        }
        t
    }

    /// A calendar date, `YYYY-MM-DD`.
    pub fn date(&self, key: &str, required: bool, issues: &mut Issues) -> Option<NaiveDate> {
        let v = self.present(key, required, issues)?;
        let d = v.as_str().and_then(|s| s.parse().ok());
        if d.is_none() {
            refuse(issues, self.loc_of(key), "Input should be a valid date (YYYY-MM-DD)", "date_parsing");
        }
        d
    }

    /// `start` and `end` instants, the end not before the start.
    pub fn span(
        &self,
        start: &str,
        end: &str,
        issues: &mut Issues,
    ) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        let (s, e) = (self.instant(start, true, issues), self.instant(end, true, issues));
        let (s, e) = (s?, e?);
        if e < s {
            refuse(issues, self.loc_of(end), format!("{end} must not be before {start}"), "value_error");
            return None;
        }
        Some((s, e))
    }

    /// The object at `key`.
    pub fn object(&self, key: &str, required: bool, issues: &mut Issues) -> Option<Obj<'a>> {
        object(self.present(key, required, issues)?, self.loc_of(key), issues)
    }

    /// The elements of the list at `key` (absent: none).
    pub fn list(&self, key: &str, issues: &mut Issues) -> Vec<(Vec<LocPart>, &'a Value)> {
        match self.get(key) {
            Some(v) => list(v, self.loc_of(key), issues),
            None => Vec::new(),
        }
    }

    /// The record id at `key`, which names the summary among the day's ([`super::Summary::n`]):
    /// a HealthKit UUID or a Health Connect record id. Refused if it could not be part of a
    /// key (empty, over 128 characters, or other than letters, digits, `-`, `_`, `.`, `:`).
    pub fn record_id(&self, key: &str, required: bool, issues: &mut Issues) -> Option<&'a str> {
        let id = self.text(key, required, issues)?;
        let fits = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':');
        if id.is_empty() || id.len() > 128 || !id.chars().all(fits) {
            refuse(
                issues,
                self.loc_of(key),
                format!("{key} must be 1 to 128 letters, digits, '-', '_', '.' or ':'"),
                "value_error",
            );
            return None;
        }
        Some(id)
    }
}
