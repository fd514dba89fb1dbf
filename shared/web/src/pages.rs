//! The hosted pages end users open in a browser (the link widget of link-api, the user portal
//! of lab-api) are all answered through this module, so every one of them carries the same
//! security headers and the same CSRF check; the CSRF rule itself is
//! `wearlab_domain::common::hosted`.
//!
//! Pages are server-rendered and work without script (a page may add one script file of its own
//! API, [`Page::script`], allowed on that page alone, to improve what works without it). Their one stylesheet is inline and allowed by
//! its hash, so the Content-Security-Policy needs neither `'unsafe-inline'` nor a static file
//! route in every function. A page with a team's brand carries a second small stylesheet (the
//! brand header and the team's accent colour), allowed by its own hash in that page's policy.

use std::collections::HashMap;
use std::sync::LazyLock;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use http::StatusCode;
use http::header::{self, HeaderMap, HeaderValue};
use sha2::Digest;
use wearlab_domain::common::hosted::{self, PageKind};
use wearlab_domain::teams::branding::Brand;
use wearlab_domain::{Deps, DomainError};

use crate::i18n::{self, Language};

pub use wearlab_domain::common::hosted::CSRF_FIELD;

/// Largest form a page accepts (a username, a password, a code and two tokens fit easily).
pub const MAX_FORM_BYTES: usize = 16 * 1024;

/// The stylesheet of every page: readable from a 320 px phone up, visible keyboard focus,
/// controls at least 44 px high.
pub const STYLE: &str = ":root{--fg:#1d2430;--muted:#566070;--line:#d5dbe5;--accent:#1f5fbf;--bg:#f5f7fa;--err:#a4262c}\
*{box-sizing:border-box}\
body{margin:0;font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;color:var(--fg);background:var(--bg)}\
main{max-width:36rem;margin:0 auto;padding:1.25rem 1rem 3rem}main.wide{max-width:54rem}\
h1{font-size:1.5rem;line-height:1.25;margin:.75rem 0 1rem}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}\
h3{font-size:1.05rem;margin:0 0 .5rem}\
p{margin:.5rem 0}a{color:var(--accent)}\
.card{background:#fff;border:1px solid var(--line);border-radius:.75rem;padding:1rem;margin:0 0 1rem}\
ul.providers{list-style:none;margin:0;padding:0}ul.providers li{margin:0 0 .5rem}\
.provider{display:flex;flex-wrap:wrap;align-items:center;gap:.25rem .75rem;padding:.75rem 1rem;background:#fff;\
border:1px solid var(--line);border-radius:.75rem;color:inherit;text-decoration:none;min-height:3rem}\
a.provider:hover{border-color:var(--accent)}\
.logo{display:inline-grid;place-items:center;width:2rem;height:2rem;border-radius:.4rem;flex:none;overflow:hidden;\
background:#e9edf3;color:var(--muted);font-weight:700}.logo>*{grid-area:1/1}.logo img{max-width:100%;max-height:100%;background:#fff}\
.name{font-weight:600}.kind{margin-left:auto;color:var(--muted);font-size:.875rem}\
.mark{width:2rem;height:2rem;flex:none;border-radius:.4rem}.note{flex-basis:100%;margin:0;color:var(--muted);font-size:.9rem}\
.search-row{display:flex;gap:.5rem}.search-row button{margin:0}.search label{margin-top:0}[hidden]{display:none!important}\
label,legend{display:block;font-weight:600;margin:1rem 0 .25rem}\
input,select{width:100%;font:inherit;padding:.6rem .75rem;border:1px solid #8d97a8;border-radius:.5rem;background:#fff;color:inherit;min-height:2.75rem}\
fieldset{border:0;padding:0;margin:0}.choice{display:flex;gap:.5rem;align-items:center;font-weight:400;margin:.5rem 0}\
.choice input{width:auto;min-height:0}\
button,.button{display:inline-block;font:inherit;font-weight:600;padding:.65rem 1.25rem;margin:1.25rem .5rem 0 0;border:1px solid var(--accent);\
border-radius:.5rem;background:var(--accent);color:#fff;text-decoration:none;cursor:pointer;min-height:2.75rem}\
.secondary{background:#fff;color:var(--accent)}\
:focus-visible{outline:3px solid #e8a400;outline-offset:2px}\
.error{color:var(--err);background:#fdecea;border:1px solid #f0bcb9;border-radius:.5rem;padding:.75rem 1rem}\
.notice{background:#eaf2fd;border:1px solid #bcd3f5;border-radius:.5rem;padding:.75rem 1rem}\
.muted,.hint{color:var(--muted)}.hint{font-size:.9rem}\
.status{font-family:ui-monospace,monospace;font-size:.875rem;overflow-wrap:anywhere}\
.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%}\
td,th{text-align:left;padding:.4rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}\
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:.5rem 0}dt{color:var(--muted)}dd{margin:0}\
ol.timeline{margin:.5rem 0;padding-left:1.5rem}ol.timeline li{margin:.25rem 0}li.current .stage{font-weight:700}\
.flag{color:var(--err)}tr.flagged>*{background:#fdecea}\
@media (max-width:30rem){h1{font-size:1.3rem}.kind{margin-left:0;flex-basis:100%}}";

