//! The user portal opened by a portal link: `/v3/portal?token=...` (launch links) and
//! `/v3/p/{code}` (short communications links), each with its order pages, plus the identity
//! check of communications links. Server-rendered HTML; the link's signature and expiry are
//! checked on every visit. No API key: the link is the authorization. Every answer goes
//! through `wearlab_web::pages` for its headers and CSRF check.
//!
//! Every page, refusals included, is in the reader's language: the `lang` query parameter when
//! given (and then kept in the portal's own links and forms), else the browser's
//! `Accept-Language`, else English.

use std::sync::Arc;
use wearlab_domain::teams::branding;

use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;
use wearlab_domain::common::hosted::PageKind;
use wearlab_domain::lab::portal::{self, Access, Denied};
use wearlab_domain::lab::verification::{self, Channel, Checked, DEVICE_COOKIE, RESEND_AFTER, Requested};
use wearlab_domain::ports::LabNetwork;
use wearlab_web::i18n::{Language, catalogue};
use wearlab_web::pages::{self, FormData, PageError, query_param};
use wearlab_web::{AppState, QueryParams};

use crate::html::{self, CodeNote, LinkPaths};

pub const ORDER_BY_TOKEN_PATH: &str = "/v3/portal/orders/{order_id}";
pub const ORDER_BY_CODE_PATH: &str = "/v3/p/{code}/orders/{order_id}";
pub const SEND_CODE_PATH: &str = "/v3/p/{code}/verify/send";
pub const VERIFY_PATH: &str = "/v3/p/{code}/verify";

type PageAnswer = Result<Response, PageError>;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PortalParams {
    /// The signed token of a portal link.
    token: String,
    /// The language of the pages (`en`, `es`, `de`, `fr`, `pt`); without it, the browser's
    /// `Accept-Language`, else English.
    #[allow(dead_code)] // read from the raw query, with the other pages' parameter
    lang: Option<String>,
}

/// The reader's language, and the explicit choice the portal's links keep.
#[derive(Debug, Clone, Copy)]
struct Reader {
    lang: Language,
    explicit: Option<Language>,
}

impl Reader {
    fn of(query: Option<&str>, headers: &HeaderMap) -> Self {
        let explicit = query_param(query, "lang").as_deref().and_then(Language::from_tag);
        Self { lang: explicit.unwrap_or_else(|| pages::request_language(None, headers)), explicit }
    }

    fn launch(&self, token: String) -> LinkPaths {
        LinkPaths::launch(token, self.explicit)
    }

    fn short(&self, code: String) -> LinkPaths {
        LinkPaths::short(code, self.explicit)
    }

    fn message(&self, status: StatusCode, title: &str, text: &str) -> Response {
        html::message(status, self.lang, title, catalogue(self.lang).get(text)).into_response()
    }

    /// The answer of a page: its outcome, or its error said in the reader's language.
    fn answer(&self, outcome: PageAnswer) -> Response {
        pages::answer(self.lang, outcome)
    }
}

/// The page of a link that does not open.
fn denied(r: &Reader, d: Denied) -> Response {
    let (status, title, text) = match d {
        Denied::Invalid => (StatusCode::FORBIDDEN, "portal.link.invalid.title", "portal.link.invalid"),
        Denied::Expired => (StatusCode::GONE, "portal.link.expired.title", "portal.link.expired"),
        Denied::Gone => (StatusCode::NOT_FOUND, "portal.link.gone.title", "portal.link.gone"),
    };
    r.message(status, title, text)
}

/// The portal's first page: the order the link names, else every order of the user.
async fn home(
    s: &AppState,
    network: &dyn LabNetwork,
    headers: &HeaderMap,
    access: &Access,
    paths: &LinkPaths,
    r: &Reader,
) -> PageAnswer {
    let links = s.public_links(headers);
    let brand = branding::brand(&s.deps, access.team_id).await?;
    if let Some(order_id) = access.order_id {
        return match portal::order_view(&s.deps, network, access, order_id, &links).await? {
            Some(v) => Ok(html::order_page(&v, paths, false, r.lang).brand(&brand).into_response()),
            None => Ok(r.message(StatusCode::NOT_FOUND, "portal.link.gone.title", "portal.order.gone")),
        };
    }
    let view = portal::view(&s.deps, network, access, &links).await?;
    Ok(html::portal_page(&view, paths, r.lang).brand(&brand).into_response())
}

