//! What every fake plays alike, parameterised by the provider's description
//! ([`crate::description::ProviderDescription`]): its hosts (the real URLs' paths on the fake's
//! loopback base), the OAuth side ([`Issuer`]: consent redirect, code and token bookkeeping,
//! client authentication in the body or by HTTP Basic, the bearer check of data calls), and the
//! record of what reached each route ([`Calls`]). A fake adds only its provider's own answers.

use std::collections::{HashMap, HashSet};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::json;
use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::{OauthClient, ProviderAccount, ProviderCredentials};

use crate::config::Endpoints;
use crate::description::ProviderDescription;
use crate::oauth::ClientAuth;

/// The path of one of the provider's real URLs (`https://host/oauth/token` -> `/oauth/token`;
/// `` for a bare host): where the fake serves it.
pub fn path(url: &str) -> &str {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    after_scheme.find('/').map_or("", |i| &after_scheme[i..])
}

/// The endpoints of a fake served at `base`: the description's real URLs with their host
/// replaced by the fake's.
pub fn endpoints(base: &str, description: &ProviderDescription) -> Endpoints {
    Endpoints {
        authorize: format!("{base}{}", path(description.authorize_url)),
        token: format!("{base}{}", path(description.token_url)),
        api: format!("{base}{}", path(description.api_url)),
    }
}

fn header_value(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok())
}

/// The access token of an `Authorization: Bearer` header.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    header_value(headers).and_then(|v| v.strip_prefix("Bearer "))
}

/// An RFC 6749 error answer (`{"error": code}`).
pub fn oauth_error(status: StatusCode, code: &str) -> Response {
    (status, axum::Json(json!({"error": code}))).into_response()
}

/// The calls that reached each route, and the query (or form) each one carried.
#[derive(Default)]
pub struct Calls {
    counts: HashMap<String, u32>,
    queries: HashMap<String, Vec<HashMap<String, String>>>,
}

impl Calls {
    /// One call of `route` with `query`.
    pub fn count(&mut self, route: impl Into<String>, query: HashMap<String, String>) {
        let route = route.into();
        *self.counts.entry(route.clone()).or_default() += 1;
        self.queries.entry(route).or_default().push(query);
    }

    /// One call of `route`, its query not kept.
    pub fn hit(&mut self, route: &str) {
        *self.counts.entry(route.to_owned()).or_default() += 1;
    }

    /// How many calls reached `route`.
    pub fn of(&self, route: &str) -> u32 {
        self.counts.get(route).copied().unwrap_or(0)
    }

    /// Every call, whichever route.
    pub fn total(&self) -> u32 {
        self.counts.values().sum()
    }

    /// The queries `route` received, in order.
    pub fn queries(&self, route: &str) -> Vec<HashMap<String, String>> {
        self.queries.get(route).cloned().unwrap_or_default()
    }
}

/// The OAuth side every fake plays alike: one client, authenticated as the provider's
/// description says; codes the consent page issues, usable once; access tokens; refresh tokens
/// usable once and replaced on use.
pub struct Issuer {
    pub client: OauthClient,
    auth: ClientAuth,
    prefix: &'static str,
    /// Each live code with the consent query that issued it.
    codes: HashMap<String, HashMap<String, String>>,
    /// Whether a refresh token ends when used (replaced by the new one the answer carries).
    single_use_refresh: bool,
    access: HashSet<String>,
    refresh: HashSet<String>,
    serial: u64,
}

impl Issuer {
    /// The issuer of the provider `description` describes, its values named `prefix-...`.
    pub fn new(description: &ProviderDescription, prefix: &'static str, client: OauthClient) -> Self {
        Self {
            client,
            auth: description.client_auth,
            prefix,
            codes: HashMap::new(),
            single_use_refresh: true,
            access: HashSet::new(),
            refresh: HashSet::new(),
            serial: 0,
        }
    }

    /// A new opaque value (code, token, nonce).
    pub fn mint(&mut self, kind: &str) -> String {
        self.serial += 1;
        format!("{}-{kind}-{}", self.prefix, self.serial)
    }

    /// A new access token and refresh token.
    pub fn issue(&mut self) -> (String, String) {
        let (access, refresh) = (self.mint("access"), self.mint("refresh"));
        self.access.insert(access.clone());
        self.refresh.insert(refresh.clone());
        (access, refresh)
    }

    /// An account holding newly issued tokens, as if linked.
    pub fn account(&mut self, external_user_id: String) -> ProviderAccount {
        let (access, refresh) = self.issue();
        ProviderAccount {
            external_user_id,
            credentials: ProviderCredentials {
                access_token: Secret::new(access),
                refresh_token: Some(Secret::new(refresh)),
                expires_at: None,
                scopes: vec![],
            },
        }
    }

