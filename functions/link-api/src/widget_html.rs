//! The markup of the hosted link page. Every value is escaped; the shell, headers and CSRF
//! field come from `wearlab_web::pages`, every text from the language's catalogue
//! (`wearlab_web::i18n`, the `# --- widget ---` section). Links and forms do all the work, so
//! the page works with a keyboard, a screen reader and without JavaScript; the list page adds
//! one small script of its own ([`SCRIPT_PATH`]) that filters the list as the user types.

use std::fmt::Write;

use axum::http::StatusCode;
use wearlab_domain::common::provider_catalog::{Category, ProviderInfo};
use wearlab_domain::linking::tokens::TokenRefusal;
use wearlab_domain::linking::widget::{Form, Method, Row, Widget, method};
use wearlab_domain::linking::{LinkOutcome, encode, redirect_with_result};
use wearlab_models::{LinkErrorType, LinkResult, LinkState, MfaMethod, ProviderMfaRequest};
use wearlab_web::i18n::{Catalogue, Language, catalogue};
use wearlab_web::pages::{Page, csrf_input, escape};

pub const PAGE_PATH: &str = "/v2/link/web";
pub const PROVIDER_PATH: &str = "/v2/link/web/provider/{provider}";
pub const OAUTH_PATH: &str = "/v2/link/web/oauth/{provider}";
pub const PASSWORD_PATH: &str = "/v2/link/web/password/{provider}";
pub const MFA_PATH: &str = "/v2/link/web/password/{provider}/mfa";
/// The list page's script: live filtering (the search form filters without it).
pub const SCRIPT_PATH: &str = "/v2/link/web/assets/widget.js";
pub const SCRIPT: &str = include_str!("widget.js");

/// The language of a page and whether it was chosen explicitly (then every link and form of
/// the page carries it on).
#[derive(Debug, Clone, Copy)]
pub struct Lang {
    pub language: Language,
    pub explicit: bool,
}

impl Lang {
    fn t(self) -> &'static Catalogue {
        catalogue(self.language)
    }

    fn page(self, title: impl Into<String>, body: impl Into<String>) -> Page {
        Page::new(title, body).language(self.language)
    }

    fn message(self, status: StatusCode, title: &str, text: &str) -> Page {
        Page::message(status, title, text).language(self.language)
    }

    /// `&lang=xx` for an explicit choice.
    fn query(self) -> String {
        if self.explicit { format!("&lang={}", self.language.tag()) } else { String::new() }
    }

    fn hidden(self) -> String {
        if self.explicit {
            format!("<input type=\"hidden\" name=\"lang\" value=\"{}\">", self.language.tag())
        } else {
            String::new()
        }
    }
}

fn path(template: &str, slug: &str) -> String {
    template.replace("{provider}", &encode(slug))
}

/// A page address carrying the link token (the only value ever put in a page's URL besides the
/// language and a search).
fn with_token(template: &str, slug: &str, raw: &str, l: Lang) -> String {
    format!("{}?token={}{}", path(template, slug), encode(raw), l.query())
}

fn auth_label(m: Method, t: &Catalogue) -> &'static str {
    match m {
        Method::Password => t.get("widget.auth.password"),
        Method::Oauth => t.get("widget.auth.oauth"),
        Method::Elsewhere => t.get("widget.auth.elsewhere"),
    }
}

fn group_name(c: Category, t: &Catalogue) -> &'static str {
    t.get(&format!("widget.group.{}", c.name()))
}

/// The provider's mark, served by this API. Decorative: the name is next to it.
fn mark(p: &ProviderInfo) -> String {
    match p.logo.as_deref() {
        Some(src) => {
            // Lazy: the marks below the first screen load as the user scrolls (first page size).
            format!(
                "<img class=\"mark\" src=\"{}\" alt=\"\" width=\"32\" height=\"32\" loading=\"lazy\" decoding=\"async\">",
                escape(src)
            )
        }
        None => String::new(),
    }
}

/// Where the row of an offered provider leads: its form, its hand-off, or (connected in the
/// team's app) nowhere.
fn href(p: &ProviderInfo, raw: &str, l: Lang) -> Option<String> {
    match method(p) {
        Method::Password => Some(with_token(PROVIDER_PATH, &p.slug, raw, l)),
        Method::Oauth => Some(with_token(OAUTH_PATH, &p.slug, raw, l)),
        Method::Elsewhere => None,
    }
}

