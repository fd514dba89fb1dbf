//! Error bodies. Every rejection is JSON with a `detail` key.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `{"detail": "..."}`: 400, 401, 403, 404, 409 and 413 answers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct DetailBody {
    pub detail: String,
}

/// One element of a validation error location: a key or an array index.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(untagged)]
pub enum LocPart {
    Index(usize),
    Key(String),
}

impl From<&str> for LocPart {
    fn from(s: &str) -> Self {
        LocPart::Key(s.to_owned())
    }
}

impl From<String> for LocPart {
    fn from(s: String) -> Self {
        LocPart::Key(s)
    }
}

impl From<usize> for LocPart {
    fn from(i: usize) -> Self {
        LocPart::Index(i)
    }
}

/// One offending input.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ValidationIssue {
    pub loc: Vec<LocPart>,
    pub msg: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// `{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}`: the 422 answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ValidationErrorBody {
    pub detail: Vec<ValidationIssue>,
}

/// The 400 answer to a create whose `client_user_id` is taken.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ConflictBody {
    pub detail: ConflictDetail,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ConflictDetail {
    pub error_type: String,
    pub error_message: String,
    pub user_id: uuid::Uuid,
    pub created_on: chrono::DateTime<chrono::Utc>,
}

/// `{"success": true}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct SuccessBody {
    pub success: bool,
}
