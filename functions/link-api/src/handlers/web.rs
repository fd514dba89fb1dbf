//! Browser-facing routes, authorised by the OAuth state or the link token alone (a browser
//! carries no API key): the OAuth callback and the hosted link page ("widget"). Not in the
//! OpenAPI document, whose operations all take the API key. Each handler reads its input,
//! calls one use case of `wearlab_domain::linking::widget` (or `oauth`) and renders
//! `crate::widget_html`; every answer goes through `wearlab_web::pages` for its headers.

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, header};
use wearlab_domain::common::hosted::PageKind;
use wearlab_domain::common::provider_catalog::{ProviderInfo, catalog};
use wearlab_domain::common::provider_marks::{self, MARKS_PATH};
use wearlab_domain::linking::oauth::{self, CallbackParams};
use wearlab_domain::linking::tokens::TokenState;
use wearlab_domain::linking::widget::{self, Form, Method, PasswordForm, Step, Widget};
use wearlab_web::i18n::Language;
use wearlab_web::pages::{self, FormData, PageError, query_param};
use wearlab_web::{ApiError, AppState, QueryParams};

use super::base_url;
use crate::widget_html::{self as html, Lang};

pub const CALLBACK_PATH: &str = "/v2/link/provider/oauth/{provider}/callback";
pub use html::{
    MFA_PATH, OAUTH_PATH as PAGE_OAUTH_PATH, PAGE_PATH, PASSWORD_PATH, PROVIDER_PATH, SCRIPT_PATH,
};
/// A provider's mark: `{MARKS_PATH}/{slug}.svg`.
pub const MARK_PATH: &str = "/v2/link/web/marks/{file}";

/// How long browsers and proxies keep the script (it changes with a release) and a mark.
const SCRIPT_MAX_AGE: u32 = 60 * 60;
const MARK_MAX_AGE: u32 = 7 * 24 * 60 * 60;

/// The language of a page: the explicit choice (`lang` of the page's address or form), else the
/// browser's `Accept-Language`, else English. The link token's own `language` goes here, as the
/// explicit choice when the page's address has none.
fn language(explicit: Option<&str>, headers: &HeaderMap) -> Lang {
    let accept = headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
    let chosen = explicit.and_then(Language::from_tag);
    Lang { language: Language::negotiate(explicit, accept), explicit: chosen.is_some() }
}

/// The list page's script.
pub async fn script() -> Response {
    pages::asset("text/javascript; charset=utf-8", html::SCRIPT, SCRIPT_MAX_AGE)
}

/// A provider's mark (the catalog's `logo`).
pub async fn mark(Path(file): Path<String>) -> Response {
    match file.strip_suffix(".svg").and_then(provider_marks::mark_svg) {
        Some(svg) => pages::asset("image/svg+xml", svg, MARK_MAX_AGE),
        None => PageError::Domain(wearlab_domain::DomainError::NotFound(format!(
            "No mark at {MARKS_PATH}/{file}."
        )))
        .into_response(),
    }
}

type PageAnswer = Result<Response, PageError>;

fn wants_html(headers: &HeaderMap) -> bool {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("text/html"))
}

/// Where the provider sends the browser back: on to the token's `redirect_url` with the
/// outcome; without one, the outcome as a page for a browser, or the Link result as JSON.
pub async fn oauth_callback(
    State(s): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    QueryParams(params): QueryParams<CallbackParams>,
) -> Result<Response, ApiError> {
    let out = oauth::callback(&s.deps, &provider, params, s.settings.public_url.as_deref()).await?;
    Ok(match out.redirect_to {
        Some(url) => pages::redirect(&url),
        None if wants_html(&headers) => {
            html::outcome(catalog().get(&provider), &out.result, language(None, &headers)).into_response()
        }
        None => {
            let mut res = Json(out.result).into_response();
            pages::set_security_headers(res.headers_mut(), None);
            res
        }
    })
}