async fn order(
    s: &AppState,
    network: &dyn LabNetwork,
    headers: &HeaderMap,
    access: &Access,
    paths: &LinkPaths,
    id: &str,
    r: &Reader,
) -> PageAnswer {
    let found = match Uuid::parse_str(id) {
        Ok(id) => portal::order_view(&s.deps, network, access, id, &s.public_links(headers)).await?,
        Err(_) => None,
    };
    Ok(match found {
        Some(v) => {
            let brand = branding::brand(&s.deps, access.team_id).await?;
            html::order_page(&v, paths, access.order_id.is_none(), r.lang).brand(&brand).into_response()
        }
        None => r.message(StatusCode::NOT_FOUND, "portal.order.not_found.title", "portal.order.not_found"),
    })
}

/// Opens the portal of a launch link (HTML).
#[utoipa::path(get, path = "/v3/portal", operation_id = "open_portal", tag = "lab", params(PortalParams),
    responses(
        (status = 200, description = "The user's orders.", content_type = "text/html", body = String),
        (status = 403, description = "Not a valid link.", content_type = "text/html", body = String),
        (status = 404, description = "The user is gone.", content_type = "text/html", body = String),
        (status = 410, description = "The link has expired.", content_type = "text/html", body = String),
    ))]
pub async fn by_token(
    State(s): State<AppState>,
    Extension(network): Extension<Arc<dyn LabNetwork>>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
    QueryParams(p): QueryParams<PortalParams>,
) -> Response {
    let r = Reader::of(q.as_deref(), &headers);
    r.answer(
        async {
            match portal::check_token(&s.deps, &p.token).await? {
                Ok(access) => {
                    home(&s, network.as_ref(), &headers, &access, &r.launch(p.token.clone()), &r).await
                }
                Err(d) => Ok(denied(&r, d)),
            }
        }
        .await,
    )
}

/// One order of a launch link's user.
pub async fn order_by_token(
    State(s): State<AppState>,
    Extension(network): Extension<Arc<dyn LabNetwork>>,
    headers: HeaderMap,
    Path(order_id): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let r = Reader::of(q.as_deref(), &headers);
    let token = query_param(q.as_deref(), "token").unwrap_or_default();
    r.answer(
        async {
            match portal::check_token(&s.deps, &token).await? {
                Ok(access) => {
                    order(&s, network.as_ref(), &headers, &access, &r.launch(token.clone()), &order_id, &r)
                        .await
                }
                Err(d) => Ok(denied(&r, d)),
            }
        }
        .await,
    )
}

/// The device cookie of this link, if the browser sent one.
fn device_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(name, _)| *name == DEVICE_COOKIE)
        .map(|(_, value)| value)
}

/// A communications link's access once the device passed the identity check; else the page
/// that starts the check.
async fn checked_short(
    s: &AppState,
    headers: &HeaderMap,
    code: &str,
    r: &Reader,
) -> Result<Result<Access, Response>, PageError> {
    let access = match portal::check_code(&s.deps, code).await? {
        Ok(a) => a,
        Err(d) => return Ok(Err(denied(r, d))),
    };
    if !access.needs_verification()
        || verification::device_verified(&s.deps, &access, device_cookie(headers)).await?
    {
        return Ok(Ok(access));
    }
    Ok(Err(verify_start(s, &access, None, r).await?))
}

async fn verify_start(s: &AppState, access: &Access, error: Option<&str>, r: &Reader) -> PageAnswer {
    let d = verification::destinations(&s.deps, access).await?;
    let csrf = pages::csrf_token(&s.deps, PageKind::Portal, &access.link).await?;
    let paths = r.short(access.link.clone());
    let brand = branding::brand(&s.deps, access.team_id).await?;
    Ok(html::verify_start(&d, &paths, &csrf, error, r.lang).brand(&brand).into_response())
}

