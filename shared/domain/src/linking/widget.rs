//! The hosted link page (the "widget") at a token's `link_web_url`: which providers it offers
//! and where each form step leads. A browser carries no API key, so the link token alone
//! authorises, and every step goes through the same use cases (and token rules) as the API.
//!
//! Outcomes the end user can fix on the page (a wrong password or code, a region the provider
//! does not serve, a provider that failed for a moment) keep the user on the page with the
//! form again; every other outcome ends the link: the browser goes to the token's
//! `redirect_url` with `state`, `error_type` and `error`, or the page says the outcome.

use crate::teams::branding::{self, Brand};
use wearlab_models::{
    AuthType, LinkErrorType, LinkResult, LinkState, MfaMethod, PasswordLinkBody, ProviderAvailability,
    ProviderMfaRequest, Region,
};

use super::password::{self, PasswordAttempt};
use super::team_apps;
use super::tokens::{self, TokenRefusal, TokenState, ValidToken};
use super::{known_provider, redirect_with_result};
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::provider_catalog::{Category, ProviderInfo, catalog};

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
    /// Providers this deployment (or this team, for a `team_oauth` provider without the team's
    /// own app) cannot link for real: never offered.
    unlinkable: Vec<&'static str>,
    /// The team's pinned order (`provider_order` of its link settings).
    order: Vec<String>,
    /// The team's hidden providers (`hidden_providers`).
    hidden: Vec<String>,
    /// The team's brand: its name in the heading and as the app phone data is connected in.
    pub brand: Brand,
}

/// A line of the provider list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Row {
    /// A provider the page offers: linked from the page ([`Method::Password`], [`Method::Oauth`])
    /// or explained ([`Method::Elsewhere`]: connected in the team's app).
    Offer(&'static ProviderInfo),
    /// A service its maker turned off: the page says so and points to its successor, when the
    /// page offers that.
    Discontinued { provider: &'static ProviderInfo, successor: Option<&'static ProviderInfo> },
}

impl Row {
    /// The provider the line is about.
    pub fn provider(&self) -> &'static ProviderInfo {
        match self {
            Row::Offer(p) | Row::Discontinued { provider: p, .. } => p,
        }
    }
}

/// The lines of one [`Category`], in the page's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub category: Category,
    pub rows: Vec<Row>,
}

impl Widget {
    /// Whether the token allows `slug` and the team did not hide it.
    fn shows(&self, slug: &str) -> bool {
        self.token.record.allows(slug) && !self.hidden.iter().any(|h| h == slug)
    }

    /// Whether the page offers `slug`: shown, linkable here, and not turned off by its maker.
    fn offers(&self, slug: &str) -> bool {
        self.shows(slug)
            && !self.unlinkable.contains(&slug)
            && catalog().get(slug).is_some_and(|p| p.successor.is_none())
    }

    /// The providers the page offers, in catalog order.
    pub fn providers(&self) -> Vec<&'static ProviderInfo> {
        catalog().all().iter().filter(|p| self.offers(&p.slug)).collect()
    }

    /// The list the page shows: one line per thing a user recognises (of versioned twins, the first the page offers), grouped by
    /// category; within a group the team's pinned providers first in its order, then the most
    /// used first (`provider_catalog::POPULARITY`); groups in their order, a group with a pinned provider first.
    pub fn groups(&self) -> Vec<Group> {
        let c = catalog();
        // (pin, popularity, row)
        let mut lines: Vec<(usize, usize, Row)> = Vec::new();
        for p in c.all() {
            let family = p.family();
            if family.first() != Some(&p.slug.as_str()) {
                continue;
            }
            let members: Vec<&'static ProviderInfo> = family.iter().filter_map(|s| c.get(s)).collect();
            let row = match members.iter().find(|m| self.offers(&m.slug)) {
                Some(m) => Row::Offer(m),
                None if p.successor.is_some() && self.shows(&p.slug) => Row::Discontinued {
                    provider: p,
                    successor: p.successor.as_deref().filter(|s| self.offers(s)).and_then(|s| c.get(s)),
                },
                None => continue,
            };
            let pin = family
                .iter()
                .filter_map(|s| self.order.iter().position(|o| o == s))
                .min()
                .unwrap_or(usize::MAX);
            let popularity = members.iter().map(|m| m.popularity()).min().unwrap_or(usize::MAX);
            lines.push((pin, popularity, row));
        }
        lines.sort_by_key(|(pin, popularity, _)| (*pin, *popularity));
        let mut groups: Vec<(usize, usize, Group)> = Category::ORDER
            .iter()
            .enumerate()
            .map(|(i, category)| {
                let mine: Vec<&(usize, usize, Row)> =
                    lines.iter().filter(|(_, _, r)| r.provider().category == *category).collect();
                let pin = mine.first().map_or(usize::MAX, |(pin, _, _)| *pin);
                (pin, i, Group { category: *category, rows: mine.iter().map(|(_, _, r)| *r).collect() })
            })
            .filter(|(_, _, g)| !g.rows.is_empty())
            .collect();
        groups.sort_by_key(|(pin, i, _)| (*pin, *i));
        groups.into_iter().map(|(_, _, g)| g).collect()
    }

    /// The provider the token was made for: the page opens straight on it.
    pub fn named(&self) -> Option<&'static ProviderInfo> {
        self.token.record.provider.as_deref().filter(|p| self.offers(p)).and_then(|p| catalog().get(p))
    }

    /// A provider of the page's path: 404 when unknown, not allowed by the token, hidden by the
    /// team, turned off by its maker or not linkable on this deployment.
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

/// The token of a page: usable, or why not (expired, consumed, unknown). The page offers what
/// the deployment can link (the phone's providers always: the team's app connects them), a
/// `team_oauth` provider only once the team brought its own app, and nothing the team hid.
pub async fn open(deps: &Deps, raw: Option<&str>) -> Result<Result<Widget, TokenRefusal>, DomainError> {
    let token = match tokens::peek(deps, raw).await? {
        Ok(t) => t,
        Err(r) => return Ok(Err(r)),
    };
    let team = token.record.team_id;
    let asks_team_app =
        catalog().all().iter().any(|p| p.is(&AuthType::TeamOauth) && token.record.allows(&p.slug));
    let team_apps =
        if asks_team_app { team_apps::providers_with_oauth_app(deps, team).await? } else { Vec::new() };
    let mut unlinkable = Vec::new();
    for p in catalog().all() {
        let here = p.availability_on(deps.providers.as_ref()) == ProviderAvailability::DemoOnly;
        let needs_app =
            p.is(&AuthType::TeamOauth) && token.record.allows(&p.slug) && !team_apps.contains(&p.slug);
        if here || needs_app {
            unlinkable.push(p.slug.as_str());
        }
    }
    let settings = team_apps::link_config(deps, team).await?;
    let brand = branding::brand(deps, team).await?;
    Ok(Ok(Widget {
        token,
        unlinkable,
        order: settings.provider_order,
        hidden: settings.hidden_providers,
        brand,
    }))
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
