//! The team's brand on the hosted pages (the link widget and the user portal): a display name,
//! a logo (an `https://` URL or an uploaded image) and an accent colour.
//!
//! The brand is one item (`keys::team_brand`), so the pages read it with [`brand`] in one item
//! read. An uploaded logo is its own item, content-addressed by the SHA-256 of its bytes
//! (`keys::brand_logo`), so the pages' origin serves it by that id alone; the teams using it are
//! listed on it, and it is deleted with the last of them.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wearlab_models::{Branding, BrandingBody, ValidationIssue};

use crate::Deps;
use crate::common::error::{DomainError, issue};
use crate::common::ids::TeamId;
use crate::keys;
use crate::ports::{Condition, Item, StoreError, WriteOp, to_body};

/// Longest display name, in characters once trimmed.
pub const MAX_DISPLAY_NAME_CHARS: usize = 80;
/// Longest logo URL, in bytes.
pub const MAX_LOGO_URL_BYTES: usize = 2048;
/// Largest uploaded logo: 100 KiB (its item, base64 and all, stays far under DynamoDB's 400 KB).
pub const MAX_LOGO_BYTES: usize = 100 * 1024;
/// The least contrast ratio of the accent colour against white: WCAG 2.1 success criterion
/// 1.4.3 (Contrast, Minimum) for normal text, https://www.w3.org/TR/WCAG21/#contrast-minimum.
pub const MIN_ACCENT_CONTRAST: f64 = 4.5;
/// Where the hosted pages' origin serves an uploaded logo (`/v2/link/web/brand/{logo_id}`).
pub const LOGO_PATH: &str = "/v2/link/web/brand/";

/// Why a brand field is refused; each is a 422 at its field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BrandError {
    #[error(
        "display_name must be 1-{MAX_DISPLAY_NAME_CHARS} characters once trimmed, without control or text-direction characters"
    )]
    DisplayName,
    #[error(
        "logo_url must be an https:// URL of at most {MAX_LOGO_URL_BYTES} bytes, without credentials or fragment"
    )]
    LogoUrl,
    #[error("accent_color must be a colour #rrggbb")]
    AccentFormat,
    #[error(
        "accent_color {color} has a contrast ratio of {ratio}:1 against white; at least {MIN_ACCENT_CONTRAST}:1 is needed \
         (WCAG 2.1), since the pages put white text on it and use it for links: choose a darker colour"
    )]
    AccentContrast { color: String, ratio: String },
}

impl BrandError {
    fn field(&self) -> &'static str {
        match self {
            Self::DisplayName => "display_name",
            Self::LogoUrl => "logo_url",
            Self::AccentFormat | Self::AccentContrast { .. } => "accent_color",
        }
    }

    fn issue(&self) -> ValidationIssue {
        let kind = match self {
            Self::DisplayName => "string_type",
            Self::LogoUrl => "url_parsing",
            Self::AccentFormat => "string_pattern_mismatch",
            Self::AccentContrast { .. } => "value_error",
        };
        issue(&[self.field()], self.to_string(), kind)
    }
}

impl From<BrandError> for DomainError {
    fn from(e: BrandError) -> Self {
        DomainError::Validation(vec![e.issue()])
    }
}

/// The name the pages show for the team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayName(String);

