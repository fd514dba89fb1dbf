//! One module per resource; each handler parses, calls one use case of
//! `wearlab_domain::linking`, and answers.

pub mod catalog;
pub mod link;
pub mod preferences;
pub mod team;
pub mod web;
pub mod webhooks;

use http::HeaderMap;
use wearlab_domain::linking::tokens::LINK_TOKEN_HEADER;

/// The link token header's value, if any.
pub(crate) fn link_token(headers: &HeaderMap) -> Option<&str> {
    headers.get(LINK_TOKEN_HEADER).and_then(|v| v.to_str().ok())
}

/// The API's public address: `WEARLAB_PUBLIC_URL` when set, else the request's own host
/// (API Gateway's domain on AWS, `127.0.0.1:PORT` locally).
pub(crate) fn base_url(headers: &HeaderMap) -> String {
    if let Ok(u) = std::env::var("WEARLAB_PUBLIC_URL")
        && !u.trim().is_empty()
    {
        return u.trim().trim_end_matches('/').to_owned();
    }
    let host = headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b)))
        .unwrap_or("localhost");
    let local = host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]");
    let proto = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .filter(|p| *p == "http" || *p == "https")
        .unwrap_or(if local { "http" } else { "https" });
    format!("{proto}://{host}")
}
