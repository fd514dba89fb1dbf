//! The hosted link page (the "widget") at a token's `link_web_url`: which providers it offers
//! and where each form step leads. A browser carries no API key, so the link token alone
//! authorises, and every step goes through the same use cases (and token rules) as the API.
//!
//! Outcomes the end user can fix on the page (a wrong password or code, a region the provider
//! does not serve, a provider that failed for a moment) keep the user on the page with the
//! form again; every other outcome ends the link: the browser goes to the token's
//! `redirect_url` with `state`, `error_type` and `error`, or the page says the outcome.

use wearlab_models::{
    AuthType, LinkErrorType, LinkResult, LinkState, MfaMethod, PasswordLinkBody, ProviderMfaRequest, Region,
};

use super::password::{self, PasswordAttempt};
use super::tokens::{self, TokenRefusal, TokenState, ValidToken};
use super::{known_provider, redirect_with_result};
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::provider_catalog::{ProviderInfo, catalog};

/// How the page links a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// A username and password form (and a region when the provider has regional services).
    Password,
    /// A hand-off to the provider's consent page.
    Oauth,
    /// Not from a browser: through the mobile SDK, the provider's app or by email.
    Elsewhere,
}

pub fn method(p: &ProviderInfo) -> Method {
    if p.is(&AuthType::Password) {
        Method::Password
    } else if p.is_oauth() {
        Method::Oauth
    } else {
        Method::Elsewhere
    }
}

/// A page opened with a usable token.
#[derive(Debug, Clone, PartialEq)]
pub struct Widget {
    pub token: ValidToken,
    /// Providers this deployment cannot link for real (demo only): never offered.
    unlinkable: Vec<&'static str>,
}

impl Widget {
    /// Whether the page offers `slug`: the token allows it and the deployment can link it.
    fn offers(&self, slug: &str) -> bool {
        self.token.record.allows(slug) && !self.unlinkable.contains(&slug)
    }

    /// The providers the page offers, in catalog order.
    pub fn providers(&self) -> Vec<&'static ProviderInfo> {
        catalog().all().iter().filter(|p| self.offers(&p.slug)).collect()
    }

    /// The provider the token was made for: the page opens straight on it.
    pub fn named(&self) -> Option<&'static ProviderInfo> {
        self.token.record.provider.as_deref().filter(|p| self.offers(p)).and_then(|p| catalog().get(p))
    }

    /// A provider of the page's path: 404 when unknown, not allowed by the token, or not
    /// linkable on this deployment.
    pub fn provider(&self, slug: &str) -> Result<&'static ProviderInfo, DomainError> {
        let p = known_provider(slug)?;
        if !self.offers(slug) {
            return Err(DomainError::NotFound(format!("This link cannot connect {slug}.")));
        }
        Ok(p)
    }

    /// The code request of a login of `provider` that waits for its one-time code.
    pub fn pending_mfa(&self, provider: &str) -> Option<ProviderMfaRequest> {
        match &self.token.record.state {
            TokenState::Mfa { provider: p, request, .. } if p == provider => {
                // Records from before the hint was kept: ask without one.
                Some(
                    request
                        .clone()
                        .unwrap_or(ProviderMfaRequest { method: MfaMethod::Sms, hint: String::new() }),
                )
            }
            _ => None,
        }
    }
}

/// The token of a page: usable, or why not (expired, consumed, unknown).
pub async fn open(deps: &Deps, raw: Option<&str>) -> Result<Result<Widget, TokenRefusal>, DomainError> {
    let unlinkable = catalog()
        .all()
        .iter()
        .filter(|p| super::not_linkable(deps.providers.as_ref(), &p.slug).is_some())
        .map(|p| p.slug.as_str())
        .collect::<Vec<_>>();
    Ok(tokens::peek(deps, raw).await?.map(|token| Widget { token, unlinkable }))
}

/// Which form the page shows again.
#[derive(Debug, Clone, PartialEq)]
pub enum Form {
    Password,
    Mfa(ProviderMfaRequest),
}

