//! The simulated providers' consent page (an axum router), behind the `consent` feature: the
//! link API and the local stack serve it; workers do not link it.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use wearlab_domain::common::provider_catalog::catalog;
use wearlab_domain::linking::oauth::callback_url;
use wearlab_domain::linking::with_query;
use wearlab_web::AppState;
use wearlab_web::pages::{self, escape};

use crate::consent::*;

pub const DENY: &str = "deny";
pub const ERROR: &str = "error";
const DECISIONS: [(&str, &str); 4] = [
    (ALLOW, "Allow: the connection is made"),
    (PARTIAL, "Allow without the required scopes: required_scopes_not_granted"),
    (DENY, "Deny: user_cancelled"),
    (ERROR, "Allow, but the provider fails to issue tokens: provider_api_error"),
];

#[derive(Debug, Deserialize)]
struct ConsentParams {
    #[serde(default)]
    client_id: String,
    #[serde(default)]
    redirect_uri: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    decision: Option<String>,
    /// The simulated account at the provider; behaviour flags in it apply (see the docs).
    #[serde(default)]
    account: Option<String>,
}

/// The consent page's routes.
pub fn routes() -> Router<AppState> {
    Router::new().route(CONSENT_PATH, get(consent))
}

fn bad(msg: &str) -> Response {
    (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], msg.to_owned())
        .into_response()
}

async fn consent(
    State(s): State<AppState>,
    Path(provider): Path<String>,
    Query(q): Query<ConsentParams>,
    headers: HeaderMap,
) -> Response {
    let mut res = answer(&provider, q, &s.public_links(&headers).base_url);
    pages::set_security_headers(res.headers_mut(), None);
    res
}

fn answer(provider: &str, q: ConsentParams, base_url: &str) -> Response {
    let provider = provider.to_owned();
    let Some(p) = catalog().get(&provider).filter(|p| p.is_oauth()) else {
        return bad("unknown OAuth provider");
    };
    if q.client_id.is_empty() || q.state.is_empty() {
        return bad("client_id and state are required");
    }
    if q.redirect_uri != callback_url(base_url, &provider) {
        return bad("redirect_uri must be this API's OAuth callback for the provider");
    }
    let Some(decision) = q.decision.as_deref() else {
        let mut links = String::new();
        for (d, label) in DECISIONS {
            let mut params: Vec<(&str, &str)> = vec![
                ("client_id", &q.client_id),
                ("redirect_uri", &q.redirect_uri),
                ("state", &q.state),
                ("decision", d),
            ];
            if let Some(a) = &q.account {
                params.push(("account", a));
            }
            let href = with_query(&CONSENT_PATH.replace("{provider}", &provider), &params);
            links.push_str(&format!("<li><a href=\"{}\">{}</a></li>", escape(&href), escape(label)));
        }
        return Html(format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>{name} (simulated)</title></head>\
             <body><h1>{name} (simulated provider)</h1><p>Wearlab asks to read your {name} data.</p>\
             <ul>{links}</ul></body></html>",
            name = escape(&p.name)
        ))
        .into_response();
    };
    let location = match decision {
        DENY => with_query(&q.redirect_uri, &[("error", "access_denied"), ("state", &q.state)]),
        ALLOW | PARTIAL | ERROR => {
            let account = q
                .account
                .clone()
                .filter(|a| !a.trim().is_empty())
                .unwrap_or_else(|| format!("oauth-{}", crate::short_hash(&[&provider, &q.state])));
            let grant = Grant {
                provider: provider.clone(),
                client_id: q.client_id.clone(),
                decision: decision.to_owned(),
                account,
            };
            with_query(&q.redirect_uri, &[("code", &grant.encode()), ("state", &q.state)])
        }
        _ => return bad("decision must be one of allow, partial, deny, error"),
    };
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}