static STYLE_SOURCE: LazyLock<String> = LazyLock::new(|| style_source(STYLE));

/// The CSP source (`'sha256-...'`) that allows exactly this inline stylesheet.
fn style_source(css: &str) -> String {
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(css.as_bytes()))
    )
}

/// The Content-Security-Policy of a page: nothing but its own stylesheet, images from the
/// API and HTTPS (provider logos), no framing, no script. `form_target` is where a form of
/// the page may end up after its POST (a team's redirect URL): browsers check form-action
/// against redirects too.
pub fn content_security_policy(form_target: Option<&str>) -> String {
    policy(form_target, None, false)
}

/// [`content_security_policy`] of a page that also carries `page_style`, its own second inline
/// stylesheet (a brand's), allowed by its hash beside the shared one, and with `scripts` the
/// page's own script files (`script-src 'self'`: no inline script, no other origin).
fn policy(form_target: Option<&str>, page_style: Option<&str>, scripts: bool) -> String {
    let extra = form_target.and_then(source_of).map(|s| format!(" {s}")).unwrap_or_default();
    let own = page_style.map(|css| format!(" {}", style_source(css))).unwrap_or_default();
    let script = if scripts { "script-src 'self'; " } else { "" };
    format!(
        "default-src 'none'; {script}style-src {}{own}; img-src 'self' https: data:; form-action 'self'{extra}; \
         frame-ancestors 'none'; base-uri 'none'",
        STYLE_SOURCE.as_str()
    )
}

/// A static file of the pages (a script, a provider's mark): cached by browsers and proxies for
/// `max_age_seconds` (it holds nothing personal), and never run as a document of its own.
pub fn asset(
    content_type: &'static str,
    body: impl Into<axum::body::Body>,
    max_age_seconds: u32,
) -> Response {
    let mut res = Response::new(body.into());
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={max_age_seconds}")) {
        h.insert(header::CACHE_CONTROL, v);
    }
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("default-src 'none'; sandbox"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    res
}

/// The CSP source of a URL: `scheme://host[:port]` for web URLs, `scheme:` for app schemes;
/// `None` when the URL holds anything a policy cannot carry.
fn source_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme_ok =
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok {
        return None;
    }
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Some(format!("{scheme}:"));
    }
    let host = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_ok = !host.is_empty()
        && !host.contains('@')
        && host.chars().all(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(c));
    host_ok.then(|| format!("{scheme}://{host}"))
}

/// Where the hosted pages live: the link widget, the user portal (by token and by short code)
/// and the simulator's consent page.
pub const HOSTED_PREFIXES: [&str; 4] = ["/v2/link/web", "/v3/portal", "/v3/p/", "/v2/link/sim/"];

/// Whether `path` is a hosted page's (its answers carry [`set_security_headers`]).
pub fn is_hosted_path(path: &str) -> bool {
    HOSTED_PREFIXES.iter().any(|p| path.starts_with(p))
}

/// The headers every hosted page answer carries, HTML, redirect or error alike.
pub fn set_security_headers(h: &mut HeaderMap, form_target: Option<&str>) {
    security_headers(h, form_target, None, false);
}