/// A control character, or a bidirectional override, embedding or isolate (Unicode UAX #9):
/// they would let a name shown to a team's users read as another (U+202E turns
/// "Acme\u{202E}htlaeH" around).
fn hides_text(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

impl DisplayName {
    pub fn parse(s: &str) -> Result<Self, BrandError> {
        let s = s.trim();
        let chars = s.chars().count();
        if chars == 0 || chars > MAX_DISPLAY_NAME_CHARS || s.chars().any(hides_text) {
            return Err(BrandError::DisplayName);
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A logo the team hosts itself: an `https://` URL with a host, without credentials or fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogoUrl(String);

impl LogoUrl {
    pub fn parse(s: &str) -> Result<Self, BrandError> {
        // As written, not only as a URL parser repairs it (`https:///x` would become `https://x/`).
        let authority = s.get(..8).filter(|p| p.eq_ignore_ascii_case("https://")).map(|_| &s[8..]);
        if s.len() > MAX_LOGO_URL_BYTES
            || s.chars().any(|c| c.is_whitespace() || c.is_control() || c == '\\')
            || authority.is_none_or(|a| a.is_empty() || a.starts_with('/'))
        {
            return Err(BrandError::LogoUrl);
        }
        let url = url::Url::parse(s).map_err(|_| BrandError::LogoUrl)?;
        let ok = url.scheme() == "https"
            && url.host_str().is_some_and(|h| !h.is_empty())
            && url.username().is_empty()
            && url.password().is_none()
            && url.fragment().is_none()
            && !s.contains('#')
            && url.as_str().len() <= MAX_LOGO_URL_BYTES;
        if !ok {
            return Err(BrandError::LogoUrl);
        }
        Ok(Self(url.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The colour of buttons and links: `#rrggbb` in lower case, dark enough that white text on it
/// and it as text on white keep WCAG 2.1's 4.5:1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccentColor([u8; 3]);

impl AccentColor {
    pub fn parse(s: &str) -> Result<Self, BrandError> {
        let hex = s.strip_prefix('#').filter(|h| h.len() == 6 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        let hex = hex.ok_or(BrandError::AccentFormat)?;
        let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| BrandError::AccentFormat);
        let color = Self([channel(0)?, channel(2)?, channel(4)?]);
        let ratio = color.contrast_with_white();
        if ratio < MIN_ACCENT_CONTRAST {
            // Rounded down, so a refused colour never shows as 4.50:1.
            let shown = (ratio * 100.0).floor() / 100.0;
            return Err(BrandError::AccentContrast { color: color.css(), ratio: format!("{shown:.2}") });
        }
        Ok(color)
    }

    /// `#rrggbb`, lower case.
    pub fn css(&self) -> String {
        format!("#{}", hex::encode(self.0))
    }

    /// WCAG 2.1 contrast ratio against white (1 to 21):
    /// https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio
    pub fn contrast_with_white(&self) -> f64 {
        contrast_ratio(relative_luminance(self.0), 1.0)
    }
}

/// WCAG 2.1 relative luminance of an sRGB colour:
/// https://www.w3.org/TR/WCAG21/#dfn-relative-luminance
fn relative_luminance(rgb: [u8; 3]) -> f64 {
    let linear = |v: u8| {
        let c = f64::from(v) / 255.0;
        if c <= 0.03928 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
    };
    0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2])
}

/// WCAG 2.1 contrast ratio `(L1 + 0.05) / (L2 + 0.05)`, the lighter over the darker.
fn contrast_ratio(a: f64, b: f64) -> f64 {
    let (light, dark) = if a >= b { (a, b) } else { (b, a) };
    (light + 0.05) / (dark + 0.05)
}

/// The image formats a logo may have (no SVG: it can carry script).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogoType {
    Png,
    Jpeg,
    Webp,
}

impl LogoType {
    pub const ALL: [LogoType; 3] = [Self::Png, Self::Jpeg, Self::Webp];

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Webp => "image/webp",
        }
    }

    /// The type a `Content-Type` header names (parameters ignored), if a logo may have it.
    pub fn from_content_type(header: &str) -> Option<Self> {
        let essence = header.split(';').next().unwrap_or_default().trim();
        Self::ALL.into_iter().find(|t| t.content_type().eq_ignore_ascii_case(essence))
    }

    /// The type a request's `Content-Type` declares, checked before its body is read (415).
    pub fn declared(content_type: Option<&str>) -> Result<Self, LogoRefusal> {
        content_type.and_then(Self::from_content_type).ok_or(LogoRefusal::UnsupportedType)
    }

    /// Whether `bytes` start as an image of this type does:
    /// PNG's signature and first chunk IHDR (https://www.w3.org/TR/png-3/#5PNG-file-signature),
    /// JPEG's SOI marker followed by another marker (ITU-T T.81, annex B),
    /// WebP's RIFF header with its size and a VP8/VP8L/VP8X chunk
    /// (https://developers.google.com/speed/webp/docs/riff_container).
    fn matches(self, b: &[u8]) -> bool {
        match self {
            Self::Png => b.len() > 16 && b.starts_with(b"\x89PNG\r\n\x1a\n") && &b[12..16] == b"IHDR",
            Self::Jpeg => b.len() > 4 && b.starts_with(&[0xff, 0xd8, 0xff]),
            Self::Webp => {
                b.len() > 16
                    && b.starts_with(b"RIFF")
                    && &b[8..12] == b"WEBP"
                    && matches!(&b[12..16], b"VP8 " | b"VP8L" | b"VP8X")
                    && u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize == b.len() - 8
            }
        }
    }
}

/// Why an uploaded logo is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LogoRefusal {
    /// Another `Content-Type` than a logo may have (415).
    #[error(
        "a logo is sent as image/png, image/jpeg or image/webp (SVG is not accepted: it can carry script)"
    )]
    UnsupportedType,
    /// Over [`MAX_LOGO_BYTES`] (413).
    #[error("a logo is at most {} KiB", MAX_LOGO_BYTES / 1024)]
    TooLarge,
    /// The bytes are not an image of the declared type (422).
    #[error("the body is not a {0} image")]
    NotThatImage(&'static str),
}

/// The id of an uploaded logo: the SHA-256 (lower-case hex) of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LogoId(String);

impl LogoId {
    /// An id as a path names it; `None` for anything but 64 lower-case hex digits.
    pub fn parse(s: &str) -> Option<Self> {
        (s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
            .then(|| Self(s.to_owned()))
    }

    fn of(bytes: &[u8]) -> Self {
        Self(hex::encode(Sha256::digest(bytes)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The logo's address on the pages' own origin (`/v2/link/web/brand/{id}`).
    pub fn path(&self) -> String {
        format!("{LOGO_PATH}{}", self.0)
    }
}

impl TryFrom<String> for LogoId {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s).ok_or_else(|| "not a logo id".to_owned())
    }
}

impl From<LogoId> for String {
    fn from(id: LogoId) -> String {
        id.0
    }
}

/// An uploaded logo, checked: one of the logo types, at most [`MAX_LOGO_BYTES`], its bytes an
/// image of the declared type.
#[derive(Debug, Clone, PartialEq)]
pub struct NewLogo {
    kind: LogoType,
    bytes: Vec<u8>,
}

impl NewLogo {
    /// Checked after the declared type ([`LogoType::declared`], 415): the size (413), then the
    /// bytes (422).
    pub fn parse(kind: LogoType, bytes: &[u8]) -> Result<Self, LogoRefusal> {
        if bytes.len() > MAX_LOGO_BYTES {
            return Err(LogoRefusal::TooLarge);
        }
        if !kind.matches(bytes) {
            return Err(LogoRefusal::NotThatImage(kind.content_type()));
        }
        Ok(Self { kind, bytes: bytes.to_vec() })
    }
}

/// The logo of a brand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrandLogo {
    /// An image the team hosts.
    Url(LogoUrl),
    /// An image uploaded to Wearlab, served by the pages' origin.
    Uploaded { id: LogoId, kind: LogoType },
}

/// The team's brand, as the hosted pages show it. `Brand::default()` is no brand at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Brand {
    pub display_name: Option<DisplayName>,
    pub logo: Option<BrandLogo>,
    pub accent: Option<AccentColor>,
}

impl Brand {
    /// The address of the logo for a page of this deployment: the team's URL, or the uploaded
    /// logo's path on the pages' own origin (allowed by their `img-src 'self'`).
    pub fn logo_src(&self) -> Option<String> {
        self.logo.as_ref().map(|l| match l {
            BrandLogo::Url(u) => u.as_str().to_owned(),
            BrandLogo::Uploaded { id, .. } => id.path(),
        })
    }

    /// The brand as the API answers it; `base_url` is the API's public address, for the
    /// uploaded logo's absolute URL.
    pub fn to_wire(&self, base_url: &str) -> Branding {
        Branding {
            display_name: self.display_name.as_ref().map(|n| n.as_str().to_owned()),
            logo_url: self.logo.as_ref().map(|l| match l {
                BrandLogo::Url(u) => u.as_str().to_owned(),
                BrandLogo::Uploaded { id, .. } => uploaded_url(base_url, id),
            }),
            accent_color: self.accent.map(|a| a.css()),
        }
    }
}

fn uploaded_url(base_url: &str, id: &LogoId) -> String {
    format!("{}{}", base_url.trim_end_matches('/'), id.path())
}

/// The logo a PUT body names.
#[derive(Debug, Clone, PartialEq)]
enum LogoChoice {
    Url(LogoUrl),
    /// This deployment's address of an uploaded logo (as `GET` answers it): kept when it is the
    /// team's current one.
    Uploaded(LogoId),
}

/// A checked PUT body: the whole brand.
#[derive(Debug, Clone, PartialEq)]
pub struct NewBrand {
    display_name: Option<DisplayName>,
    logo: Option<LogoChoice>,
    accent: Option<AccentColor>,
}

impl NewBrand {
    /// Checks every field and reports every offending one. `base_url` is the API's public
    /// address: a `logo_url` under it names an uploaded logo.
    pub fn parse(body: BrandingBody, base_url: &str) -> Result<Self, DomainError> {
        let mut issues = Vec::new();
        let mut check = |r: Result<(), BrandError>| {
            if let Err(e) = r {
                issues.push(e.issue());
            }
        };
        let own = format!("{}{LOGO_PATH}", base_url.trim_end_matches('/'));
        let logo = body
            .logo_url
            .as_deref()
            .map(|u| match u.strip_prefix(&own).and_then(LogoId::parse) {
                Some(id) => Ok(LogoChoice::Uploaded(id)),
                None => LogoUrl::parse(u).map(LogoChoice::Url),
            })
            .transpose();
        let display_name = body.display_name.as_deref().map(DisplayName::parse).transpose();
        let accent = body.accent_color.as_deref().map(AccentColor::parse).transpose();
        check(display_name.as_ref().map(|_| ()).map_err(Clone::clone));
        check(logo.as_ref().map(|_| ()).map_err(Clone::clone));
        check(accent.as_ref().map(|_| ()).map_err(Clone::clone));
        match (display_name, logo, accent) {
            (Ok(display_name), Ok(logo), Ok(accent)) if issues.is_empty() => {
                Ok(Self { display_name, logo, accent })
            }
            _ => Err(DomainError::Validation(issues)),
        }
    }
}

/// The brand as stored (`keys::team_brand`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct BrandRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    logo_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    logo_upload: Option<UploadRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accent_color: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct UploadRef {
    id: LogoId,
    kind: LogoType,
}

