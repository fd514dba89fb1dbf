//! One module per resource; each handler parses, calls one use case of
//! `wearlab_domain::linking`, and answers.

pub mod brand;
pub mod catalog;
pub mod link;
pub mod provider_push;
pub mod web;

use http::HeaderMap;
use wearlab_domain::linking::tokens::LINK_TOKEN_HEADER;

/// The link token header's value, if any.
pub(crate) fn link_token(headers: &HeaderMap) -> Option<&str> {
    headers.get(LINK_TOKEN_HEADER).and_then(|v| v.to_str().ok())
}

/// The API's public address (see [`wearlab_web::public_links`]).
pub(crate) fn base_url(s: &wearlab_web::AppState, headers: &HeaderMap) -> String {
    s.public_links(headers).base_url
}