/// [`set_security_headers`] for a page that carries its own second stylesheet.
fn security_headers(h: &mut HeaderMap, form_target: Option<&str>, page_style: Option<&str>, scripts: bool) {
    if let Ok(csp) = HeaderValue::from_str(&policy(form_target, page_style, scripts)) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Pages show personal data and carry one-time tokens: never kept by a browser or proxy.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// The brand header's layout: the logo at most 2.5rem high beside the display name, as wide as
/// the page's content.
const BRAND_HEADER_STYLE: &str = "header.brand{display:flex;align-items:center;gap:.75rem;max-width:36rem;\
margin:0 auto;padding:1rem 1rem 0}header.brand.wide{max-width:54rem}\
header.brand img{height:2.5rem;width:auto;max-width:10rem;object-fit:contain}\
header.brand span{font-weight:700;font-size:1.125rem;overflow-wrap:anywhere}";

/// The second stylesheet of a branded page: the header's layout when it has one, and the accent
/// colour for buttons and links. The accent keeps 4.5:1 against white (`AccentColor`'s rule),
/// so the page's background turns white with it: the pages' grey would lower that contrast.
fn brand_style(brand: &Brand) -> Option<String> {
    let mut css = String::new();
    if brand.display_name.is_some() || brand.logo.is_some() {
        css.push_str(BRAND_HEADER_STYLE);
    }
    if let Some(accent) = brand.accent {
        css.push_str(&format!(":root{{--accent:{};--bg:#fff}}", accent.css()));
    }
    (!css.is_empty()).then_some(css)
}

/// The header above a branded page's content: the logo (its `alt` the display name) and the
/// display name.
fn brand_header(brand: &Brand, wide: bool) -> String {
    if brand.display_name.is_none() && brand.logo.is_none() {
        return String::new();
    }
    let name = brand.display_name.as_ref().map(|n| escape(n.as_str())).unwrap_or_default();
    let logo = brand
        .logo_src()
        .map(|src| {
            format!(
                "<img src=\"{}\" alt=\"{name}\" height=\"40\" referrerpolicy=\"no-referrer\" decoding=\"async\">",
                escape(&src)
            )
        })
        .unwrap_or_default();
    let text = if name.is_empty() { String::new() } else { format!("<span>{name}</span>") };
    format!("<header class=\"brand{}\">{logo}{text}</header>", if wide { " wide" } else { "" })
}

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A page: a title, a body of escaped HTML, its status and where its forms may lead.
#[derive(Debug, Clone)]
pub struct Page {
    status: StatusCode,
    title: String,
    body: String,
    wide: bool,
    form_target: Option<String>,
    language: Language,
    brand: Option<Brand>,
    script: Option<&'static str>,
}

impl Page {
    /// `body` is HTML whose every value the caller escaped.
    pub fn new(title: impl Into<String>, body: impl Into<String>) -> Self {
        Self {
            status: StatusCode::OK,
            title: title.into(),
            body: body.into(),
            wide: false,
            form_target: None,
            language: Language::En,
            brand: None,
            script: None,
        }
    }

    /// A page that only says something: a heading and a paragraph of text.
    pub fn message(status: StatusCode, title: &str, text: &str) -> Self {
        Self::new(title, format!("<h1>{}</h1><p>{}</p>", escape(title), escape(text))).status(status)
    }

    pub fn status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// Room for tables (the portal).
    pub fn wide(mut self) -> Self {
        self.wide = true;
        self
    }

    /// The language the page is written in (its `<html lang>`).
    pub fn language(mut self, language: Language) -> Self {
        self.language = language;
        self
    }

    /// The team's brand: a header with its logo and display name above the content, its accent
    /// colour on buttons and links.
    pub fn brand(mut self, brand: &Brand) -> Self {
        self.brand = Some(brand.clone());
        self
    }

    /// This page's own second stylesheet (a brand's), if any.
    fn page_style(&self) -> Option<String> {
        self.brand.as_ref().and_then(brand_style)
    }

    /// The page runs the script at `src`, a path of this API (allowed by `script-src 'self'`
    /// on this page only); the page must work without it.
    pub fn script(mut self, src: &'static str) -> Self {
        self.script = Some(src);
        self
    }

    /// A form of this page may be answered with a redirect to `url`.
    pub fn forms_may_lead_to(mut self, url: Option<&str>) -> Self {
        self.form_target = url.map(str::to_owned);
        self
    }

    /// The whole document.
    pub fn document(&self) -> String {
        let page_style = self.page_style().map(|css| format!("<style>{css}</style>")).unwrap_or_default();
        let header = self.brand.as_ref().map(|b| brand_header(b, self.wide)).unwrap_or_default();
        format!(
            "<!DOCTYPE html><html lang=\"{}\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta name=\"robots\" content=\"noindex\"><meta name=\"referrer\" content=\"no-referrer\">\
             <title>{}</title><style>{STYLE}</style>{page_style}{}</head><body>{header}<main{}>{}</main></body></html>",
            self.language.tag(),
            escape(&self.title),
            self.script.map(|s| format!("<script src=\"{}\" defer></script>", escape(s))).unwrap_or_default(),
            if self.wide { " class=\"wide\"" } else { "" },
            self.body
        )
    }
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let page_style = self.page_style();
        let mut res = (self.status, self.document()).into_response();
        let h = res.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        security_headers(h, self.form_target.as_deref(), page_style.as_deref(), self.script.is_some());
        res
    }
}

