//! The team's self-service linking settings: its own OAuth applications (the secret sealed,
//! never returned) and whether duplicate connections are rejected.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::{LinkConfig, LinkConfigPatch, OauthApp, OauthAppBody, ValidationIssue};

use super::{corrupt, known_provider};
use crate::Deps;
use crate::common::crypto::{Sealed, Secret};
use crate::common::error::{DomainError, issue};
use crate::common::ids::TeamId;
use crate::common::limits;
use crate::common::provider_catalog::{ProviderInfo, catalog};
use crate::keys;
use crate::ports::providers::OauthClient;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Key, Query, StoreError, WriteOp, query_all};

const MAX_CLIENT_ID: usize = 256;
const MAX_CLIENT_SECRET: usize = 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct LinkConfigRecord {
    reject_duplicate_connection: bool,
    // Records from before the widget's settings have neither.
    #[serde(default)]
    provider_order: Vec<String>,
    #[serde(default)]
    hidden_providers: Vec<String>,
}

/// The team's link settings (defaults when it never set them: duplicates allowed, the widget's
/// own order, nothing hidden).
pub async fn link_config(deps: &Deps, team: TeamId) -> Result<LinkConfig, DomainError> {
    Ok(match deps.table.get(&keys::linking::team_link_config(team)).await? {
        Some(item) => {
            let r: LinkConfigRecord = item.decode()?;
            LinkConfig {
                reject_duplicate_connection: r.reject_duplicate_connection,
                provider_order: r.provider_order,
                hidden_providers: r.hidden_providers,
            }
        }
        None => LinkConfig {
            reject_duplicate_connection: false,
            provider_order: Vec::new(),
            hidden_providers: Vec::new(),
        },
    })
}

/// A set of provider slugs of the widget's settings: within the bound, no duplicate, every one
/// in the catalog (each unknown one reported at its index).
fn provider_set(field: &str, slugs: &[String], issues: &mut Vec<ValidationIssue>) {
    if let Err(found) = limits::check_set(&[field], slugs, limits::MAX_FILTER_ON_PROVIDERS) {
        issues.extend(found);
        return;
    }
    for (i, slug) in slugs.iter().enumerate() {
        if catalog().get(slug).is_none() {
            let mut at = issue(&[field], format!("{slug} is not a provider of GET /v2/providers"), "enum");
            at.loc.push(i.into());
            issues.push(at);
        }
    }
}

pub async fn patch_link_config(
    deps: &Deps,
    team: TeamId,
    patch: LinkConfigPatch,
) -> Result<LinkConfig, DomainError> {
    let mut issues = Vec::new();
    for (field, value) in
        [("provider_order", &patch.provider_order), ("hidden_providers", &patch.hidden_providers)]
    {
        if let Some(slugs) = value {
            provider_set(field, slugs, &mut issues);
        }
    }
    if !issues.is_empty() {
        return Err(DomainError::Validation(issues));
    }
    let mut config = link_config(deps, team).await?;
    if let Some(v) = patch.reject_duplicate_connection {
        config.reject_duplicate_connection = v;
    }
    if let Some(v) = patch.provider_order {
        config.provider_order = v;
    }
    if let Some(v) = patch.hidden_providers {
        config.hidden_providers = v;
    }
    let record = LinkConfigRecord {
        reject_duplicate_connection: config.reject_duplicate_connection,
        provider_order: config.provider_order.clone(),
        hidden_providers: config.hidden_providers.clone(),
    };
    deps.table
        .put(Item::new(keys::linking::team_link_config(team), to_body(&record)), Condition::None)
        .await?;
    tracing::info!(
        team_id = %team,
        reject_duplicate_connection = config.reject_duplicate_connection,
        pinned = config.provider_order.len(),
        hidden = config.hidden_providers.len(),
        "link config set"
    );
    Ok(config)
}