/// What the phone's providers (and the others connected in the app) say instead of a link: in
/// the team's app, named when the team set its display name.
fn elsewhere_text(p: &ProviderInfo, app: Option<&str>, t: &Catalogue) -> String {
    match app {
        Some(app) => t.fill("widget.phone.named", &[("name", &p.name), ("app", app)]),
        None => t.fill("widget.phone.text", &[("name", &p.name)]),
    }
}

/// The team's display name, when it set one.
fn team_name(w: &Widget) -> Option<&str> {
    w.brand.display_name.as_ref().map(|n| n.as_str())
}

/// A line of the list; `hidden` when the search leaves it out (the script shows it again as the
/// query changes).
fn row(r: &Row, raw: &str, l: Lang, shown: bool, app: Option<&str>) -> String {
    let t = l.t();
    let p = r.provider();
    let hidden = if shown { "" } else { " hidden" };
    let head = format!("{}<span class=\"name\">{}</span>", mark(p), escape(&p.name));
    let search = escape(&p.search_text());
    let slug = escape(&p.slug);
    match r {
        Row::Offer(p) => match href(p, raw, l) {
            Some(h) => format!(
                "<li data-search=\"{search}\"{hidden}><a class=\"provider\" href=\"{}\" data-provider=\"{slug}\">{head}\
                 <span class=\"kind\">{}</span></a></li>",
                escape(&h),
                escape(auth_label(method(p), t))
            ),
            None => format!(
                "<li data-search=\"{search}\"{hidden}><div class=\"provider\" data-provider=\"{slug}\">{head}\
                 <span class=\"kind\">{}</span><p class=\"note\">{}</p></div></li>",
                escape(auth_label(Method::Elsewhere, t)),
                escape(&elsewhere_text(p, app, t))
            ),
        },
        Row::Discontinued { successor, .. } => {
            let next = match successor.and_then(|s| href(s, raw, l).map(|h| (s, h))) {
                Some((s, h)) => format!(
                    "<a href=\"{}\">{}</a>",
                    escape(&h),
                    escape(&t.fill("widget.discontinued.use", &[("successor", &s.name)]))
                ),
                None => escape(t.get("widget.discontinued.none")),
            };
            format!(
                "<li data-search=\"{search}\"{hidden}><div class=\"provider discontinued\" data-provider=\"{slug}\">{head}\
                 <span class=\"kind\">{}</span><p class=\"note\">{next}</p></div></li>",
                escape(t.get("widget.discontinued"))
            )
        }
    }
}

/// The search form: a GET of this page, so it works without script; the script filters as the
/// user types.
fn search_form(raw: &str, query: &str, l: Lang) -> String {
    let t = l.t();
    format!(
        "<form method=\"get\" action=\"{PAGE_PATH}\" role=\"search\" class=\"search\">\
         <input type=\"hidden\" name=\"token\" value=\"{}\">{}\
         <label for=\"q\">{}</label><div class=\"search-row\">\
         <input id=\"q\" name=\"q\" type=\"search\" value=\"{}\" autocomplete=\"off\" spellcheck=\"false\" \
         aria-describedby=\"search-status\">\
         <button type=\"submit\">{}</button></div></form>",
        escape(raw),
        l.hidden(),
        escape(t.get("widget.search.label")),
        escape(query),
        escape(t.get("widget.search.button")),
    )
}