/// The token of a page with the page's language, or the page that says why it cannot be used.
/// The token's own `language` is the explicit choice when the page's address or form has none
/// (carried on by every link and form, so the outcome page after a POST keeps it too).
async fn open(s: &AppState, raw: &str, l: Lang) -> Result<Result<(Widget, Lang), Response>, PageError> {
    Ok(widget::open(&s.deps, Some(raw)).await?.map_err(|r| html::refused(&r, l).into_response()).map(|w| {
        let l = match w.token.language() {
            Some(language) if !l.explicit => Lang { language, explicit: true },
            _ => l,
        };
        (w, l)
    }))
}

/// The link token of a page's query, its widget and its language, or the page refusing the token.
async fn open_query(
    s: &AppState,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Result<Result<(String, Widget, Lang), Response>, PageError> {
    let raw = query_param(query, "token").unwrap_or_default();
    let l = language(query_param(query, "lang").as_deref(), headers);
    Ok(open(s, &raw, l).await?.map(|(w, l)| (raw, w, l)))
}

/// [`page_answer`], its refusals said in the page's language.
pub async fn page(State(s): State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> Response {
    let lang = pages::request_language(q.as_deref(), &headers);
    pages::answer(lang, page_answer(State(s), headers, RawQuery(q)).await)
}

/// The page at `link_web_url`: the providers the token allows, or straight the provider it
/// names, or the code form of a login that waits for its code (a reload keeps the step).
/// `q` searches the list (the search form's GET).
async fn page_answer(State(s): State<AppState>, headers: HeaderMap, RawQuery(q): RawQuery) -> PageAnswer {
    let (raw, w, l) = match open_query(&s, q.as_deref(), &headers).await? {
        Ok(opened) => opened,
        Err(refused) => return Ok(refused),
    };
    let pending = match &w.token.record.state {
        TokenState::Mfa { provider, .. } => catalog().get(provider),
        _ => None,
    };
    match pending.or(w.named()) {
        Some(p) => provider_page(&s, &w, p, &raw, l).await,
        None => {
            let query = query_param(q.as_deref(), "q").unwrap_or_default();
            // A search longer than any name or alias finds nothing: not worth folding.
            let query: String = query.chars().take(100).collect();
            Ok(html::list(&w, &raw, &query, l).into_response())
        }
    }
}

/// [`provider_answer`], its refusals said in the page's language.
pub async fn provider(
    state: State<AppState>,
    path: Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let lang = pages::request_language(q.as_deref(), &headers);
    pages::answer(lang, provider_answer(state, path, headers, RawQuery(q)).await)
}

/// One provider's page.
async fn provider_answer(
    State(s): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> PageAnswer {
    let (raw, w, l) = match open_query(&s, q.as_deref(), &headers).await? {
        Ok(opened) => opened,
        Err(refused) => return Ok(refused),
    };
    let p = w.provider(&provider)?;
    provider_page(&s, &w, p, &raw, l).await
}

async fn provider_page(s: &AppState, w: &Widget, p: &ProviderInfo, raw: &str, l: Lang) -> PageAnswer {
    let csrf = pages::csrf_token(&s.deps, PageKind::LinkWidget, raw).await?;
    Ok(match w.pending_mfa(&p.slug) {
        Some(request) => html::mfa(w, p, raw, &csrf, &request, None, l),
        None => html::provider(w, p, raw, &csrf, None, "", l),
    }
    .into_response())
}

/// [`page_oauth_answer`], its refusals said in the page's language.
pub async fn page_oauth(
    state: State<AppState>,
    path: Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Response {
    let lang = pages::request_language(q.as_deref(), &headers);
    pages::answer(lang, page_oauth_answer(state, path, headers, RawQuery(q)).await)
}

/// Starts an OAuth consent from the page: on to the provider.
async fn page_oauth_answer(
    State(s): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> PageAnswer {
    let (raw, w, l) = match open_query(&s, q.as_deref(), &headers).await? {
        Ok(opened) => opened,
        Err(refused) => return Ok(refused),
    };
    let p = w.provider(&provider)?;
    if widget::method(p) != Method::Oauth {
        return Ok(html::not_oauth(p, l).into_response());
    }
    match oauth::start(&s.deps, None, Some(&raw), &p.slug, &base_url(&s, &headers)).await {
        Ok(entry) => Ok(pages::redirect(&entry.oauth_url)),
        // The reason names the team's settings; the end user can only go back.
        Err(wearlab_domain::DomainError::Rejected(reason)) => {
            tracing::info!(team_id = %w.token.record.team_id, provider = %p.slug, reason = %reason, "hosted oauth start refused");
            Ok(html::oauth_refused(p, l).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

/// [`post_password_answer`], its refusals said in the page's language.
pub async fn post_password(
    state: State<AppState>,
    path: Path<String>,
    headers: HeaderMap,
    form: FormData,
) -> Response {
    let lang = language(form.get("lang"), &headers).language;
    pages::answer(lang, post_password_answer(state, path, headers, form).await)
}

/// The password form was posted.
async fn post_password_answer(
    State(s): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    form: FormData,
) -> PageAnswer {
    let raw = form.text("token");
    let l = language(form.get("lang"), &headers);
    pages::check_csrf(&s.deps, PageKind::LinkWidget, &raw, &form).await?;
    let username = form.text("username");
    let submitted = PasswordForm {
        username: username.clone(),
        password: form.text("password"),
        region: form.get("region").map(str::to_owned),
    };
    let step = widget::submit_password(&s.deps, &raw, &provider, submitted).await?;
    answer(&s, &raw, &provider, step, &username, l).await
}

/// [`post_mfa_answer`], its refusals said in the page's language.
pub async fn post_mfa(
    state: State<AppState>,
    path: Path<String>,
    headers: HeaderMap,
    form: FormData,
) -> Response {
    let lang = language(form.get("lang"), &headers).language;
    pages::answer(lang, post_mfa_answer(state, path, headers, form).await)
}

/// The one-time code form was posted.
async fn post_mfa_answer(
    State(s): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    form: FormData,
) -> PageAnswer {
    let raw = form.text("token");
    let l = language(form.get("lang"), &headers);
    pages::check_csrf(&s.deps, PageKind::LinkWidget, &raw, &form).await?;
    let step = widget::submit_mfa(&s.deps, &raw, &provider, &form.text("mfa_code")).await?;
    answer(&s, &raw, &provider, step, "", l).await
}

/// The page a step leads to. The password is never written back into a page.
async fn answer(s: &AppState, raw: &str, provider: &str, step: Step, username: &str, l: Lang) -> PageAnswer {
    let (form, error_type) = match step {
        Step::Done { result, redirect_to: Some(url) } => {
            tracing::debug!(provider = %result.provider, state = %result.state, "hosted link ended");
            return Ok(pages::redirect(&url));
        }
        Step::Done { result, redirect_to: None } => {
            return Ok(html::outcome(catalog().get(provider), &result, l).into_response());
        }
        // A fresh code step: nothing went wrong.
        Step::Mfa(request) => (Form::Mfa(request), None),
        Step::Retry { form, error_type } => (form, Some(error_type)),
    };
    // The token was usable a moment ago; if it is not now, say so.
    let (w, l) = match open(s, raw, l).await? {
        Ok(opened) => opened,
        Err(refused) => return Ok(refused),
    };
    let p = w.provider(provider)?;
    let csrf = pages::csrf_token(&s.deps, PageKind::LinkWidget, raw).await?;
    let error = error_type.map(|t| html::retry_text(p, &form, t.as_ref(), l));
    Ok(match form {
        Form::Mfa(request) => html::mfa(&w, p, raw, &csrf, &request, error.as_deref(), l),
        Form::Password => html::provider(&w, p, raw, &csrf, error.as_deref(), username, l),
    }
    .into_response())
}