/// The providers the team brought its own OAuth app for (a `team_oauth` provider links only with
/// one).
pub async fn providers_with_oauth_app(deps: &Deps, team: TeamId) -> Result<Vec<String>, DomainError> {
    // One query for all of them (a page asks about every team_oauth provider at once); bounded
    // by the catalog, a team has at most one app per provider.
    let query = Query::partition(keys::team(team).pk).prefix(keys::linking::TEAM_OAUTH_APPS);
    let items = query_all(deps.table.as_ref(), query, catalog().all().len()).await?;
    Ok(items
        .iter()
        .filter_map(|i| keys::linking::team_oauth_app_provider(&i.key.sk))
        .map(str::to_owned)
        .collect())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct OauthAppRecord {
    provider: String,
    client_id: String,
    client_secret: Sealed,
    created_on: DateTime<Utc>,
    updated_on: DateTime<Utc>,
}

impl OauthAppRecord {
    fn to_wire(&self) -> OauthApp {
        OauthApp {
            provider: self.provider.clone(),
            client_id: self.client_id.clone(),
            client_secret_set: true,
            created_on: self.created_on,
            updated_on: self.updated_on,
        }
    }
}

fn context(key: &Key) -> String {
    format!("{}|{}", key.pk, key.sk)
}

/// A provider whose OAuth app a team may bring: any OAuth provider (team_oauth ones need it).
fn oauth_provider(slug: &str) -> Result<&'static ProviderInfo, DomainError> {
    let p = known_provider(slug)?;
    if !p.is_oauth() {
        return Err(DomainError::invalid(&["provider"], format!("{slug} is not an OAuth provider"), "enum"));
    }
    Ok(p)
}

/// A checked PUT body.
pub struct NewOauthApp {
    client_id: String,
    client_secret: Secret,
}

impl NewOauthApp {
    pub fn parse(body: OauthAppBody) -> Result<Self, DomainError> {
        let mut issues: Vec<ValidationIssue> = Vec::new();
        let printable = |s: &str| !s.chars().any(char::is_control);
        if body.client_id.trim().is_empty()
            || body.client_id.len() > MAX_CLIENT_ID
            || !printable(&body.client_id)
        {
            issues.push(issue(
                &["client_id"],
                format!("client_id must be 1-{MAX_CLIENT_ID} printable characters"),
                "value_error",
            ));
        }
        if body.client_secret.trim().is_empty()
            || body.client_secret.len() > MAX_CLIENT_SECRET
            || !printable(&body.client_secret)
        {
            issues.push(issue(
                &["client_secret"],
                format!("client_secret must be 1-{MAX_CLIENT_SECRET} printable characters"),
                "value_error",
            ));
        }
        if !issues.is_empty() {
            return Err(DomainError::Validation(issues));
        }
        Ok(Self {
            client_id: body.client_id.trim().to_owned(),
            client_secret: Secret::new(body.client_secret),
        })
    }
}

/// Which team holds a client id (`keys::linking::oauth_client_claim`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ClientClaim {
    team_id: TeamId,
}

/// The deletion of the claim on `client_id`, when `team` holds it (never another team's).
async fn release(
    deps: &Deps,
    team: TeamId,
    provider: &str,
    client_id: &str,
) -> Result<Option<WriteOp>, DomainError> {
    let key = keys::linking::oauth_client_claim(provider, client_id);
    Ok(match deps.table.get(&key).await? {
        Some(claim) if claim.decode::<ClientClaim>()?.team_id == team => {
            Some(WriteOp::Delete { key, condition: Condition::VersionIs(claim.version) })
        }
        _ => None,
    })
}

fn client_taken(provider: &str) -> DomainError {
    DomainError::Rejected(format!(
        "This {provider} client_id is registered by another team: a team may only register its own OAuth app."
    ))
}