/// Opens the portal of a short communications link (HTML).
#[utoipa::path(get, path = "/v3/p/{code}", operation_id = "open_portal_short_link", tag = "lab",
    params(("code" = String, Path, description = "The short link's code."),
        ("lang" = Option<String>, Query, description = "The language of the pages (`en`, `es`, `de`, `fr`, \
            `pt`); without it, the browser's `Accept-Language`, else English.")),
    responses(
        (status = 200, description = "The user's orders, or, on a device that has not confirmed it is the \
            user's, the identity check (a one-time code sent through the user.portal.verification_requested \
            event).", content_type = "text/html", body = String),
        (status = 403, description = "Not a valid link.", content_type = "text/html", body = String),
        (status = 404, description = "The user is gone.", content_type = "text/html", body = String),
        (status = 409, description = "The identity check is needed, but the user has no email address or \
            phone number to send a code to.", content_type = "text/html", body = String),
        (status = 410, description = "The link has expired.", content_type = "text/html", body = String),
    ))]
pub async fn by_code(
    State(s): State<AppState>,
    Extension(network): Extension<Arc<dyn LabNetwork>>,
    headers: HeaderMap,
    Path(code): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let r = Reader::of(q.as_deref(), &headers);
    r.answer(
        async {
            match checked_short(&s, &headers, &code, &r).await? {
                Ok(access) => home(&s, network.as_ref(), &headers, &access, &r.short(code.clone()), &r).await,
                Err(page) => Ok(page),
            }
        }
        .await,
    )
}