impl BrandRecord {
    fn of(brand: &Brand) -> Self {
        let (logo_url, logo_upload) = match &brand.logo {
            Some(BrandLogo::Url(u)) => (Some(u.as_str().to_owned()), None),
            Some(BrandLogo::Uploaded { id, kind }) => (None, Some(UploadRef { id: id.clone(), kind: *kind })),
            None => (None, None),
        };
        Self {
            display_name: brand.display_name.as_ref().map(|n| n.as_str().to_owned()),
            logo_url,
            logo_upload,
            accent_color: brand.accent.map(|a| a.css()),
        }
    }

    /// The stored values, parsed by the same rules they were written under.
    fn brand(self) -> Result<Brand, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("team brand: {what}"));
        let display_name = self
            .display_name
            .as_deref()
            .map(DisplayName::parse)
            .transpose()
            .map_err(|_| corrupt("display_name"))?;
        let accent = self
            .accent_color
            .as_deref()
            .map(AccentColor::parse)
            .transpose()
            .map_err(|_| corrupt("accent_color"))?;
        let logo = match (self.logo_upload, self.logo_url) {
            (Some(u), _) => Some(BrandLogo::Uploaded { id: u.id, kind: u.kind }),
            (None, Some(url)) => Some(BrandLogo::Url(LogoUrl::parse(&url).map_err(|_| corrupt("logo_url"))?)),
            (None, None) => None,
        };
        Ok(Brand { display_name, logo, accent })
    }
}