/// The providers the token allows, grouped, the search's matches only when `query` is given.
pub fn list(w: &Widget, raw: &str, query: &str, l: Lang) -> Page {
    let t = l.t();
    let title = t.get("widget.title");
    // "Acme Health wants to connect to your health data" when the team named itself.
    let heading = match team_name(w) {
        Some(team) => t.fill("widget.heading_team", &[("team", team)]),
        None => title.to_owned(),
    };
    let groups = w.groups();
    if groups.is_empty() {
        // Every provider the token allows is demo only on this deployment.
        return l
            .page(
                title,
                format!(
                    "<h1>{}</h1><p class=\"none\" role=\"status\">{}</p>",
                    escape(&heading),
                    escape(t.get("widget.none"))
                ),
            )
            .brand(&w.brand);
    }
    let mut shown = 0;
    let mut lists = String::new();
    for g in &groups {
        let id = format!("group-{}", g.category.name());
        let mut rows = String::new();
        let mut any = false;
        for r in &g.rows {
            let hit = r.provider().matches(query);
            any |= hit;
            shown += usize::from(hit);
            rows.push_str(&row(r, raw, l, hit, team_name(w)));
        }
        let _ = write!(
            lists,
            "<section class=\"group\" aria-labelledby=\"{id}\"{}><h2 id=\"{id}\">{}</h2><ul class=\"providers\">{rows}</ul></section>",
            if any { "" } else { " hidden" },
            escape(group_name(g.category, t))
        );
    }
    let status = if query.trim().is_empty() {
        String::new()
    } else if shown == 0 {
        escape(&t.fill("widget.search.none", &[("query", query.trim())]))
    } else {
        escape(&t.fill("widget.search.count", &[("count", &t.number(shown as f64, 0))]))
    };
    let show_all = if query.trim().is_empty() {
        String::new()
    } else {
        format!(
            "<p class=\"show-all\"><a href=\"{PAGE_PATH}?token={}{}\">{}</a></p>",
            encode(raw),
            l.query(),
            escape(t.get("widget.search.all"))
        )
    };
    let body = format!(
        "<h1>{}</h1><p>{}</p>{}\
         <p id=\"search-status\" class=\"hint\" aria-live=\"polite\" data-count=\"{}\" data-none=\"{}\">{status}</p>{show_all}\
         <nav aria-label=\"{}\" id=\"providers\">{lists}</nav>",
        escape(&heading),
        escape(t.get("widget.intro")),
        search_form(raw, query, l),
        escape(t.get("widget.search.count")),
        escape(t.get("widget.search.none")),
        escape(t.get("widget.providers")),
    );
    l.page(title, body).script(SCRIPT_PATH).brand(&w.brand)
}

fn back_link(w: &Widget, raw: &str, l: Lang) -> String {
    if w.named().is_some() {
        return String::new();
    }
    format!(
        "<p><a href=\"{PAGE_PATH}?token={}{}\">{}</a></p>",
        encode(raw),
        l.query(),
        escape(l.t().get("widget.back"))
    )
}

fn error_box(text: &str) -> String {
    format!("<p class=\"error\" id=\"form-error\" role=\"alert\">{}</p>", escape(text))
}

/// What the user can do about an outcome that keeps them on the page.
pub fn retry_text(p: &ProviderInfo, form: &Form, error_type: Option<&LinkErrorType>, l: Lang) -> String {
    let t = l.t();
    let key = match (error_type, form) {
        (None, Form::Password) => "widget.retry.password",
        (None, Form::Mfa(_)) => "widget.retry.code",
        (Some(LinkErrorType::ProviderCredentialError), _) => "widget.retry.credentials",
        (Some(LinkErrorType::ProviderPasswordExpired), _) => "widget.retry.password_expired",
        (Some(LinkErrorType::UnsupportedRegion), _) => "widget.retry.region",
        (Some(LinkErrorType::IncorrectMfaCode), Form::Mfa(_)) => "widget.retry.wrong_code",
        (Some(LinkErrorType::IncorrectMfaCode), Form::Password) => "widget.retry.too_many_codes",
        _ => "widget.retry.unreachable",
    };
    t.fill(key, &[("name", &p.name)])
}

