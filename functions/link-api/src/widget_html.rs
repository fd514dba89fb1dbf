//! The markup of the hosted link page. Every value is escaped; the shell, headers and CSRF
//! field come from `wearlab_web::pages`. No script: links and forms do all the work, so the
//! page works with a keyboard, a screen reader and without JavaScript.

use std::fmt::Write;

use axum::http::StatusCode;
use wearlab_domain::common::provider_catalog::ProviderInfo;
use wearlab_domain::linking::tokens::TokenRefusal;
use wearlab_domain::linking::widget::{Form, Method, Widget, method};
use wearlab_domain::linking::{LinkOutcome, encode, redirect_with_result};
use wearlab_models::{LinkErrorType, LinkResult, LinkState, MfaMethod, ProviderMfaRequest};
use wearlab_web::pages::{Page, csrf_input, escape};

pub const PAGE_PATH: &str = "/v2/link/web";
pub const PROVIDER_PATH: &str = "/v2/link/web/provider/{provider}";
pub const OAUTH_PATH: &str = "/v2/link/web/oauth/{provider}";
pub const PASSWORD_PATH: &str = "/v2/link/web/password/{provider}";
pub const MFA_PATH: &str = "/v2/link/web/password/{provider}/mfa";

fn path(template: &str, slug: &str) -> String {
    template.replace("{provider}", &encode(slug))
}

/// A page address carrying the link token (the only value ever put in a page's URL).
fn with_token(template: &str, slug: &str, raw: &str) -> String {
    format!("{}?token={}", path(template, slug), encode(raw))
}

fn auth_label(m: Method) -> &'static str {
    match m {
        Method::Password => "Username and password",
        Method::Oauth => "Sign in with the provider",
        Method::Elsewhere => "In the mobile app",
    }
}

/// The provider's logo over its initial, so a logo that does not load leaves the initial
/// (an image with no set size and no alt text renders as nothing when broken).
fn logo(p: &ProviderInfo) -> String {
    let initial = escape(&p.name.chars().next().map(String::from).unwrap_or_default());
    // Decorative: the name is next to it. no-referrer keeps the page address (and its token)
    // from the logo's host.
    let img = p
        .logo
        .as_deref()
        .map(|url| format!("<img src=\"{}\" alt=\"\" referrerpolicy=\"no-referrer\">", escape(url)))
        .unwrap_or_default();
    format!("<span class=\"logo\" aria-hidden=\"true\"><span>{initial}</span>{img}</span>")
}

fn provider_row(p: &ProviderInfo, href: Option<&str>) -> String {
    let m = method(p);
    let inner = format!(
        "{}<span class=\"name\">{}</span><span class=\"kind\">{}</span>",
        logo(p),
        escape(&p.name),
        auth_label(m)
    );
    match href {
        Some(h) => format!(
            "<li><a class=\"provider\" href=\"{}\" data-provider=\"{}\">{inner}</a></li>",
            escape(h),
            escape(&p.slug)
        ),
        None => {
            format!("<li><div class=\"provider\" data-provider=\"{}\">{inner}</div></li>", escape(&p.slug))
        }
    }
}

/// The providers the token allows: password and OAuth ones one click away.
pub fn list(w: &Widget, raw: &str) -> Page {
    let mut items = String::new();
    for p in w.providers() {
        let href = match method(p) {
            Method::Password => Some(with_token(PROVIDER_PATH, &p.slug, raw)),
            Method::Oauth => Some(with_token(OAUTH_PATH, &p.slug, raw)),
            Method::Elsewhere => None,
        };
        items.push_str(&provider_row(p, href.as_deref()));
    }
    let body = if items.is_empty() {
        // Every provider the token allows is demo only on this deployment.
        "<h1>Connect a health data provider</h1>\
         <p class=\"none\" role=\"status\">None of the services this link is for can be connected here yet. \
         Please go back to the app that sent you.</p>"
            .to_owned()
    } else {
        format!(
            "<h1>Connect a health data provider</h1>\
             <p>Choose the service that holds your data. You sign in with the service itself.</p>\
             <nav aria-label=\"Providers\"><ul class=\"providers\">{items}</ul></nav>"
        )
    };
    Page::new("Connect a health data provider", body)
}