/// An uploaded logo as stored (`keys::brand_logo`): the image and the teams whose brand uses it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct LogoRecord {
    kind: LogoType,
    /// The image, base64.
    image: String,
    teams: Vec<TeamId>,
}

/// An uploaded logo as the pages' origin serves it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogoImage {
    pub kind: LogoType,
    pub bytes: Vec<u8>,
}

/// The team's brand (no brand when it never set one): one item read, for the pages.
pub async fn brand(deps: &Deps, team: TeamId) -> Result<Brand, DomainError> {
    Ok(stored(deps, team).await?.0)
}

/// The brand and the version of its item (0 when there is none).
async fn stored(deps: &Deps, team: TeamId) -> Result<(Brand, u64), DomainError> {
    Ok(match deps.table.get(&keys::team_brand(team)).await? {
        Some(item) => (item.decode::<BrandRecord>()?.brand()?, item.version),
        None => (Brand::default(), 0),
    })
}

/// The write of `brand` over the version read (`0`: none was stored).
fn brand_write(team: TeamId, brand: &Brand, version: u64) -> WriteOp {
    let mut item = Item::new(keys::team_brand(team), to_body(&BrandRecord::of(brand)));
    item.version = version + 1;
    let condition = if version == 0 { Condition::NotExists } else { Condition::VersionIs(version) };
    WriteOp::Put { item, condition }
}

