//! Which OAuth application and which hosts an adapter uses, from configuration. Base URLs are
//! configuration so the same adapter runs against a local fake in tests and against the real
//! hosts in production (the defaults).
//!
//! Variables, per provider (slug upper-cased, e.g. `OURA`, `WHOOP_V2`):
//! `WEARLAB_PROVIDER_<SLUG>_CLIENT_ID`, `..._CLIENT_SECRET` (the platform's app; absent: the
//! provider links only through a team's own app, or is demo-only), `..._AUTHORIZE_URL`,
//! `..._TOKEN_URL`, `..._API_URL` (override the real hosts), `..._PUSH_TOKEN` (the verification
//! token given to the provider when subscribing to its push notifications).

use wearlab_domain::common::crypto::Secret;
use wearlab_domain::ports::providers::OauthClient;

/// Where a provider's API lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// The consent page (the browser goes there).
    pub authorize: String,
    /// The token endpoint (code exchange, refresh).
    pub token: String,
    /// The data API's base, without a trailing slash.
    pub api: String,
}

impl Endpoints {
    /// The endpoint `name` beside the token endpoint (`.../oauth/token` -> `.../oauth/{name}`),
    /// where providers put their revoke and deauthorize calls; `None` when the token endpoint
    /// does not end in `/token`.
    pub fn beside_token(&self, name: &str) -> Option<String> {
        self.token.strip_suffix("/token").map(|base| format!("{base}/{name}"))
    }

    /// [`Endpoints::beside_token`], else `name` under the token endpoint: moving the token
    /// endpoint (tests, local fakes) moves it too.
    pub fn next_to_token(&self, name: &str) -> String {
        self.beside_token(name).unwrap_or_else(|| format!("{}/{name}", self.token))
    }
}

/// One provider's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    pub endpoints: Endpoints,
    /// The platform's OAuth application, when the operator registered one.
    pub platform_client: Option<OauthClient>,
    pub push_token: Option<Secret>,
}

impl AppConfig {
    /// The configuration of `slug` read through `var` (the environment in production; a map
    /// in tests), with `defaults` for the hosts.
    pub fn from_vars(slug: &str, defaults: Endpoints, var: impl Fn(&str) -> Option<String>) -> Self {
        let prefix = format!("WEARLAB_PROVIDER_{}_", slug.to_ascii_uppercase());
        let get = |name: &str| {
            var(&format!("{prefix}{name}")).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
        };
        let endpoints = Endpoints {
            authorize: get("AUTHORIZE_URL").unwrap_or(defaults.authorize),
            token: get("TOKEN_URL").unwrap_or(defaults.token),
            api: get("API_URL").unwrap_or(defaults.api).trim_end_matches('/').to_owned(),
        };
        let platform_client = match (get("CLIENT_ID"), get("CLIENT_SECRET")) {
            (Some(client_id), Some(secret)) => {
                Some(OauthClient { client_id, client_secret: Secret::new(secret) })
            }
            _ => None,
        };
        Self { endpoints, platform_client, push_token: get("PUSH_TOKEN").map(Secret::new) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Endpoints {
        Endpoints {
            authorize: "https://a/auth".into(),
            token: "https://a/token".into(),
            api: "https://a".into(),
        }
    }

    #[test]
    fn hosts_default_to_the_real_ones_and_an_app_needs_both_halves() {
        let c = AppConfig::from_vars("oura", defaults(), |_| None);
        assert_eq!(c.endpoints, defaults());
        assert!(c.platform_client.is_none());
        let c = AppConfig::from_vars("whoop_v2", defaults(), |k| match k {
            "WEARLAB_PROVIDER_WHOOP_V2_CLIENT_ID" => Some("id".into()),
            "WEARLAB_PROVIDER_WHOOP_V2_API_URL" => Some("http://127.0.0.1:9/".into()),
            _ => None,
        });
        assert!(c.platform_client.is_none(), "an id without a secret is no app");
        assert_eq!(c.endpoints.api, "http://127.0.0.1:9");
    }
}