fn back_link(w: &Widget, raw: &str) -> String {
    if w.named().is_some() {
        return String::new();
    }
    format!("<p><a href=\"{PAGE_PATH}?token={}\">Choose another provider</a></p>", encode(raw))
}

fn error_box(text: &str) -> String {
    format!("<p class=\"error\" id=\"form-error\" role=\"alert\">{}</p>", escape(text))
}

/// What the user can do about an outcome that keeps them on the page.
pub fn retry_text(p: &ProviderInfo, form: &Form, error_type: Option<&LinkErrorType>) -> String {
    let name = &p.name;
    match (error_type, form) {
        (None, Form::Password) => "Enter your username and password.".into(),
        (None, Form::Mfa(_)) => "Enter the code you received.".into(),
        (Some(LinkErrorType::ProviderCredentialError), _) => {
            format!("{name} did not accept this username and password. Check them and try again.")
        }
        (Some(LinkErrorType::ProviderPasswordExpired), _) => {
            format!("{name} says your password has expired. Set a new one with {name}, then try again.")
        }
        (Some(LinkErrorType::UnsupportedRegion), _) => {
            format!("{name} does not serve the region you chose. Choose the region of your account.")
        }
        (Some(LinkErrorType::IncorrectMfaCode), Form::Mfa(_)) => {
            "That code was not accepted. Check the latest code you received and try again.".into()
        }
        (Some(LinkErrorType::IncorrectMfaCode), Form::Password) => {
            "Too many wrong codes. Sign in again to get a new code.".into()
        }
        _ => format!("{name} could not be reached just now. Try again in a moment."),
    }
}