/// One order of a communications link's user.
pub async fn order_by_code(
    State(s): State<AppState>,
    Extension(network): Extension<Arc<dyn LabNetwork>>,
    headers: HeaderMap,
    Path((code, order_id)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> Response {
    let r = Reader::of(q.as_deref(), &headers);
    r.answer(
        async {
            match checked_short(&s, &headers, &code, &r).await? {
                Ok(access) => {
                    order(&s, network.as_ref(), &headers, &access, &r.short(code.clone()), &order_id, &r)
                        .await
                }
                Err(page) => Ok(page),
            }
        }
        .await,
    )
}

/// The link of a verification form, CSRF-checked.
async fn form_access(
    s: &AppState,
    code: &str,
    form: &FormData,
    r: &Reader,
) -> Result<Result<Access, Response>, PageError> {
    let access = match portal::check_code(&s.deps, code).await? {
        Ok(a) => a,
        Err(d) => return Ok(Err(denied(r, d))),
    };
    pages::check_csrf(&s.deps, PageKind::Portal, &access.link, form).await?;
    Ok(Ok(access))
}

/// "Send code": a code is made and emitted for the team to deliver.
pub async fn send_code(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(code): Path<String>,
    RawQuery(q): RawQuery,
    form: FormData,
) -> Response {
    let r = Reader::of(q.as_deref(), &headers);
    r.answer(send_code_page(&s, &code, &form, &r).await)
}

async fn send_code_page(s: &AppState, code: &str, form: &FormData, r: &Reader) -> PageAnswer {
    let c = catalogue(r.lang);
    let access = match form_access(s, code, form, r).await? {
        Ok(a) => a,
        Err(page) => return Ok(page),
    };
    let brand = branding::brand(&s.deps, access.team_id).await?;
    let Some(channel) = form.get("channel").and_then(Channel::parse) else {
        return verify_start(s, &access, Some(c.get("portal.code.choose")), r).await;
    };
    let paths = r.short(access.link.clone());
    let hint =
        verification::destinations(&s.deps, &access).await?.hint(channel).unwrap_or_default().to_owned();
    let csrf = pages::csrf_token(&s.deps, PageKind::Portal, &access.link).await?;
    Ok(match verification::request(&s.deps, &access, channel).await? {
        Requested::Sent { .. } => html::verify_code(&paths, &csrf, channel, &hint, CodeNote::None, r.lang)
            .brand(&brand)
            .into_response(),
        Requested::TooSoon { retry_after } if retry_after <= RESEND_AFTER => {
            let seconds = retry_after.num_seconds().max(1).to_string();
            let notice = c.fill("portal.code.recent", &[("seconds", &seconds)]);
            html::verify_code(&paths, &csrf, channel, &hint, CodeNote::Notice(&notice), r.lang)
                .brand(&brand)
                .into_response()
        }
        Requested::TooSoon { .. } => r.message(
            StatusCode::TOO_MANY_REQUESTS,
            "portal.code.daily_limit.title",
            "portal.code.daily_limit",
        ),
        Requested::NoDestination => {
            return verify_start(s, &access, Some(c.get("portal.code.choose_option")), r).await;
        }
    })
}

/// "Verify": the typed code is checked; a right one marks this device with a cookie.
pub async fn verify(
    State(s): State<AppState>,
    headers: HeaderMap,
    Path(code): Path<String>,
    RawQuery(q): RawQuery,
    form: FormData,
) -> Response {
    let r = Reader::of(q.as_deref(), &headers);
    r.answer(verify_page(&s, &headers, &code, &form, &r).await)
}

async fn verify_page(
    s: &AppState,
    headers: &HeaderMap,
    code: &str,
    form: &FormData,
    r: &Reader,
) -> PageAnswer {
    let c = catalogue(r.lang);
    let access = match form_access(s, code, form, r).await? {
        Ok(a) => a,
        Err(page) => return Ok(page),
    };
    let brand = branding::brand(&s.deps, access.team_id).await?;
    let channel = form.get("channel").and_then(Channel::parse).unwrap_or(Channel::Email);
    let paths = r.short(access.link.clone());
    let csrf = || pages::csrf_token(&s.deps, PageKind::Portal, &access.link);
    let hint = || async {
        Ok::<_, PageError>(
            verification::destinations(&s.deps, &access).await?.hint(channel).unwrap_or_default().to_owned(),
        )
    };
    Ok(match verification::check(&s.deps, &access, &form.text("code")).await? {
        Checked::Verified { device, max_age } => {
            let mut res = pages::redirect(&paths.home());
            // HttpOnly: no script reads it. SameSite=Lax: it is sent when the user follows the
            // link from their mail (a cross-site top-level GET); forms carry CSRF tokens anyway.
            // Path: this link only.
            let secure =
                if s.public_links(headers).base_url.starts_with("https://") { "; Secure" } else { "" };
            let cookie = format!(
                "{DEVICE_COOKIE}={device}; Path=/v3/p/{code}; Max-Age={}; HttpOnly; SameSite=Lax{secure}",
                max_age.num_seconds().max(0)
            );
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                res.headers_mut().append(header::SET_COOKIE, v);
            }
            res
        }
        Checked::Wrong { attempts_left } => {
            let text = if attempts_left == 1 {
                c.get("portal.code.wrong_one").to_owned()
            } else {
                c.fill("portal.code.wrong", &[("count", &attempts_left.to_string())])
            };
            let note = CodeNote::Error(&text);
            let page = html::verify_code(&paths, &csrf().await?, channel, &hint().await?, note, r.lang)
                .brand(&brand);
            page.status(StatusCode::BAD_REQUEST).into_response()
        }
        Checked::TooManyAttempts => {
            html::too_many_attempts(&paths, &csrf().await?, channel, r.lang).brand(&brand).into_response()
        }
        Checked::Busy => {
            let note = CodeNote::Error(c.get("portal.code.busy"));
            let page = html::verify_code(&paths, &csrf().await?, channel, &hint().await?, note, r.lang)
                .brand(&brand);
            let mut res = page.status(StatusCode::TOO_MANY_REQUESTS).into_response();
            res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            res
        }
        Checked::NoCode => {
            let d = verification::destinations(&s.deps, &access).await?;
            html::verify_start(&d, &paths, &csrf().await?, Some(c.get("portal.code.expired")), r.lang)
                .status(StatusCode::BAD_REQUEST)
                .into_response()
        }
    })
}