/// The page of one provider: its password form, its OAuth hand-off, or where else to connect it.
pub fn provider(
    w: &Widget,
    p: &ProviderInfo,
    raw: &str,
    csrf: &str,
    error: Option<&str>,
    username: &str,
    l: Lang,
) -> Page {
    let t = l.t();
    let name = &p.name;
    let fill = |key: &str| escape(&t.fill(key, &[("name", name)]));
    let title = t.fill("widget.provider.heading", &[("name", name)]);
    let mut body = format!("<h1>{}</h1>", escape(&title));
    match method(p) {
        Method::Password => {
            let described =
                if error.is_some() { " aria-invalid=\"true\" aria-describedby=\"form-error\"" } else { "" };
            if let Some(e) = error {
                body.push_str(&error_box(e));
            }
            let _ = write!(
                body,
                "<p>{intro}</p>\
                 <form method=\"post\" action=\"{action}\" class=\"card\" novalidate>{token}{lang}{csrf}\
                 <label for=\"username\">{user_label}</label>\
                 <input id=\"username\" name=\"username\" type=\"text\" autocomplete=\"username\" autocapitalize=\"none\" \
                 spellcheck=\"false\" required maxlength=\"256\" value=\"{user}\"{described}{focus_user}>\
                 <label for=\"password\">{password_label}</label>\
                 <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required \
                 maxlength=\"1024\"{described}{focus_password}>",
                intro = fill("widget.password.intro"),
                action = path(PASSWORD_PATH, &p.slug),
                token = hidden_token(raw),
                lang = l.hidden(),
                csrf = csrf_input(csrf),
                user_label = fill("widget.password.username"),
                password_label = escape(t.get("widget.password.password")),
                user = escape(username),
                focus_user = if username.is_empty() { " autofocus" } else { "" },
                focus_password = if username.is_empty() { "" } else { " autofocus" },
            );
            if let Some(regions) = &p.regions {
                let _ = write!(
                    body,
                    "<label for=\"region\">{}</label>\
                     <select id=\"region\" name=\"region\" required><option value=\"\">{}</option>",
                    escape(t.get("widget.password.region")),
                    escape(t.get("widget.password.region_choose"))
                );
                for r in regions {
                    let _ = write!(
                        body,
                        "<option value=\"{0}\">{1}</option>",
                        escape(r),
                        escape(&r.to_uppercase())
                    );
                }
                body.push_str("</select>");
            }
            let _ = write!(
                body,
                "<button type=\"submit\">{}</button></form>",
                escape(t.get("widget.password.submit"))
            );
        }
        Method::Oauth => {
            let _ = write!(
                body,
                "<p>{}</p><p><a class=\"button\" href=\"{}\">{}</a></p>",
                fill("widget.oauth.intro"),
                escape(&with_token(OAUTH_PATH, &p.slug, raw, l)),
                fill("widget.oauth.continue"),
            );
        }
        Method::Elsewhere => {
            let _ = write!(body, "<p class=\"notice\">{}</p>", escape(&elsewhere_text(p, team_name(w), t)));
        }
    }
    body.push_str(&back_link(w, raw, l));
    l.page(title, body).forms_may_lead_to(w.token.record.redirect_url.as_deref()).brand(&w.brand)
}

fn hidden_token(raw: &str) -> String {
    format!("<input type=\"hidden\" name=\"token\" value=\"{}\">", escape(raw))
}

/// The one-time code form, saying where the provider sent the code.
pub fn mfa(
    w: &Widget,
    p: &ProviderInfo,
    raw: &str,
    csrf: &str,
    request: &ProviderMfaRequest,
    error: Option<&str>,
    l: Lang,
) -> Page {
    let t = l.t();
    let key = match (&request.method, request.hint.is_empty()) {
        (MfaMethod::Email, false) => "widget.mfa.sent_email_to",
        (MfaMethod::Email, true) => "widget.mfa.sent_email",
        (_, false) => "widget.mfa.sent_sms_to",
        (_, true) => "widget.mfa.sent_sms",
    };
    // The hint is marked up after the text is escaped (escaping leaves `{hint}` as it is).
    let sent = escape(&t.fill(key, &[("name", &p.name)]))
        .replace("{hint}", &format!("<strong class=\"mfa-hint\">{}</strong>", escape(&request.hint)));
    let described =
        if error.is_some() { " aria-invalid=\"true\" aria-describedby=\"form-error\"" } else { "" };
    let title = t.fill("widget.mfa.heading", &[("name", &p.name)]);
    let mut body = format!("<h1>{}</h1>", escape(&title));
    if let Some(e) = error {
        body.push_str(&error_box(e));
    }
    let _ = write!(
        body,
        "<p>{sent}</p>\
         <form method=\"post\" action=\"{action}\" class=\"card\" novalidate>{token}{lang}{csrf}\
         <label for=\"mfa_code\">{label}</label>\
         <input id=\"mfa_code\" name=\"mfa_code\" type=\"text\" inputmode=\"numeric\" autocomplete=\"one-time-code\" \
         required maxlength=\"32\" autofocus{described}>\
         <button type=\"submit\">{submit}</button></form>",
        action = path(MFA_PATH, &p.slug),
        token = hidden_token(raw),
        lang = l.hidden(),
        csrf = csrf_input(csrf),
        label = escape(t.get("widget.mfa.code")),
        submit = escape(t.get("widget.mfa.submit")),
    );
    body.push_str(&back_link(w, raw, l));
    l.page(title, body).forms_may_lead_to(w.token.record.redirect_url.as_deref()).brand(&w.brand)
}