/// 303 See Other to `location` (after a POST the browser follows with a GET), with the
/// pages' headers.
pub fn redirect(location: &str) -> Response {
    let mut res = StatusCode::SEE_OTHER.into_response();
    match HeaderValue::from_str(location) {
        Ok(v) => {
            res.headers_mut().insert(header::LOCATION, v);
        }
        Err(_) => return PageError::Form("the address to go on to is not valid".into()).into_response(),
    }
    set_security_headers(res.headers_mut(), None);
    res
}

/// The hidden field that carries a form's CSRF token.
pub fn csrf_input(token: &str) -> String {
    format!("<input type=\"hidden\" name=\"{CSRF_FIELD}\" value=\"{}\">", escape(token))
}

/// A fresh CSRF token for the forms of a `kind` page opened with `subject`.
pub async fn csrf_token(deps: &Deps, kind: PageKind, subject: &str) -> Result<String, PageError> {
    Ok(hosted::csrf_token(deps, kind, subject).await?)
}

/// Refuses a form whose CSRF token is missing, expired or minted for another link (403).
pub async fn check_csrf(
    deps: &Deps,
    kind: PageKind,
    subject: &str,
    form: &FormData,
) -> Result<(), PageError> {
    if hosted::csrf_valid(deps, kind, subject, form.get(CSRF_FIELD)).await? {
        Ok(())
    } else {
        Err(PageError::Csrf)
    }
}

/// Why a page could not be answered as asked; said as a page with the pages' headers, in the
/// page's language ([`PageError::page`], [`answer`]). Only the variant chooses the text shown:
/// the detail a variant carries (an English domain message) goes to the error's `Display` for
/// logs and tests, never to the reader, who gets the catalogue's words in their language.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("the form's security token is missing or not valid")]
    Csrf,
    #[error("{0}")]
    Form(String),
    #[error("the form is too large")]
    TooLarge,
    #[error(transparent)]
    Domain(#[from] DomainError),
}

impl PageError {
    /// The page that says this error in `language` (texts of the catalogue's shared section).
    pub fn page(&self, language: Language) -> Page {
        let (status, title, text) = match self {
            PageError::Csrf => (StatusCode::FORBIDDEN, "error.form_expired.title", "error.form_expired"),
            PageError::Form(_) => (StatusCode::BAD_REQUEST, "error.generic.title", "error.form"),
            PageError::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "error.generic.title", "error.too_large"),
            PageError::Domain(DomainError::NotFound(_)) => {
                (StatusCode::NOT_FOUND, "error.not_found.title", "error.not_found")
            }
            PageError::Domain(DomainError::Rejected(_)) => {
                (StatusCode::BAD_REQUEST, "error.rejected.title", "error.rejected")
            }
            PageError::Domain(DomainError::Validation(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "error.generic.title", "error.incomplete")
            }
            PageError::Domain(e) => {
                tracing::error!(error = %e, "hosted page failed");
                (StatusCode::SERVICE_UNAVAILABLE, "error.unavailable.title", "error.unavailable")
            }
        };
        let c = i18n::catalogue(language);
        Page::message(status, c.get(title), c.get(text)).language(language)
    }
}

/// Without a language of its own (an error nothing caught), a page error is said in English.
impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        self.page(Language::En).into_response()
    }
}

/// A page handler's outcome as its answer: the page, or its error said in `language`.
pub fn answer(language: Language, outcome: Result<Response, PageError>) -> Response {
    outcome.unwrap_or_else(|e| e.page(language).into_response())
}