/// Where a submitted form leads.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The link is over: go to `redirect_to` when the token has a redirect URL, else show
    /// `result`.
    Done { result: LinkResult, redirect_to: Option<String> },
    /// The provider sent a one-time code: ask for it.
    Mfa(ProviderMfaRequest),
    /// The user can fix it: the form again, saying why (`None`: a field was left empty or too
    /// long).
    Retry { form: Form, error_type: Option<LinkErrorType> },
}

fn done(result: LinkResult) -> Step {
    let redirect_to = result.redirect_url.as_deref().map(|u| redirect_with_result(u, &result));
    Step::Done { result, redirect_to }
}

fn refused(slug: &str, r: TokenRefusal) -> Step {
    done(r.result(slug))
}

/// What the password form posted. The password goes to the provider and nowhere else.
pub struct PasswordForm {
    pub username: String,
    pub password: String,
    pub region: Option<String>,
}

/// The password form of `provider` was posted with the page's token.
pub async fn submit_password(
    deps: &Deps,
    raw: &str,
    provider: &str,
    form: PasswordForm,
) -> Result<Step, DomainError> {
    let info = password::password_provider(provider)?;
    let widget = match open(deps, Some(raw)).await? {
        Ok(w) => w,
        Err(r) => return Ok(refused(&info.slug, r)),
    };
    let body = PasswordLinkBody {
        username: form.username,
        password: form.password,
        region: form.region.filter(|r| !r.is_empty()).map(|r| Region::from(r.as_str())),
    };
    let attempt = match PasswordAttempt::parse(provider, body) {
        Ok(a) => a,
        Err(DomainError::Validation(_)) => return Ok(Step::Retry { form: Form::Password, error_type: None }),
        Err(e) => return Err(e),
    };
    let result = password::link(deps, widget.token.record.team_id, Some(raw), attempt).await?;
    next(deps, raw, &info.slug, result).await
}

/// The one-time code form of `provider` was posted with the page's token.
pub async fn submit_mfa(deps: &Deps, raw: &str, provider: &str, code: &str) -> Result<Step, DomainError> {
    let info = password::password_provider(provider)?;
    let widget = match open(deps, Some(raw)).await? {
        Ok(w) => w,
        Err(r) => return Ok(refused(&info.slug, r)),
    };
    let team = widget.token.record.team_id;
    let result = match password::complete_mfa(deps, team, Some(raw), &info.slug, code).await {
        Ok(r) => r,
        Err(DomainError::Validation(_)) => {
            let form = widget.pending_mfa(&info.slug).map_or(Form::Password, Form::Mfa);
            return Ok(Step::Retry { form, error_type: None });
        }
        Err(e) => return Err(e),
    };
    next(deps, raw, &info.slug, result).await
}

/// The step a Link result leads to.
async fn next(deps: &Deps, raw: &str, slug: &str, result: LinkResult) -> Result<Step, DomainError> {
    if result.state == LinkState::PendingProviderMfa {
        let request = result
            .provider_mfa
            .clone()
            .unwrap_or(ProviderMfaRequest { method: MfaMethod::Sms, hint: String::new() });
        return Ok(Step::Mfa(request));
    }
    let Some(error_type) = result.error_type.clone().filter(|_| result.state == LinkState::Error) else {
        return Ok(done(result));
    };
    Ok(match error_type {
        LinkErrorType::ProviderCredentialError
        | LinkErrorType::ProviderPasswordExpired
        | LinkErrorType::UnsupportedRegion
        | LinkErrorType::ProviderApiError => {
            Step::Retry { form: Form::Password, error_type: Some(error_type) }
        }
        LinkErrorType::IncorrectMfaCode => {
            // After the last allowed wrong code the step is dropped: sign in again.
            let pending = match open(deps, Some(raw)).await? {
                Ok(w) => w.pending_mfa(slug),
                Err(r) => return Ok(refused(slug, r)),
            };
            Step::Retry { form: pending.map_or(Form::Password, Form::Mfa), error_type: Some(error_type) }
        }
        _ => done(result),
    })
}
