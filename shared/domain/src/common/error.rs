//! What a use case can refuse. The web layer maps each variant to one HTTP answer.

use chrono::{DateTime, Utc};
use uuid::Uuid;
use wearlab_models::{LocPart, ValidationIssue};

use crate::ports::{BusError, SchedulerError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// Input that is well-formed JSON but breaks a rule (422).
    #[error("validation failed")]
    Validation(Vec<ValidationIssue>),
    /// The thing does not exist for this team (404). The text names what.
    #[error("{0}")]
    NotFound(String),
    /// A create whose `client_user_id` another user holds (400, with the holder).
    #[error("client_user_id already in use")]
    ClientUserIdTaken { user_id: Uuid, created_on: DateTime<Utc> },
    /// A refusal that retrying will not change (400).
    #[error("{0}")]
    Rejected(String),
    /// The team may not do this (403): a feature not enabled for it.
    #[error("{0}")]
    Forbidden(String),
    /// Missing or unknown API key (401).
    #[error("{0}")]
    Unauthenticated(String),
    /// Temporary: concurrent writers, retry (409 with Retry-After).
    #[error("{0}")]
    Busy(String),
    /// Over a usage limit until `retry_after` has passed (429 with Retry-After).
    #[error("{message}")]
    RateLimited { message: String, retry_after: std::time::Duration },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Scheduler(#[from] SchedulerError),
    #[error(transparent)]
    Bus(#[from] BusError),
}

impl DomainError {
    /// One offending input at `loc`.
    pub fn invalid(loc: &[&str], msg: impl Into<String>, kind: &str) -> Self {
        DomainError::Validation(vec![issue(loc, msg, kind)])
    }
}

/// A lookup's answer with its 404 as `None`, for work to which a missing thing is no error (a
/// queued job whose user is gone is dropped): `users::load_active(..).await.found()?`.
pub trait Found<T> {
    fn found(self) -> Result<Option<T>, DomainError>;
}

impl<T> Found<T> for Result<T, DomainError> {
    fn found(self) -> Result<Option<T>, DomainError> {
        match self {
            Ok(t) => Ok(Some(t)),
            Err(DomainError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A request body parsed into a domain value: every rule checked, every offending field
/// reported at once. The web layer also runs `from_body` on a body it refused (with the refused
/// parts replaced), so rule findings arrive in the same 422 as missing fields.
pub trait FromBody: Sized {
    /// What the request holds.
    type Body: serde::de::DeserializeOwned;
    fn from_body(body: Self::Body, today: chrono::NaiveDate) -> Result<Self, DomainError>;
}

/// Builds one validation issue.
pub fn issue(loc: &[&str], msg: impl Into<String>, kind: &str) -> ValidationIssue {
    ValidationIssue {
        loc: loc.iter().map(|s| LocPart::from(*s)).collect(),
        msg: msg.into(),
        kind: kind.to_owned(),
    }
}