/// The language a request asks for: its `lang` query parameter when the pages speak it, else
/// its `Accept-Language`, else English (`Language::negotiate`).
pub fn request_language(query: Option<&str>, headers: &HeaderMap) -> Language {
    let accept = headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
    Language::negotiate(query_param(query, "lang").as_deref(), accept)
}

/// A query parameter of a page's address (the last one when repeated). Pages read their few
/// parameters this way so that a malformed query still gets a page, never a JSON error.
pub fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .last()
}

/// An `application/x-www-form-urlencoded` body (what an HTML form posts).
#[derive(Debug, Clone, Default)]
pub struct FormData(HashMap<String, String>);

impl FormData {
    pub fn parse(bytes: &[u8]) -> Self {
        Self(form_urlencoded::parse(bytes).into_owned().collect())
    }

    /// A field's value (the last one when repeated).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// A field's value, or "" when absent.
    pub fn text(&self, name: &str) -> String {
        self.get(name).unwrap_or_default().to_owned()
    }
}

/// A form that cannot be read is refused with a page in the language the request asks for
/// ([`request_language`]).
impl<S: Send + Sync> FromRequest<S> for FormData {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Response> {
        let language = request_language(req.uri().query(), req.headers());
        let refuse = |e: PageError| e.page(language).into_response();
        let is_form =
            req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
                v.trim_start().to_ascii_lowercase().starts_with("application/x-www-form-urlencoded")
            });
        if !is_form {
            return Err(refuse(PageError::Form("This address takes a form sent from its page.".into())));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|_| refuse(PageError::TooLarge))?;
        if bytes.len() > MAX_FORM_BYTES {
            return Err(refuse(PageError::TooLarge));
        }
        Ok(Self::parse(&bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn style_source_is_the_base64_sha256() {
        // printf 'a' | openssl dgst -sha256 -binary | base64
        assert_eq!(style_source("a"), "'sha256-ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs='");
    }

    #[test]
    fn policy_allows_only_the_pages_own_style_and_the_redirect_origin() {
        let csp = content_security_policy(Some("https://app.example:8443/done?x=1"));
        assert!(csp.starts_with("default-src 'none'; style-src 'sha256-"), "{csp}");
        assert!(csp.contains("form-action 'self' https://app.example:8443;"), "{csp}");
        assert!(
            csp.contains("frame-ancestors 'none'")
                && !csp.contains("unsafe-inline")
                && !csp.contains("script")
        );
        assert!(content_security_policy(Some("myapp://done")).contains("form-action 'self' myapp:;"));
        assert!(content_security_policy(Some("https://a;b")).contains("form-action 'self';"));
        assert!(content_security_policy(None).contains("form-action 'self';"));
        let with_script = policy(None, None, true);
        assert!(with_script.starts_with("default-src 'none'; script-src 'self'; style-src 'sha256-"));
        assert!(!with_script.contains("unsafe"));
    }

    #[test]
    fn a_page_with_a_script_loads_it_from_this_api_only() {
        let res = Page::new("t", "<p>x</p>").script("/v2/link/web/assets/widget.js").into_response();
        let csp = res.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().to_owned();
        assert!(csp.contains("script-src 'self';"), "{csp}");
        let plain = Page::new("t", "<p>x</p>").into_response();
        assert!(!plain.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("script"));
        let doc = Page::new("t", "").script("/a.js").document();
        assert!(doc.contains("<script src=\"/a.js\" defer></script></head>"), "{doc}");
    }

    use wearlab_domain::teams::branding::{AccentColor, BrandLogo, DisplayName, LogoId, LogoUrl};

    fn acme() -> Brand {
        Brand {
            display_name: Some(DisplayName::parse("Acme <Health> & Co").unwrap()),
            logo: Some(BrandLogo::Url(LogoUrl::parse("https://cdn.acme.example/logo.png").unwrap())),
            accent: Some(AccentColor::parse("#0B6E4F").unwrap()),
        }
    }

    /// The `<style>` elements of a document, in order.
    fn styles(doc: &str) -> Vec<String> {
        doc.split("<style>")
            .skip(1)
            .filter_map(|p| p.split_once("</style>"))
            .map(|(css, _)| css.to_owned())
            .collect()
    }

    #[test]
    fn a_branded_page_shows_the_teams_header_and_accent() {
        let res = Page::new("Connect", "<h1>Connect</h1>").brand(&acme()).into_response();
        let csp = res.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().to_owned();
        let page = Page::new("Connect", "<h1>Connect</h1>").brand(&acme()).document();
        let header = page.split("<body>").nth(1).unwrap().split("<main").next().unwrap();
        assert_eq!(
            header,
            "<header class=\"brand\"><img src=\"https://cdn.acme.example/logo.png\" alt=\"Acme &lt;Health&gt; &amp; Co\" \
             height=\"40\" referrerpolicy=\"no-referrer\" decoding=\"async\"><span>Acme &lt;Health&gt; &amp; Co</span></header>"
        );
        let css = styles(&page);
        assert_eq!(css.len(), 2, "{page}");
        assert_eq!(css[0], STYLE);
        assert!(css[1].contains(":root{--accent:#0b6e4f;--bg:#fff}"), "{}", css[1]);
        // Both stylesheets are allowed by their hashes, and nothing else inline is.
        assert!(
            csp.contains(&format!("style-src {} {};", style_source(STYLE), style_source(&css[1]))),
            "{csp}"
        );
        assert!(!csp.contains("unsafe-inline") && !csp.contains("script"), "{csp}");
    }

    #[test]
    fn an_uploaded_logo_is_served_by_the_pages_own_origin() {
        let id = LogoId::parse(&"ab".repeat(32)).unwrap();
        let brand = Brand {
            display_name: None,
            logo: Some(BrandLogo::Uploaded {
                id: id.clone(),
                kind: wearlab_domain::teams::branding::LogoType::Png,
            }),
            accent: None,
        };
        let page = Page::new("Portal", "<h1>Portal</h1>").wide().brand(&brand).document();
        assert!(
            page.contains(&format!(
                "<header class=\"brand wide\"><img src=\"/v2/link/web/brand/{}\" alt=\"\"",
                id.as_str()
            )),
            "{page}"
        );
        assert!(!styles(&page)[1].contains("--accent:"), "no accent: the pages' own colour");
    }

    #[test]
    fn a_page_without_a_brand_has_one_stylesheet_and_no_header() {
        for page in [Page::new("T", "<h1>T</h1>"), Page::new("T", "<h1>T</h1>").brand(&Brand::default())] {
            let doc = page.document();
            assert_eq!(styles(&doc), [STYLE]);
            assert!(!doc.contains("<header"));
            let res = page.into_response();
            let csp = res.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().to_owned();
            assert_eq!(csp, content_security_policy(None));
        }
        // An accent alone changes the colours and adds no header.
        let accent = Brand { accent: Some(AccentColor::parse("#5b2a86").unwrap()), ..Brand::default() };
        let doc = Page::new("T", "<h1>T</h1>").brand(&accent).document();
        assert_eq!(styles(&doc)[1], ":root{--accent:#5b2a86;--bg:#fff}");
        assert!(!doc.contains("<header"));
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">O'Neil & co</a>"),
            "&lt;a href=&quot;x&quot;&gt;O&#39;Neil &amp; co&lt;/a&gt;"
        );
    }

    #[test]
    fn page_errors_are_said_in_the_pages_language() {
        let de = PageError::Csrf.page(Language::De).document();
        assert!(de.contains("<html lang=\"de\"") && de.contains("Formular abgelaufen"), "{de}");
        let es = PageError::Domain(DomainError::NotFound("user gone".into())).page(Language::Es);
        assert_eq!(es.status, StatusCode::NOT_FOUND);
        assert!(es.document().contains("No encontrado") && !es.document().contains("user gone"));
        let en = PageError::TooLarge.into_response();
        assert_eq!(en.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn a_request_asks_for_its_lang_parameter_then_its_browsers_language() {
        let mut h = HeaderMap::new();
        assert_eq!(request_language(None, &h), Language::En);
        h.insert(header::ACCEPT_LANGUAGE, HeaderValue::from_static("fr-CH, fr;q=0.9, en;q=0.8"));
        assert_eq!(request_language(Some("token=x"), &h), Language::Fr);
        assert_eq!(request_language(Some("token=x&lang=pt"), &h), Language::Pt);
        assert_eq!(request_language(Some("lang=xx"), &h), Language::Fr);
    }

    #[test]
    fn forms_parse() {
        let f = FormData::parse(b"username=jane%40example.com&password=a+b&csrf=1.x");
        assert_eq!(f.get("username"), Some("jane@example.com"));
        assert_eq!(f.get("password"), Some("a b"));
        assert_eq!(f.text("region"), "");
    }
}
