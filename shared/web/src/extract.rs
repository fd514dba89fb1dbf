//! Input extractors. Each turns bad input into a 422 with the offending location, never a panic.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use chrono::NaiveDate;
use http::request::Parts;
use serde::de::DeserializeOwned;
use utoipa::ToSchema;
use wearlab_domain::common::error::FromBody;
use wearlab_domain::common::ids::UserId;
use wearlab_models::{LocPart, ValidationIssue};

use crate::{ApiError, AppState};

/// A JSON body; a refused one answers 422 listing every offending field (see `schema_check`).
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + ToSchema> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let JsonBodyBytes(bytes) = JsonBodyBytes::from_request(req, state).await?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// A JSON body parsed into a domain value `P` (`FromBody`): every rule of the domain checked.
/// A refused answer is one 422 that lists every field the schema refuses (missing, wrong type)
/// and every rule the other fields break (names, phone numbers, dates), not one round of each.
pub struct Parsed<P>(pub P);

impl<P> FromRequest<AppState> for Parsed<P>
where
    P: FromBody,
    P::Body: ToSchema,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let today = state.deps.now().date_naive();
        let JsonBodyBytes(bytes) = JsonBodyBytes::from_request(req, state).await?;
        match parse_json::<P::Body>(&bytes) {
            Ok(body) => Ok(Parsed(P::from_body(body, today)?)),
            Err(ApiError::Validation(found)) => {
                Err(ApiError::Validation(with_rule_issues::<P>(&bytes, found, today)))
            }
            Err(other) => Err(other),
        }
    }
}

/// `found` (what the schema refused) and then what the domain's rules find in the rest of the
/// body: the refused parts are replaced by placeholders the schema accepts, and rule findings at
/// (or under) a place already reported are left out.
fn with_rule_issues<P>(
    bytes: &[u8],
    mut found: Vec<ValidationIssue>,
    today: NaiveDate,
) -> Vec<ValidationIssue>
where
    P: FromBody,
    P::Body: ToSchema,
{
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else { return found };
    if !value.is_object() {
        return found;
    }
    let repaired = crate::schema_check::repaired::<P::Body>(&value);
    let Ok(body) = serde_json::from_value::<P::Body>(repaired) else { return found };
    let Err(rules) = P::from_body(body, today) else { return found };
    let ApiError::Validation(rules) = ApiError::from(rules) else { return found };
    for issue in rules {
        let known = found.iter().any(|f| issue.loc.starts_with(&f.loc));
        if !known {
            found.push(issue);
        }
    }
    found
}

/// The bytes of a request body within the size limits, decoded (`Content-Encoding: gzip`):
/// see `crate::body`.
struct JsonBodyBytes(Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBodyBytes {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        let (parts, body) = req.into_parts();
        crate::body::read(&parts, body).await.map(JsonBodyBytes)
    }
}

/// Parses a JSON object into `T`; on failure lists every field the schema of `T` refuses, with
/// serde's own finding in its place (or last when the schema did not name that field).
pub fn parse_json<T: DeserializeOwned + ToSchema>(bytes: &[u8]) -> Result<T, ApiError> {
    parse_json_first_issue(bytes).map_err(|first| {
        let ApiError::Validation(first) = first else { return first };
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
            return ApiError::Validation(first);
        };
        let mut all = crate::schema_check::issues::<T>(&value);
        for issue in first {
            // serde's wording of a wrong value wins where both name the same field, so those
            // answers stay as they were; a missing field reads as FastAPI words it.
            match all.iter_mut().find(|i| i.loc == issue.loc) {
                Some(same) if same.kind == "missing" => {}
                Some(same) => *same = issue,
                None => all.push(issue),
            }
        }
        ApiError::Validation(all)
    })
}

/// Parses a JSON object into `T`, reporting where it first failed as a FastAPI-style location.
fn parse_json_first_issue<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(one_issue(vec!["body".into()], "Field required", "missing"));
    }
    // Every request body of the API is an object; serde would otherwise read `[..]` as a struct.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{')
        && serde_json::from_slice::<serde_json::Value>(bytes).is_ok()
    {
        return Err(one_issue(vec!["body".into()], "Input should be a JSON object", "dict_type"));
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().clone();
        let inner = e.into_inner();
        let mut loc: Vec<LocPart> = vec!["body".into()];
        for seg in path.iter() {
            match seg {
                serde_path_to_error::Segment::Seq { index } => loc.push(LocPart::Index(*index)),
                serde_path_to_error::Segment::Map { key }
                | serde_path_to_error::Segment::Enum { variant: key } => loc.push(LocPart::Key(key.clone())),
                serde_path_to_error::Segment::Unknown => {}
            }
        }
        let msg = clean_serde_message(&inner.to_string());
        let kind = if inner.is_syntax() || inner.is_eof() {
            "json_invalid"
        } else if msg.starts_with("missing field") {
            // serde names the missing field in the message, not the path.
            if let Some(field) = msg.split('`').nth(1) {
                loc.push(LocPart::Key(field.to_owned()));
            }
            "missing"
        } else {
            "type_error"
        };
        one_issue(loc, &msg, kind)
    })?;
    // A body is one JSON value: anything after it (`{...} xyz`) makes it malformed.
    de.end().map_err(|_| {
        one_issue(vec!["body".into()], "JSON input has characters after the value", "json_invalid")
    })?;
    Ok(value)
}

/// serde's messages end with " at line L column C", which says nothing to an API client.
fn clean_serde_message(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

fn one_issue(loc: Vec<LocPart>, msg: &str, kind: &str) -> ApiError {
    ApiError::Validation(vec![ValidationIssue { loc, msg: msg.to_owned(), kind: kind.to_owned() }])
}

/// Query parameters deserialized with the name of the offending parameter.
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(de).map(QueryParams).map_err(|e| {
            let mut loc: Vec<LocPart> = vec!["query".into()];
            let path = e.path().to_string();
            let msg = e.into_inner().to_string();
            if path != "." {
                loc.push(LocPart::Key(path));
            } else if let Some(field) = msg.split('`').nth(1) {
                loc.push(LocPart::Key(field.to_owned()));
            }
            one_issue(loc, &msg, "type_error")
        })
    }
}

/// A `{user_id}` path segment as a user id, or 422 naming it.
pub fn path_user_id(raw: &str) -> Result<UserId, ApiError> {
    UserId::parse(raw).ok_or_else(|| {
        one_issue(vec!["path".into(), "user_id".into()], "Input should be a valid UUID", "uuid_parsing")
    })
}
