//! Demo connections: a provider account whose data is synthetic, for trying the API without a
//! device (apple_health_kit, fitbit, freestyle_libre, oura).

use wearlab_models::{DemoConnectionAnswer, DemoConnectionBody};

use super::connections::{self, Committed, NewConnection};
use crate::Deps;
use crate::common::error::{DomainError, issue};
use crate::common::ids::{TeamId, UserId};
use crate::common::provider_catalog::{DEMO_PROVIDERS, ProviderInfo, catalog};
use crate::users;

pub struct DemoRequest {
    user_id: UserId,
    provider: &'static ProviderInfo,
}

impl DemoRequest {
    pub fn parse(body: DemoConnectionBody) -> Result<Self, DomainError> {
        let mut issues = Vec::new();
        let user_id = UserId::parse(&body.user_id);
        if user_id.is_none() {
            issues.push(issue(&["user_id"], "Input should be a valid UUID", "uuid_parsing"));
        }
        let provider =
            DEMO_PROVIDERS.contains(&body.provider.as_str()).then(|| catalog().get(&body.provider)).flatten();
        if provider.is_none() {
            issues.push(issue(
                &["provider"],
                format!("Input should be one of: {}", DEMO_PROVIDERS.join(", ")),
                "enum",
            ));
        }
        match (user_id, provider) {
            (Some(user_id), Some(provider)) => Ok(Self { user_id, provider }),
            _ => Err(DomainError::Validation(issues)),
        }
    }
}

/// POST /v2/link/connect/demo.
pub async fn connect(
    deps: &Deps,
    team: TeamId,
    req: DemoRequest,
) -> Result<DemoConnectionAnswer, DomainError> {
    let (user, _) = users::load_active(deps, team, req.user_id).await?;
    let slug = req.provider.slug.as_str();
    if user.connections.iter().any(|c| c.provider == slug) {
        return Err(DomainError::Rejected(format!(
            "User {} is already connected to {slug}; remove that connection first.",
            req.user_id
        )));
    }
    let account = deps
        .providers
        .connect_demo(slug, &req.user_id.to_string())
        .await
        .map_err(|e| DomainError::Rejected(e.to_string()))?;
    let new = NewConnection {
        provider: req.provider,
        account,
        demo: true,
        token: None,
        extra_ops: vec![],
        team_app_client_id: None,
        import_op: None,
    };
    match connections::commit(deps, team, req.user_id, new).await? {
        Committed::Connected { .. } => {
            let detail =
                format!("User {} is connected to a {slug} demo account with synthetic data.", req.user_id);
            Ok(DemoConnectionAnswer { success: true, detail })
        }
        Committed::Duplicate => Err(DomainError::Rejected(format!(
            "User {} is already connected to {slug}; remove that connection first.",
            req.user_id
        ))),
        Committed::UserGone | Committed::TokenConsumed => {
            Err(DomainError::NotFound(format!("User {} not found.", req.user_id)))
        }
    }
}