    /// The consent page's answer: the browser sent back to `redirect_uri` with a new code and
    /// the `state`; 400 for another client, a missing callback, or a `response_type` other than
    /// `code` (RFC 6749 section 4.1.1).
    pub fn consent(&mut self, query: &HashMap<String, String>) -> Response {
        let known = query.get("client_id") == Some(&self.client.client_id);
        let target = query.get("redirect_uri").and_then(|r| url::Url::parse(r).ok());
        let (Some(mut target), Some(state), true) = (target, query.get("state"), known) else {
            return oauth_error(StatusCode::BAD_REQUEST, "invalid_request");
        };
        if query.get("response_type").map(String::as_str) != Some("code") {
            return oauth_error(StatusCode::BAD_REQUEST, "unsupported_response_type");
        }
        let code = self.mint("code");
        self.codes.insert(code.clone(), query.clone());
        target.query_pairs_mut().append_pair("code", &code).append_pair("state", state);
        (StatusCode::FOUND, [(header::LOCATION, target.to_string())]).into_response()
    }

    /// Whether a token request names this client with its secret, in the form's body or by
    /// HTTP Basic as the provider takes it.
    pub fn authenticates(&self, form: &HashMap<String, String>, headers: &HeaderMap) -> bool {
        match self.auth {
            ClientAuth::Body | ClientAuth::Query => self.in_form(form),
            ClientAuth::Basic => self.basic(headers),
        }
    }

    /// Whether a form (or query) names this client with its secret.
    pub fn in_form(&self, form: &HashMap<String, String>) -> bool {
        form.get("client_id") == Some(&self.client.client_id)
            && form.get("client_secret").map(String::as_str) == Some(self.client.client_secret.expose())
    }

    /// Whether the request names this client with its secret by HTTP Basic.
    pub fn basic(&self, headers: &HeaderMap) -> bool {
        let Some(encoded) = header_value(headers).and_then(|v| v.strip_prefix("Basic ")) else {
            return false;
        };
        let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).unwrap_or_default();
        decoded == format!("{}:{}", self.client.client_id, self.client.client_secret.expose()).into_bytes()
    }

    /// Refresh tokens stay live when used (the provider sends no new one).
    pub fn reusable_refresh(mut self) -> Self {
        self.single_use_refresh = false;
        self
    }

    /// The consent query that issued `code`, while the code is live.
    pub fn consent_of(&self, code: &str) -> Option<&HashMap<String, String>> {
        self.codes.get(code)
    }

    /// Uses up the form's code or refresh token: whether it was a live one.
    pub fn redeem(&mut self, form: &HashMap<String, String>) -> bool {
        let field = |k: &str| form.get(k).map(String::as_str);
        match (field("grant_type"), field("code"), field("refresh_token")) {
            (Some("authorization_code"), Some(code), _) => self.codes.remove(code).is_some(),
            (Some("refresh_token"), _, Some(refresh)) if self.single_use_refresh => {
                self.refresh.remove(refresh)
            }
            (Some("refresh_token"), _, Some(refresh)) => self.refresh.contains(refresh),
            _ => false,
        }
    }

    /// Whether the request's `Authorization: Bearer` token is a live access token.
    pub fn admits(&self, headers: &HeaderMap) -> bool {
        bearer(headers).is_some_and(|t| self.access.contains(t))
    }

    /// Ends one access token: whether it was live.
    pub fn revoke_access(&mut self, token: &str) -> bool {
        self.access.remove(token)
    }

    /// Ends one refresh token: whether it was live.
    pub fn revoke_refresh(&mut self, token: &str) -> bool {
        self.refresh.remove(token)
    }

    /// Ends every refresh token (the user removed the app's access).
    pub fn revoke_refresh_tokens(&mut self) {
        self.refresh.clear();
    }

    /// Ends every access token (as when they expire).
    pub fn expire_access(&mut self) {
        self.access.clear();
    }

    /// Ends every token (the user's access revoked).
    pub fn revoke_all(&mut self) {
        self.access.clear();
        self.refresh.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fake_serves_the_real_paths_on_its_own_base() {
        assert_eq!(path("https://api.example.com/oauth/token"), "/oauth/token");
        assert_eq!(path("https://api.example.com"), "");
        let e = endpoints("http://127.0.0.1:9", &crate::whoop::DESCRIPTION);
        assert_eq!(e.authorize, "http://127.0.0.1:9/oauth/oauth2/auth");
        assert_eq!(e.api, "http://127.0.0.1:9/developer");
    }

    #[test]
    fn the_client_is_authenticated_as_the_provider_s_description_says() {
        let client = OauthClient { client_id: "id".into(), client_secret: Secret::new("secret") };
        let form: HashMap<String, String> =
            [("client_id", "id"), ("client_secret", "secret")].map(|(k, v)| (k.into(), v.into())).into();
        let mut basic = HeaderMap::new();
        let encoded = base64::engine::general_purpose::STANDARD.encode("id:secret");
        basic.insert(header::AUTHORIZATION, format!("Basic {encoded}").parse().unwrap());

        let in_body = Issuer::new(&crate::oura::DESCRIPTION, "oura", client.clone());
        assert!(in_body.authenticates(&form, &HeaderMap::new()));
        assert!(!in_body.authenticates(&HashMap::new(), &basic), "Oura takes the client in the body");

        let by_basic = Issuer::new(&crate::polar::DESCRIPTION, "polar", client);
        assert!(by_basic.authenticates(&HashMap::new(), &basic));
        assert!(!by_basic.authenticates(&form, &HeaderMap::new()), "Polar takes the client by HTTP Basic");
    }
}
