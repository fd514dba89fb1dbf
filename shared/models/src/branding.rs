//! The team's brand on the hosted pages (the link widget and the user portal).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The team's brand as the hosted pages show it. Each field is null when unset; a team that
/// never set its brand has every field null (the pages then show Wearlab's own look).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct Branding {
    /// The name the pages show in their heading ("Acme Health wants to connect ...").
    #[schema(example = "Acme Health")]
    pub display_name: Option<String>,
    /// The logo the pages show: an `https://` URL the team gave, or this deployment's own
    /// address of the logo uploaded with `PUT /v2/team/branding/logo`.
    #[schema(example = "https://cdn.acme.example/logo.png")]
    pub logo_url: Option<String>,
    /// The colour of buttons and links, `#rrggbb` in lower case.
    #[schema(example = "#1f5fbf")]
    pub accent_color: Option<String>,
}

/// PUT /v2/team/branding body: the whole brand (an omitted or null field is unset).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, ToSchema)]
pub struct BrandingBody {
    /// 1 to 80 characters once trimmed, no control characters.
    #[serde(default)]
    #[schema(example = "Acme Health", max_length = 80)]
    pub display_name: Option<String>,
    /// An `https://` URL of at most 2048 bytes, without credentials or fragment. Sending back
    /// the address of the uploaded logo (as `GET` answers it) keeps that logo.
    #[serde(default)]
    #[schema(example = "https://cdn.acme.example/logo.png", max_length = 2048)]
    pub logo_url: Option<String>,
    /// `#rrggbb` (any case) with a contrast ratio of at least 4.5:1 against white (WCAG 2.1),
    /// since the pages put white text on it and use it for links on white.
    #[serde(default)]
    #[schema(example = "#1f5fbf", pattern = "^#[0-9A-Fa-f]{6}$")]
    pub accent_color: Option<String>,
}

/// PUT /v2/team/branding/logo body: the image's bytes as they are.
#[derive(Debug, Clone, PartialEq, ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct LogoImageBody(pub Vec<u8>);
