//! Query strings with repeated keys (`?lab_id=1&lab_id=2`), which `QueryParams` (serde_urlencoded)
//! cannot read. Every bad value becomes a 422 naming its parameter.

use std::str::FromStr;

use wearlab_domain::common::error::issue;
use wearlab_models::ValidationIssue;
use wearlab_web::ApiError;

/// The decoded pairs of a query string.
pub struct RawParams {
    pairs: Vec<(String, String)>,
    issues: Vec<ValidationIssue>,
}

impl RawParams {
    pub fn parse(query: Option<&str>) -> Self {
        let pairs = form_urlencoded::parse(query.unwrap_or("").as_bytes()).into_owned().collect();
        Self { pairs, issues: Vec::new() }
    }

    fn values<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.pairs.iter().filter(move |(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every value of a repeated key.
    pub fn all_strings(&self, key: &str) -> Vec<String> {
        self.values(key).map(str::to_owned).collect()
    }

    /// The last value of a key.
    pub fn string(&self, key: &str) -> Option<String> {
        self.values(key).last().map(str::to_owned)
    }

    /// Every value of a repeated key, parsed.
    pub fn all<T: FromStr>(&mut self, key: &str, what: &str) -> Vec<T> {
        let mut out = Vec::new();
        let mut bad = Vec::new();
        for (i, v) in self.values(key).enumerate() {
            match v.trim().parse() {
                Ok(x) => out.push(x),
                Err(_) => bad.push((i, v.to_owned())),
            }
        }
        for (i, v) in bad {
            self.issues.push(ValidationIssue {
                loc: vec!["query".into(), key.into(), i.into()],
                msg: format!("Input should be a valid {what}, got '{v}'"),
                kind: "type_error".into(),
            });
        }
        out
    }

    /// The last value of a key, parsed.
    pub fn one<T: FromStr>(&mut self, key: &str, what: &str) -> Option<T> {
        let v = self.values(key).last()?.to_owned();
        match v.trim().parse() {
            Ok(x) => Some(x),
            Err(_) => {
                self.issues.push(issue(
                    &["query", key],
                    format!("Input should be a valid {what}, got '{v}'"),
                    "type_error",
                ));
                None
            }
        }
    }

    /// A boolean as FastAPI reads it: true/false, 1/0, yes/no, on/off.
    pub fn boolean(&mut self, key: &str) -> Option<bool> {
        let v = self.values(key).last()?.to_ascii_lowercase();
        match v.as_str() {
            "true" | "1" | "yes" | "on" => Some(true),
            "false" | "0" | "no" | "off" => Some(false),
            _ => {
                self.issues.push(issue(&["query", key], "Input should be a valid boolean", "bool_parsing"));
                None
            }
        }
    }

    /// Every problem found while reading, as one 422.
    pub fn finish(self) -> Result<(), ApiError> {
        if self.issues.is_empty() { Ok(()) } else { Err(ApiError::Validation(self.issues)) }
    }
}