/// The writes that take `team` off the uploaded logo `id` (deleting it with its last team).
async fn release(deps: &Deps, team: TeamId, id: &LogoId) -> Result<Option<WriteOp>, DomainError> {
    let key = keys::brand_logo(id.as_str());
    let Some(item) = deps.table.get(&key).await? else { return Ok(None) };
    let mut record: LogoRecord = item.decode()?;
    record.teams.retain(|t| *t != team);
    Ok(Some(if record.teams.is_empty() {
        WriteOp::Delete { key, condition: Condition::VersionIs(item.version) }
    } else {
        let mut next = Item::new(key, to_body(&record));
        next.version = item.version + 1;
        WriteOp::Put { item: next, condition: Condition::VersionIs(item.version) }
    }))
}

/// Commits the writes of one brand change; a concurrent change of the same brand or logo is a
/// 409 to retry.
async fn commit(deps: &Deps, writes: Vec<WriteOp>) -> Result<(), DomainError> {
    match deps.table.transact(writes).await {
        Err(StoreError::ConditionFailed { .. }) => {
            Err(DomainError::Busy("the brand changed at the same time; try again".into()))
        }
        r => Ok(r?),
    }
}

/// Replaces the team's brand. A `logo_url` naming an uploaded logo keeps the team's upload;
/// naming another is refused (upload it with `PUT /v2/team/branding/logo`).
pub async fn put(deps: &Deps, team: TeamId, new: NewBrand) -> Result<Brand, DomainError> {
    let (current, version) = stored(deps, team).await?;
    let upload = match &current.logo {
        Some(BrandLogo::Uploaded { id, kind }) => Some((id.clone(), *kind)),
        _ => None,
    };
    let logo = match (new.logo, &upload) {
        (Some(LogoChoice::Uploaded(sent)), Some((id, kind))) if sent == *id => {
            Some(BrandLogo::Uploaded { id: id.clone(), kind: *kind })
        }
        (Some(LogoChoice::Uploaded(_)), _) => {
            return Err(DomainError::invalid(
                &["logo_url"],
                "logo_url names an uploaded logo this team's brand does not use; upload it with PUT /v2/team/branding/logo",
                "value_error",
            ));
        }
        (Some(LogoChoice::Url(url)), _) => Some(BrandLogo::Url(url)),
        (None, _) => None,
    };
    let brand = Brand { display_name: new.display_name, logo, accent: new.accent };
    let mut writes = vec![brand_write(team, &brand, version)];
    if let Some((id, _)) = &upload
        && !matches!(&brand.logo, Some(BrandLogo::Uploaded { .. }))
    {
        writes.extend(release(deps, team, id).await?);
    }
    commit(deps, writes).await?;
    tracing::info!(team_id = %team, "brand set");
    Ok(brand)
}

/// Makes `logo` the brand's logo (the rest of the brand kept).
pub async fn put_logo(deps: &Deps, team: TeamId, logo: NewLogo) -> Result<Brand, DomainError> {
    let (current, version) = stored(deps, team).await?;
    let id = LogoId::of(&logo.bytes);
    let key = keys::brand_logo(id.as_str());
    let mut writes = Vec::new();
    match deps.table.get(&key).await? {
        Some(item) => {
            let mut record: LogoRecord = item.decode()?;
            if !record.teams.contains(&team) {
                record.teams.push(team);
                let mut next = Item::new(key, to_body(&record));
                next.version = item.version + 1;
                writes.push(WriteOp::Put { item: next, condition: Condition::VersionIs(item.version) });
            }
        }
        None => {
            let record = LogoRecord { kind: logo.kind, image: B64.encode(&logo.bytes), teams: vec![team] };
            writes.push(WriteOp::Put {
                item: Item::new(key, to_body(&record)),
                condition: Condition::NotExists,
            });
        }
    }
    if let Some(BrandLogo::Uploaded { id: old, .. }) = &current.logo
        && *old != id
    {
        writes.extend(release(deps, team, old).await?);
    }
    let brand = Brand { logo: Some(BrandLogo::Uploaded { id, kind: logo.kind }), ..current };
    writes.push(brand_write(team, &brand, version));
    commit(deps, writes).await?;
    tracing::info!(team_id = %team, "brand logo uploaded");
    Ok(brand)
}

