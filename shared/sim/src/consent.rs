//! The simulated consent page "at the provider". Without `decision` it shows the choices; with
//! one it sends the browser back to `redirect_uri` as a provider would: a code
//! (`allow`, `partial`, `error`) or `error=access_denied` (`deny`). It is served on the API's
//! own address, so it sends the browser nowhere but this API's OAuth callback for the provider
//! (anything else would make the API's domain an open redirect), and its answers carry the
//! hosted pages' headers. Deployed functions serve it only where simulated providers may be
//! linked (`WEARLAB_SIMULATED_PROVIDERS=true`).

use serde::{Deserialize, Serialize};
use wearlab_domain::linking::with_query;
use wearlab_domain::ports::providers::AuthorizeRequest;

/// Path of the consent page (under the API's own address).
pub const CONSENT_PATH: &str = "/v2/link/sim/oauth/{provider}/authorize";
pub const ALLOW: &str = "allow";
pub const PARTIAL: &str = "partial";

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
    // Only the consent page issues codes; without it the simulator still redeems them.
    #[cfg_attr(not(feature = "consent"), allow(dead_code))]
    pub(crate) fn encode(&self) -> String {
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
