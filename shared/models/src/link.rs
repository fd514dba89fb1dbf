//! Link tokens and the link flows (password with MFA, OAuth, demo), as the API speaks them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{LinkErrorType, LinkState, open_enum};

open_enum!(
    /// Where a provider account lives, for providers with regional services.
    Region {
        Us => "us", Eu => "eu", De => "de", Fr => "fr", Ca => "ca", Br => "br", Ar => "ar", Cl => "cl",
        Co => "co", Mx => "mx", Gb => "gb", Ie => "ie", Au => "au", Nz => "nz", Nl => "nl", At => "at",
        Be => "be", Bh => "bh", Ch => "ch", Cz => "cz", Dk => "dk", Eg => "eg", Es => "es", Fi => "fi",
        Gr => "gr", Hr => "hr", Il => "il", It => "it", Jo => "jo", Kw => "kw", Lb => "lb", Lu => "lu",
        No => "no", Om => "om", Pl => "pl", Pt => "pt", Qa => "qa", Sa => "sa", Se => "se", Si => "si",
        Sk => "sk", Tr => "tr", Za => "za", In => "in", Sg => "sg", Hk => "hk", Kr => "kr", Ph => "ph",
        Tw => "tw",
    }
);

open_enum!(
    /// How the provider sends its one-time code.
    MfaMethod {
        Sms => "sms",
        Email => "email",
    }
);

/// POST /v2/link/token body.
#[derive(Debug, Clone, Deserialize, PartialEq, ToSchema)]
pub struct LinkTokenBody {
    #[schema(value_type = Uuid)]
    pub user_id: String,
    /// Restricts the token to this provider.
    #[serde(default)]
    pub provider: Option<String>,
    /// Where the end user's browser goes when an OAuth link ends; echoed in Link results.
    #[serde(default)]
    pub redirect_url: Option<String>,
    /// Restricts the token to these providers. A set: each provider at most once.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub filter_on_providers: Option<Vec<String>>,
    /// The language of the hosted link page for this token, a BCP 47 tag (`en`, `es`, `de`,
    /// `fr`, `pt`; a regional tag such as `pt-BR` chooses its language). Without it the page
    /// follows the browser's `Accept-Language`, else English.
    #[serde(default)]
    #[schema(example = "es", max_length = 35)]
    pub language: Option<String>,
}

/// POST /v2/link/token answer. The token is shown once; it is valid 60 minutes, for one
/// successful connection of the user it was made for.
#[derive(Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct LinkTokenAnswer {
    pub link_token: String,
    /// The hosted link page for this token.
    pub link_web_url: String,
}

impl std::fmt::Debug for LinkTokenAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkTokenAnswer { .. }")
    }
}

/// POST /v2/link/provider/password/{provider} body.
#[derive(Clone, Deserialize, PartialEq, ToSchema)]
pub struct PasswordLinkBody {
    pub username: String,
    pub password: String,
    /// Only for providers with regional services; others ignore it.
    #[serde(default)]
    pub region: Option<Region>,
}

impl std::fmt::Debug for PasswordLinkBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordLinkBody").field("region", &self.region).finish_non_exhaustive()
    }
}

/// POST /v2/link/provider/password/{provider}/complete_mfa body.
#[derive(Clone, Deserialize, PartialEq, ToSchema)]
pub struct CompleteMfaBody {
    pub mfa_code: String,
}

impl std::fmt::Debug for CompleteMfaBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompleteMfaBody { .. }")
    }
}

/// The provider's request for a one-time code.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ProviderMfaRequest {
    pub method: MfaMethod,
    /// Where the code was sent, redacted (e.g. `+1 *** *** **34`, `j***@e******.com`).
    pub hint: String,
}

/// The outcome of a password link step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct LinkResult {
    pub state: LinkState,
    /// The redirect URL given when the link token was created.
    #[schema(required = true)]
    pub redirect_url: Option<String>,
    /// Set only when `state` is `error`.
    #[schema(required = true)]
    pub error_type: Option<LinkErrorType>,
    /// Developer-readable text; set only when `state` is `error`.
    #[schema(required = true)]
    pub error: Option<String>,
    /// Set only when `state` is `pending_provider_mfa`.
    #[schema(required = true)]
    pub provider_mfa: Option<ProviderMfaRequest>,
    /// Deprecated: the provider slug of the request.
    #[schema(deprecated)]
    pub provider: String,
    /// Deprecated: `state == success`.
    #[schema(deprecated)]
    pub connected: bool,
    /// Deprecated: the user's id at the provider once connected.
    #[schema(required = true, deprecated)]
    pub provider_id: Option<String>,
}

/// POST /v2/link/connect/demo body.
#[derive(Debug, Clone, Deserialize, PartialEq, ToSchema)]
pub struct DemoConnectionBody {
    #[schema(value_type = Uuid)]
    pub user_id: String,
    /// One of apple_health_kit, fitbit, freestyle_libre, oura.
    pub provider: String,
}

/// POST /v2/link/connect/demo answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct DemoConnectionAnswer {
    pub success: bool,
    /// What happened, for people.
    pub detail: String,
}