/// The page of one provider: its password form, its OAuth hand-off, or where else to connect it.
pub fn provider(
    w: &Widget,
    p: &ProviderInfo,
    raw: &str,
    csrf: &str,
    error: Option<&str>,
    username: &str,
) -> Page {
    let name = escape(&p.name);
    let title = format!("Connect {}", p.name);
    let mut body = format!("<h1>Connect {name}</h1>");
    match method(p) {
        Method::Password => {
            let described =
                if error.is_some() { " aria-invalid=\"true\" aria-describedby=\"form-error\"" } else { "" };
            if let Some(e) = error {
                body.push_str(&error_box(e));
            }
            let _ = write!(
                body,
                "<p>Sign in with your {name} account. Your password goes to {name} only and is not stored.</p>\
                 <form method=\"post\" action=\"{action}\" class=\"card\" novalidate>{token}{csrf}\
                 <label for=\"username\">{name} username or email</label>\
                 <input id=\"username\" name=\"username\" type=\"text\" autocomplete=\"username\" autocapitalize=\"none\" \
                 spellcheck=\"false\" required maxlength=\"256\" value=\"{user}\"{described}{focus_user}>\
                 <label for=\"password\">Password</label>\
                 <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required \
                 maxlength=\"1024\"{described}{focus_password}>",
                action = path(PASSWORD_PATH, &p.slug),
                token = hidden_token(raw),
                csrf = csrf_input(csrf),
                user = escape(username),
                focus_user = if username.is_empty() { " autofocus" } else { "" },
                focus_password = if username.is_empty() { "" } else { " autofocus" },
            );
            if let Some(regions) = &p.regions {
                body.push_str(
                    "<label for=\"region\">Region of your account</label>\
                     <select id=\"region\" name=\"region\" required><option value=\"\">Choose a region</option>",
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
            body.push_str("<button type=\"submit\">Connect</button></form>");
        }
        Method::Oauth => {
            let _ = write!(
                body,
                "<p>You will continue to {name} to sign in and allow access, then come back here.</p>\
                 <p><a class=\"button\" href=\"{}\">Continue to {name}</a></p>",
                escape(&with_token(OAUTH_PATH, &p.slug, raw))
            );
        }
        Method::Elsewhere => {
            let _ = write!(
                body,
                "<p class=\"notice\">{name} is connected from the mobile app, not from this page. \
                 Open the app that sent you here and connect {name} there.</p>"
            );
        }
    }
    body.push_str(&back_link(w, raw));
    Page::new(title, body).forms_may_lead_to(w.token.record.redirect_url.as_deref())
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
) -> Page {
    let name = escape(&p.name);
    let by = match request.method {
        MfaMethod::Email => "by email",
        _ => "by text message",
    };
    let to = if request.hint.is_empty() {
        String::new()
    } else {
        format!(" to <strong class=\"mfa-hint\">{}</strong>", escape(&request.hint))
    };
    let described =
        if error.is_some() { " aria-invalid=\"true\" aria-describedby=\"form-error\"" } else { "" };
    let mut body = format!("<h1>Enter your {name} code</h1>");
    if let Some(e) = error {
        body.push_str(&error_box(e));
    }
    let _ = write!(
        body,
        "<p>{name} sent a one-time code {by}{to}.</p>\
         <form method=\"post\" action=\"{action}\" class=\"card\" novalidate>{token}{csrf}\
         <label for=\"mfa_code\">One-time code</label>\
         <input id=\"mfa_code\" name=\"mfa_code\" type=\"text\" inputmode=\"numeric\" autocomplete=\"one-time-code\" \
         required maxlength=\"32\" autofocus{described}>\
         <button type=\"submit\">Verify</button></form>",
        action = path(MFA_PATH, &p.slug),
        token = hidden_token(raw),
        csrf = csrf_input(csrf),
    );
    body.push_str(&back_link(w, raw));
    Page::new(format!("Enter your {} code", p.name), body)
        .forms_may_lead_to(w.token.record.redirect_url.as_deref())
}

/// The outcome of a link whose token has no redirect URL.
pub fn outcome(p: Option<&ProviderInfo>, result: &LinkResult) -> Page {
    let name = p.map_or_else(|| result.provider.clone(), |p| p.name.clone());
    if result.state == LinkState::Success {
        let title = format!("Connected to {name}");
        return Page::new(
            title.clone(),
            format!(
                "<h1>{}</h1><p class=\"notice\" role=\"status\">Your {} account is connected. You can close this window.</p>",
                escape(&title),
                escape(&name)
            ),
        );
    }
    let text = match result.error_type.as_ref() {
        Some(LinkErrorType::DuplicateConnection) => {
            format!("This {name} account is already connected to another user.")
        }
        Some(LinkErrorType::UserCancelled) => {
            format!("You declined access at {name}. Nothing was connected.")
        }
        Some(LinkErrorType::RequiredScopesNotGranted) => format!(
            "{name} was allowed without the access this app needs. Start again and allow everything it asks for."
        ),
        Some(LinkErrorType::TokenExpired) => {
            "This link has expired. Go back to the app and start again.".into()
        }
        Some(LinkErrorType::TokenConsumed) => {
            "This link was already used. Go back to the app and start again.".into()
        }
        Some(LinkErrorType::InvalidToken | LinkErrorType::TokenNotValidated) => {
            "This link is not valid for this step. Go back to the app and start again.".into()
        }
        _ => format!("{name} could not be connected. Go back to the app and try again later."),
    };
    let title = format!("{name} was not connected");
    Page::new(
        title.clone(),
        format!("<h1>{}</h1><p class=\"error\" role=\"alert\">{}</p>", escape(&title), escape(&text)),
    )
}

/// The page of a token that cannot be used: expired, already used, or unknown.
pub fn refused(r: &TokenRefusal) -> Page {
    let (status, title, text) = match r.error_type {
        LinkErrorType::TokenExpired => (
            StatusCode::GONE,
            "This link has expired",
            "Links to connect a provider work for 60 minutes. Go back to the app that sent you here and start again.",
        ),
        LinkErrorType::TokenConsumed => (
            StatusCode::GONE,
            "This link was already used",
            "A provider was connected with this link, and each link works once. To connect another provider, \
             start again from the app that sent you here.",
        ),
        _ => (
            StatusCode::BAD_REQUEST,
            "This link is not valid",
            "Check that you opened the whole link, or start again from the app that sent you here.",
        ),
    };
    let mut body = format!("<h1>{}</h1><p>{}</p>", escape(title), escape(text));
    if let Some(url) = &r.redirect_url {
        let result = LinkOutcome::failed(r.error_type.clone(), r.error.clone()).result("", Some(url.clone()));
        let _ = write!(
            body,
            "<p><a class=\"button\" href=\"{}\">Back to the app</a></p>",
            escape(&redirect_with_result(url, &result))
        );
    }
    Page::new(title, body).status(status)
}