/// The outcome of a link whose token has no redirect URL.
pub fn outcome(p: Option<&ProviderInfo>, result: &LinkResult, l: Lang) -> Page {
    let t = l.t();
    let name = p.map_or_else(|| result.provider.clone(), |p| p.name.clone());
    let fill = |key: &str| t.fill(key, &[("name", &name)]);
    if result.state == LinkState::Success {
        let title = fill("widget.outcome.connected_title");
        return l.page(
            title.clone(),
            format!(
                "<h1>{}</h1><p class=\"notice\" role=\"status\">{}</p>",
                escape(&title),
                escape(&fill("widget.outcome.connected"))
            ),
        );
    }
    let key = match result.error_type.as_ref() {
        Some(LinkErrorType::DuplicateConnection) => "widget.outcome.duplicate",
        Some(LinkErrorType::UserCancelled) => "widget.outcome.cancelled",
        Some(LinkErrorType::RequiredScopesNotGranted) => "widget.outcome.scopes",
        Some(LinkErrorType::TokenExpired) => "widget.outcome.expired",
        Some(LinkErrorType::TokenConsumed) => "widget.outcome.consumed",
        Some(LinkErrorType::InvalidToken | LinkErrorType::TokenNotValidated) => "widget.outcome.invalid",
        _ => "widget.outcome.failed",
    };
    let title = fill("widget.outcome.failed_title");
    l.page(
        title.clone(),
        format!("<h1>{}</h1><p class=\"error\" role=\"alert\">{}</p>", escape(&title), escape(&fill(key))),
    )
}

/// The page of a token that cannot be used: expired, already used, or unknown.
pub fn refused(r: &TokenRefusal, l: Lang) -> Page {
    let t = l.t();
    let (status, which) = match r.error_type {
        LinkErrorType::TokenExpired => (StatusCode::GONE, "expired"),
        LinkErrorType::TokenConsumed => (StatusCode::GONE, "consumed"),
        _ => (StatusCode::BAD_REQUEST, "invalid"),
    };
    let title = t.get(&format!("widget.refused.{which}_title"));
    let mut body =
        format!("<h1>{}</h1><p>{}</p>", escape(title), escape(t.get(&format!("widget.refused.{which}"))));
    if let Some(url) = &r.redirect_url {
        let result = LinkOutcome::failed(r.error_type.clone(), r.error.clone()).result("", Some(url.clone()));
        let _ = write!(
            body,
            "<p><a class=\"button\" href=\"{}\">{}</a></p>",
            escape(&redirect_with_result(url, &result)),
            escape(t.get("widget.refused.back"))
        );
    }
    l.page(title, body).status(status)
}

/// The OAuth hand-off of a provider that is not connected by signing in with it.
pub fn not_oauth(p: &ProviderInfo, l: Lang) -> Page {
    let t = l.t();
    l.message(
        StatusCode::NOT_FOUND,
        t.get("widget.not_oauth_title"),
        &t.fill("widget.not_oauth", &[("name", &p.name)]),
    )
}

/// The OAuth hand-off the team's settings refuse (the reason is the team's, not the user's).
pub fn oauth_refused(p: &ProviderInfo, l: Lang) -> Page {
    let t = l.t();
    l.message(
        StatusCode::BAD_REQUEST,
        &t.fill("widget.oauth_refused_title", &[("name", &p.name)]),
        &t.fill("widget.oauth_refused", &[("name", &p.name)]),
    )
}
