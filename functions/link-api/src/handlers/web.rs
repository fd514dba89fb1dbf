//! Browser-facing routes, authorised by the OAuth state or the link token alone (a browser
//! carries no API key): the OAuth callback and the hosted link page. Not in the OpenAPI
//! document, whose operations all take the API key.

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use wearlab_domain::linking::oauth::{self, CallbackParams};
use wearlab_domain::linking::{catalog, encode, tokens};
use wearlab_models::AuthType;
use wearlab_web::{ApiError, AppState, QueryParams};

use super::base_url;

pub const CALLBACK_PATH: &str = "/v2/link/provider/oauth/{provider}/callback";
pub const PAGE_PATH: &str = "/v2/link/web";
pub const PAGE_OAUTH_PATH: &str = "/v2/link/web/oauth/{provider}";

/// Where the provider sends the browser back: on to the token's `redirect_url` with the
/// outcome, or the Link result as JSON when the token has no redirect URL.
pub async fn oauth_callback(
    State(s): State<AppState>,
    Path(provider): Path<String>,
    QueryParams(params): QueryParams<CallbackParams>,
) -> Result<Response, ApiError> {
    let out = oauth::callback(&s.deps, &provider, params).await?;
    Ok(match out.redirect_to {
        Some(url) => Redirect::to(&url).into_response(),
        None => Json(out.result).into_response(),
    })
}

#[derive(Debug, Deserialize)]
pub struct PageParams {
    #[serde(default)]
    token: Option<String>,
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn page_html(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head><body><h1>{t}</h1>{body}</body></html>",
        t = escape_html(title)
    )
}

/// The hosted link page of a token: the OAuth providers it may link, each one click away.
pub async fn page(
    State(s): State<AppState>,
    QueryParams(p): QueryParams<PageParams>,
) -> Result<Response, ApiError> {
    let token = match tokens::peek(&s.deps, p.token.as_deref()).await? {
        Ok(t) => t,
        Err(r) => {
            let html = page_html("Link unavailable", &format!("<p>{}</p>", escape_html(&r.error)));
            return Ok((StatusCode::BAD_REQUEST, Html(html)).into_response());
        }
    };
    let raw = p.token.unwrap_or_default();
    let mut items = String::new();
    for pr in catalog().all().iter().filter(|pr| token.record.allows(&pr.slug)) {
        let line = if pr.is_oauth() {
            let href = format!(
                "{}?token={}",
                PAGE_OAUTH_PATH.replace("{provider}", &encode(&pr.slug)),
                encode(&raw)
            );
            format!("<li><a href=\"{}\">{}</a></li>", escape_html(&href), escape_html(&pr.name))
        } else if pr.is(&AuthType::Password) {
            format!("<li>{} (username and password, through the app)</li>", escape_html(&pr.name))
        } else {
            format!("<li>{} (through the mobile SDK or by email)</li>", escape_html(&pr.name))
        };
        items.push_str(&line);
    }
    Ok(Html(page_html("Connect a health data provider", &format!("<ul>{items}</ul>"))).into_response())
}

/// Starts an OAuth consent from the hosted page.
pub async fn page_oauth(
    State(s): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    QueryParams(p): QueryParams<PageParams>,
) -> Result<Response, ApiError> {
    let entry = oauth::start(&s.deps, None, p.token.as_deref(), &provider, &base_url(&headers)).await?;
    Ok(Redirect::to(&entry.oauth_url).into_response())
}