/// PUT /v2/team/oauth_app/{provider}: sets (or replaces) the team's app. A client id is one
/// team's: registering one another team registered is refused (400), so no team can have
/// another's pushes checked with its own secret. The claim on the client id is written in the
/// same transaction as the app (and the previous client id's claim released), so two teams
/// racing for one client id cannot both win.
pub async fn put_oauth_app(
    deps: &Deps,
    team: TeamId,
    provider: &str,
    app: NewOauthApp,
) -> Result<OauthApp, DomainError> {
    let p = oauth_provider(provider)?;
    let key = keys::linking::team_oauth_app(team, &p.slug);
    let now = deps.now();
    let existing = deps.table.get(&key).await?;
    let previous = existing.as_ref().map(|item| item.decode::<OauthAppRecord>()).transpose()?;
    let record = OauthAppRecord {
        provider: p.slug.clone(),
        client_id: app.client_id,
        client_secret: deps.data_key.seal(app.client_secret.expose().as_bytes(), &context(&key)),
        created_on: previous.as_ref().map_or(now, |r| r.created_on),
        updated_on: now,
    };
    let mut item = Item::new(key, to_body(&record));
    let app_condition = match &existing {
        Some(held) => {
            item.version = held.version + 1;
            Condition::VersionIs(held.version)
        }
        None => Condition::NotExists,
    };
    let claim_key = keys::linking::oauth_client_claim(&p.slug, &record.client_id);
    let claim = Item::new(claim_key.clone(), to_body(&ClientClaim { team_id: team }));
    let mut ops = vec![WriteOp::Put { item, condition: app_condition }];
    let same_client = previous.as_ref().is_some_and(|r| r.client_id == record.client_id);
    if same_client {
        // Written again whatever was there: an app stored before claims existed gets its claim.
        match deps.table.get(&claim_key).await? {
            Some(held) if held.decode::<ClientClaim>()?.team_id != team => {
                return Err(client_taken(provider));
            }
            Some(held) => {
                ops.push(WriteOp::Put { item: claim, condition: Condition::VersionIs(held.version) })
            }
            None => ops.push(WriteOp::Put { item: claim, condition: Condition::NotExists }),
        }
    } else {
        ops.push(WriteOp::Put { item: claim, condition: Condition::NotExists });
        if let Some(old) = &previous {
            ops.extend(release(deps, team, &p.slug, &old.client_id).await?);
        }
    }
    match deps.table.transact(ops).await {
        Ok(()) => {}
        Err(StoreError::ConditionFailed { op: Some(1) }) => return Err(client_taken(provider)),
        Err(StoreError::ConditionFailed { .. }) => {
            return Err(DomainError::Busy("the team's OAuth app changed meanwhile; retry".into()));
        }
        Err(e) => return Err(e.into()),
    }
    tracing::info!(team_id = %team, provider, "team OAuth app set");
    Ok(record.to_wire())
}

async fn load_app(deps: &Deps, team: TeamId, provider: &str) -> Result<Option<OauthAppRecord>, DomainError> {
    Ok(match deps.table.get(&keys::linking::team_oauth_app(team, provider)).await? {
        Some(item) => Some(item.decode()?),
        None => None,
    })
}

fn no_app(provider: &str) -> DomainError {
    DomainError::NotFound(format!("The team has no OAuth app for {provider}."))
}

pub async fn get_oauth_app(deps: &Deps, team: TeamId, provider: &str) -> Result<OauthApp, DomainError> {
    let p = oauth_provider(provider)?;
    load_app(deps, team, &p.slug).await?.map(|r| r.to_wire()).ok_or_else(|| no_app(provider))
}

pub async fn delete_oauth_app(deps: &Deps, team: TeamId, provider: &str) -> Result<(), DomainError> {
    let p = oauth_provider(provider)?;
    let key = keys::linking::team_oauth_app(team, &p.slug);
    let Some(held) = deps.table.get(&key).await? else { return Err(no_app(provider)) };
    let record: OauthAppRecord = held.decode()?;
    let mut ops = vec![WriteOp::Delete { key, condition: Condition::VersionIs(held.version) }];
    ops.extend(release(deps, team, &p.slug, &record.client_id).await?);
    match deps.table.transact(ops).await {
        Ok(()) => {
            tracing::info!(team_id = %team, provider, "team OAuth app removed");
            Ok(())
        }
        Err(StoreError::ConditionFailed { .. }) => {
            Err(DomainError::Busy("the team's OAuth app changed meanwhile; retry".into()))
        }
        Err(e) => Err(e.into()),
    }
}

/// The team's app for `provider` with its secret opened (for the code exchange).
pub(crate) async fn team_client(
    deps: &Deps,
    team: TeamId,
    provider: &str,
) -> Result<Option<OauthClient>, DomainError> {
    let Some(r) = load_app(deps, team, provider).await? else { return Ok(None) };
    let key = keys::linking::team_oauth_app(team, provider);
    let secret = deps
        .data_key
        .open(&r.client_secret, &context(&key))
        .map_err(|_| corrupt("a team OAuth secret does not open with the data key"))?;
    let secret = String::from_utf8(secret).map_err(|_| corrupt("a team OAuth secret is not text"))?;
    Ok(Some(OauthClient { client_id: r.client_id, client_secret: Secret::new(secret) }))
}
