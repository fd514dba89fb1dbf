//! The public base URL of a request, for links in answers.

use axum::http::HeaderMap;
use wearlab_domain::lab::Links;

pub fn links(headers: &HeaderMap) -> Links {
    let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    Links::from_request(h("x-forwarded-host").or(h("host")), h("x-forwarded-proto"))
}
