//! The simulated consent page "at the provider". Without `decision` it shows the choices; with
//! one it sends the browser back to `redirect_uri` as a provider would: a code
//! (`allow`, `partial`, `error`) or `error=access_denied` (`deny`).

use axum::Router;
use axum::extract::{Path, Query};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde::{Deserialize, Serialize};
use wearlab_domain::catalog::catalog;
use wearlab_domain::linking::with_query;
use wearlab_domain::ports::providers::AuthorizeRequest;

/// Path of the consent page (under the API's own address).
pub const CONSENT_PATH: &str = "/v2/link/sim/oauth/{provider}/authorize";
pub const ALLOW: &str = "allow";
pub const PARTIAL: &str = "partial";
pub const DENY: &str = "deny";
pub const ERROR: &str = "error";
const DECISIONS: [(&str, &str); 4] = [
    (ALLOW, "Allow: the connection is made"),
    (PARTIAL, "Allow without the required scopes: required_scopes_not_granted"),
    (DENY, "Deny: user_cancelled"),
    (ERROR, "Allow, but the provider fails to issue tokens: provider_api_error"),
];

/// What a code stands for (the simulator keeps no state: the code carries it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Grant {
    #[serde(rename = "p")]
    pub provider: String,
    #[serde(rename = "c")]
    pub client_id: String,
    #[serde(rename = "d")]
    pub decision: String,
    #[serde(rename = "a")]
    pub account: String,
}

impl Grant {
    fn encode(&self) -> String {
        format!("simcode.{}", hex::encode(serde_json::to_vec(self).expect("grant serializes")))
    }

    pub(crate) fn decode(code: &str) -> Option<Self> {
        let bytes = hex::decode(code.strip_prefix("simcode.")?).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// The consent URL: the origin of the callback (the simulator is served by the API itself)
/// plus the consent path.
pub(crate) fn authorize_url(provider: &str, request: &AuthorizeRequest) -> String {
    let origin = origin(&request.redirect_uri).unwrap_or_default();
    with_query(
        &format!("{origin}{}", CONSENT_PATH.replace("{provider}", provider)),
        &[
            ("response_type", "code"),
            ("client_id", &request.client_id),
            ("redirect_uri", &request.redirect_uri),
            ("state", &request.state),
            ("scope", "read_health"),
        ],
    )
}

fn origin(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    let host_len = rest.find('/').unwrap_or(rest.len());
    Some(&url[..scheme.len() + 3 + host_len])
}

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

/// The consent page's routes, for any router state.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new().route(CONSENT_PATH, get(consent))
}

fn bad(msg: &str) -> Response {
    (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], msg.to_owned())
        .into_response()
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

async fn consent(Path(provider): Path<String>, Query(q): Query<ConsentParams>) -> Response {
    let Some(p) = catalog().get(&provider).filter(|p| p.is_oauth()) else {
        return bad("unknown OAuth provider");
    };
    let redirect_ok = q.redirect_uri.starts_with("http://") || q.redirect_uri.starts_with("https://");
    if q.client_id.is_empty() || q.state.is_empty() || !redirect_ok {
        return bad("client_id, state and an http(s) redirect_uri are required");
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
            links.push_str(&format!(
                "<li><a href=\"{}\">{}</a></li>",
                escape_html(&href),
                escape_html(label)
            ));
        }
        return Html(format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>{name} (simulated)</title></head>\
             <body><h1>{name} (simulated provider)</h1><p>Wearlab asks to read your {name} data.</p>\
             <ul>{links}</ul></body></html>",
            name = escape_html(&p.name)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consent_url_is_on_the_callback_origin() {
        let url = authorize_url(
            "oura",
            &AuthorizeRequest {
                client_id: "c".into(),
                redirect_uri: "http://127.0.0.1:8080/v2/link/provider/oauth/oura/callback".into(),
                state: "s".into(),
            },
        );
        assert!(url.starts_with("http://127.0.0.1:8080/v2/link/sim/oauth/oura/authorize?"), "{url}");
        assert!(url.contains("redirect_uri=http%3A%2F%2F127.0.0.1%3A8080%2Fv2%2Flink"), "{url}");
    }

    #[test]
    fn grants_round_trip() {
        let g = Grant {
            provider: "oura".into(),
            client_id: "c".into(),
            decision: ALLOW.into(),
            account: "a".into(),
        };
        assert_eq!(Grant::decode(&g.encode()), Some(g));
        assert_eq!(Grant::decode("nonsense"), None);
    }
}
