//! The user portal opened by a portal link: `/v3/portal?token=...` (launch links) and
//! `/v3/p/{code}` (short communications links). Server-rendered HTML; the link's signature and
//! expiry are checked on every visit. No API key: the link is the authorization.

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use wearlab_domain::lab::portal::{self, Access, Denied};
use wearlab_web::{ApiError, AppState, QueryParams};

use super::orders::Net;
use crate::html;
use crate::links::links;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PortalParams {
    /// The signed token of a portal link.
    token: String,
}

async fn answer(
    s: &AppState,
    net: &Net,
    headers: &HeaderMap,
    checked: Result<Access, Denied>,
) -> Result<Response, ApiError> {
    let access = match checked {
        Ok(a) => a,
        Err(denied) => {
            let (status, title, text) = match denied {
                Denied::Invalid => {
                    (StatusCode::FORBIDDEN, "Link not valid", "This link is not valid. Ask for a new one.")
                }
                Denied::Expired => {
                    (StatusCode::GONE, "Link expired", "This link has expired. Ask for a new one.")
                }
                Denied::Gone => {
                    (StatusCode::NOT_FOUND, "Not available", "This portal is no longer available.")
                }
            };
            return Ok((status, Html(html::message_page(title, text))).into_response());
        }
    };
    let view = portal::view(&s.deps, net.as_ref(), &access, &links(headers)).await?;
    let mut res = Html(html::portal_page(&view)).into_response();
    // The page shows personal data: never cache it, never leak the link onwards.
    let h = res.headers_mut();
    h.insert("cache-control", axum::http::HeaderValue::from_static("no-store"));
    h.insert("referrer-policy", axum::http::HeaderValue::from_static("no-referrer"));
    Ok(res)
}

/// Opens the portal of a launch link (HTML).
#[utoipa::path(get, path = "/v3/portal", operation_id = "open_portal", tag = "lab", params(PortalParams),
    responses(
        (status = 200, description = "The user's orders.", content_type = "text/html", body = String),
        (status = 403, description = "Not a valid link.", content_type = "text/html", body = String),
        (status = 404, description = "The user is gone.", content_type = "text/html", body = String),
        (status = 410, description = "The link has expired.", content_type = "text/html", body = String),
    ))]
pub async fn by_token(
    State(s): State<AppState>,
    Extension(net): Extension<Net>,
    headers: HeaderMap,
    QueryParams(p): QueryParams<PortalParams>,
) -> Result<Response, ApiError> {
    let checked = portal::check_token(&s.deps, &p.token).await?;
    answer(&s, &net, &headers, checked).await
}

/// Opens the portal of a short communications link (HTML).
#[utoipa::path(get, path = "/v3/p/{code}", operation_id = "open_portal_short_link", tag = "lab",
    params(("code" = String, Path, description = "The short link's code.")),
    responses(
        (status = 200, description = "The user's orders.", content_type = "text/html", body = String),
        (status = 403, description = "Not a valid link.", content_type = "text/html", body = String),
        (status = 404, description = "The user is gone.", content_type = "text/html", body = String),
        (status = 410, description = "The link has expired.", content_type = "text/html", body = String),
    ))]
pub async fn by_code(
    State(s): State<AppState>,
    Extension(net): Extension<Net>,
    headers: HeaderMap,
    Path(code): Path<String>,
) -> Result<Response, ApiError> {
    let checked = portal::check_code(&s.deps, &code).await?;
    answer(&s, &net, &headers, checked).await
}