/// Removes the brand's logo (uploaded or URL); 404 when it has none.
pub async fn delete_logo(deps: &Deps, team: TeamId) -> Result<Brand, DomainError> {
    let (current, version) = stored(deps, team).await?;
    let mut writes = Vec::new();
    match &current.logo {
        None => return Err(DomainError::NotFound("the team's brand has no logo".into())),
        Some(BrandLogo::Uploaded { id, .. }) => writes.extend(release(deps, team, id).await?),
        Some(BrandLogo::Url(_)) => {}
    }
    let brand = Brand { logo: None, ..current };
    writes.push(brand_write(team, &brand, version));
    commit(deps, writes).await?;
    tracing::info!(team_id = %team, "brand logo removed");
    Ok(brand)
}

/// An uploaded logo by its id, while some team's brand uses it; `None` otherwise.
pub async fn logo(deps: &Deps, id: &LogoId) -> Result<Option<LogoImage>, DomainError> {
    let Some(item) = deps.table.get(&keys::brand_logo(id.as_str())).await? else { return Ok(None) };
    let record: LogoRecord = item.decode()?;
    if record.teams.is_empty() {
        return Ok(None);
    }
    let bytes = B64.decode(record.image.as_bytes()).map_err(|_| StoreError::Corrupt("brand logo".into()))?;
    Ok(Some(LogoImage { kind: record.kind, bytes }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contrast_follows_wcag() {
        // The extremes of the scale: black on white 21:1, white on white 1:1.
        assert!((AccentColor([0, 0, 0]).contrast_with_white() - 21.0).abs() < 1e-9);
        assert!((AccentColor([255, 255, 255]).contrast_with_white() - 1.0).abs() < 1e-9);
        // #767676 is the lightest grey with 4.5:1 on white (4.54), #777777 is not (4.48).
        assert!(AccentColor::parse("#767676").is_ok());
        assert_eq!(
            AccentColor::parse("#777777"),
            Err(BrandError::AccentContrast { color: "#777777".into(), ratio: "4.47".into() })
        );
    }

    #[test]
    fn accent_is_six_hex_digits_stored_lower_case() {
        assert_eq!(AccentColor::parse("#1F5FBF").unwrap().css(), "#1f5fbf");
        for bad in ["1f5fbf", "#1f5fb", "#1f5fbf0", "#12345g", "red", "#fff", ""] {
            assert_eq!(AccentColor::parse(bad), Err(BrandError::AccentFormat), "{bad}");
        }
        let e = AccentColor::parse("#ffcc00").unwrap_err().to_string();
        assert!(e.contains("1.") && e.contains("4.5:1"), "{e}");
    }

    #[test]
    fn display_names() {
        assert_eq!(DisplayName::parse("  Acme Health ").unwrap().as_str(), "Acme Health");
        assert!(DisplayName::parse(&"é".repeat(80)).is_ok(), "characters, not bytes");
        for bad in ["", "   ", "a\u{7}b", "line\nbreak", "Acme\u{202E}htlaeH", "a\u{2067}b"] {
            assert_eq!(DisplayName::parse(bad), Err(BrandError::DisplayName), "{bad:?}");
        }
        assert!(DisplayName::parse(&"x".repeat(81)).is_err());
    }

    #[test]
    fn logo_urls() {
        assert_eq!(
            LogoUrl::parse("https://cdn.acme.example/l.png?v=2").unwrap().as_str(),
            "https://cdn.acme.example/l.png?v=2"
        );
        for bad in [
            "http://cdn.acme.example/l.png",
            "https://user:pw@cdn.acme.example/l.png",
            "https://user@cdn.acme.example/l.png",
            "https://cdn.acme.example/l.png#x",
            "https://cdn.acme.example/l.png#",
            "javascript:alert(1)",
            "data:image/png;base64,AAAA",
            "https:///l.png",
            "https://cdn.acme.example/a b.png",
            "//cdn.acme.example/l.png",
            "https:\\\\cdn.acme.example\\l.png",
        ] {
            assert_eq!(LogoUrl::parse(bad), Err(BrandError::LogoUrl), "{bad}");
        }
        let long = format!("https://cdn.acme.example/{}", "a".repeat(MAX_LOGO_URL_BYTES));
        assert_eq!(LogoUrl::parse(&long), Err(BrandError::LogoUrl));
    }

    fn png() -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend([0; 17]);
        b
    }

    #[test]
    fn logos_are_checked_type_then_size_then_bytes() {
        let png_type = LogoType::declared(Some("image/png")).unwrap();
        assert_eq!(LogoType::declared(Some("IMAGE/PNG; charset=binary")), Ok(LogoType::Png));
        assert_eq!(LogoType::declared(Some("image/svg+xml")), Err(LogoRefusal::UnsupportedType));
        assert_eq!(LogoType::declared(Some("image/gif")), Err(LogoRefusal::UnsupportedType));
        assert_eq!(LogoType::declared(None), Err(LogoRefusal::UnsupportedType));
        assert!(NewLogo::parse(png_type, &png()).is_ok());
        let mut big = png();
        big.resize(MAX_LOGO_BYTES + 1, 0);
        assert_eq!(NewLogo::parse(png_type, &big), Err(LogoRefusal::TooLarge));
        big.truncate(MAX_LOGO_BYTES);
        assert!(NewLogo::parse(png_type, &big).is_ok(), "exactly the limit");
        assert_eq!(NewLogo::parse(LogoType::Jpeg, &png()), Err(LogoRefusal::NotThatImage("image/jpeg")));
        assert_eq!(NewLogo::parse(png_type, b"<svg/>"), Err(LogoRefusal::NotThatImage("image/png")));
        assert!(NewLogo::parse(LogoType::Jpeg, &[0xff, 0xd8, 0xff, 0xe0, 0, 0x10]).is_ok());
        let mut webp = b"RIFF\0\0\0\0WEBPVP8L".to_vec();
        webp.extend([0; 10]);
        let size = u32::try_from(webp.len() - 8).unwrap();
        webp[4..8].copy_from_slice(&size.to_le_bytes());
        assert!(NewLogo::parse(LogoType::Webp, &webp).is_ok());
        webp.push(0);
        assert!(NewLogo::parse(LogoType::Webp, &webp).is_err(), "the RIFF size must be the body's");
    }

    #[test]
    fn logo_ids_are_the_sha256_hex() {
        let id = LogoId::of(b"abc");
        assert_eq!(id.as_str(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(LogoId::parse(id.as_str()), Some(id.clone()));
        assert_eq!(LogoId::parse(&id.as_str().to_uppercase()), None);
        assert_eq!(LogoId::parse("abc"), None);
        assert_eq!(id.path(), format!("/v2/link/web/brand/{}", id.as_str()));
    }

    #[test]
    fn every_bad_field_is_reported() {
        let body = BrandingBody {
            display_name: Some(" ".into()),
            logo_url: Some("http://x.example/l.png".into()),
            accent_color: Some("#ffff00".into()),
        };
        let Err(DomainError::Validation(issues)) = NewBrand::parse(body, "http://localhost") else {
            panic!("refused")
        };
        let locs: Vec<String> = issues.iter().map(|i| format!("{:?}", i.loc)).collect();
        assert_eq!(issues.len(), 3, "{locs:?}");
        assert!(NewBrand::parse(BrandingBody::default(), "http://localhost").is_ok(), "an empty brand");
        // The deployment's own address of an uploaded logo, even without https (the local stack).
        let own = format!("http://localhost:8000{LOGO_PATH}{}", "ab".repeat(32));
        let body = BrandingBody { logo_url: Some(own), ..BrandingBody::default() };
        let parsed = NewBrand::parse(body.clone(), "http://localhost:8000/").unwrap();
        assert_eq!(parsed.logo, Some(LogoChoice::Uploaded(LogoId::parse(&"ab".repeat(32)).unwrap())));
        assert!(
            NewBrand::parse(body, "https://api.example").is_err(),
            "another deployment's address is a URL"
        );
    }
}
