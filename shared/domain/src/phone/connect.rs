//! POST /v2/link/provider/manual/{provider}: the SDKs connect the user to an `sdk` provider
//! before every sync (iOS `Sources/VitalCore/Core/Client/Endpoints/VitalClient+Link.swift`,
//! `Sources/VitalHealthKit/HealthKit/VitalHealthKitClient.swift`; Android
//! `BaseLocalSyncStateManager.kt`), so a user already connected costs one read and nothing else.
//!
//! The connection is made by `linking`'s own commit (the user's list of connections, the
//! `provider.connection.created` event with `external_user_id` null); it has no provider account
//! and no credentials, only the permissions the app asked for.

use wearlab_models::phone_sync::ManualConnectionBody;

use crate::Deps;
use crate::common::crypto::Secret;
use crate::common::error::{DomainError, issue};
use crate::common::ids::{TeamId, UserId};
use crate::common::limits;
use crate::common::provider_catalog::{ProviderInfo, catalog};
use crate::linking::connections::{self, Committed, NewConnection};
use crate::ports::providers::{ProviderAccount, ProviderCredentials};

/// Most permissions kept with a connection (HealthKit has about 150 identifiers).
pub const MAX_PERMISSIONS: usize = 500;
/// Longest permission name kept.
pub const MAX_PERMISSION_CHARS: usize = 200;

/// A connection request, parsed.
#[derive(Debug, Clone)]
pub struct ManualConnection {
    pub user_id: UserId,
    pub provider: &'static ProviderInfo,
    pub granted_permissions: Vec<String>,
}

impl ManualConnection {
    /// `provider` must be an `sdk` provider (400 naming them); the body's user id a UUID in any
    /// case (iOS sends upper case), the permissions at most [`MAX_PERMISSIONS`] names (422).
    pub fn parse(provider: &str, body: ManualConnectionBody) -> Result<Self, DomainError> {
        let provider = catalog().sdk(provider)?;
        let mut issues = Vec::new();
        let user_id = UserId::parse(body.user_id.trim());
        if user_id.is_none() {
            issues.push(issue(&["user_id"], "Input should be a valid UUID", "uuid_parsing"));
        }
        let mut granted_permissions = body.granted_permissions.unwrap_or_default();
        issues.extend(limits::too_many(&["granted_permissions"], granted_permissions.len(), MAX_PERMISSIONS));
        for (i, p) in granted_permissions.iter().enumerate() {
            let loc = ["granted_permissions".into(), i.into()];
            issues.extend(limits::too_long(&loc, p, MAX_PERMISSION_CHARS));
        }
        match user_id {
            Some(user_id) if issues.is_empty() => {
                granted_permissions.sort();
                granted_permissions.dedup();
                Ok(Self { user_id, provider, granted_permissions })
            }
            _ => Err(DomainError::Validation(issues)),
        }
    }
}

/// Connects the user (of `team`) to the provider unless connected already. A connection that
/// exists, whatever its kind (a demo one too), answers as connected without a write: its
/// permissions stay those of the first connect (docs/MOBILE.md).
pub async fn connect(deps: &Deps, team: TeamId, req: ManualConnection) -> Result<(), DomainError> {
    let slug = req.provider.slug.as_str();
    let gone = || DomainError::NotFound(format!("User {} not found.", req.user_id));
    // One read when connected: a user's connections go with the user, so one that exists is of
    // a user who exists; the team is on it.
    if let Some(conn) = connections::find(deps, req.user_id, slug).await? {
        return if conn.team_id == team { Ok(()) } else { Err(gone()) };
    }
    let account = ProviderAccount {
        // Unique per user, so the team's duplicate-account rule never matches two phones.
        external_user_id: req.user_id.to_string(),
        credentials: ProviderCredentials {
            access_token: Secret::new(""),
            refresh_token: None,
            expires_at: None,
            scopes: req.granted_permissions,
        },
    };
    let new = NewConnection {
        provider: req.provider,
        account,
        demo: false,
        token: None,
        extra_ops: vec![],
        team_app_client_id: None,
        import_op: None,
    };
    match connections::commit(deps, team, req.user_id, new).await? {
        // A concurrent connect made it first (the team rejects duplicates): connected all the same.
        Committed::Connected { .. } | Committed::Duplicate => Ok(()),
        Committed::UserGone | Committed::TokenConsumed => Err(gone()),
    }
}

/// The permissions the app asked for when the user's connection to `provider` was made
/// (none for a connection not from the phone).
pub async fn granted_permissions(
    deps: &Deps,
    user_id: UserId,
    provider: &str,
) -> Result<Option<Vec<String>>, DomainError> {
    Ok(match connections::find(deps, user_id, provider).await? {
        Some(conn) if conn.from_phone() => Some(conn.credentials(deps)?.scopes),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(user_id: &str, permissions: Option<Vec<&str>>) -> ManualConnectionBody {
        ManualConnectionBody {
            user_id: user_id.into(),
            provider_id: None,
            granted_permissions: permissions.map(|p| p.into_iter().map(String::from).collect()),
        }
    }

    #[test]
    fn upper_case_user_ids_and_sorted_permissions() {
        let id = "6F1C0D2E-3B4A-4C5D-8E9F-0A1B2C3D4E5F";
        let req = ManualConnection::parse(
            "apple_health_kit",
            body(id, Some(vec!["HKQuantityTypeIdentifierStepCount", "HKQuantityTypeIdentifierHeartRate"])),
        )
        .unwrap();
        assert_eq!(req.user_id.to_string(), id.to_ascii_lowercase());
        assert_eq!(req.granted_permissions[0], "HKQuantityTypeIdentifierHeartRate");
    }

    #[test]
    fn refusals() {
        let e = ManualConnection::parse("oura", body("x", None)).unwrap_err();
        assert!(matches!(e, DomainError::Rejected(m) if m.contains("health_connect")));
        let e = ManualConnection::parse("health_connect", body("not-a-uuid", None)).unwrap_err();
        assert!(matches!(e, DomainError::Validation(i) if i[0].loc.len() == 1));
        let many = vec!["p"; MAX_PERMISSIONS + 1];
        let e = ManualConnection::parse(
            "health_connect",
            body("6f1c0d2e-3b4a-4c5d-8e9f-0a1b2c3d4e5f", Some(many)),
        );
        assert!(matches!(e, Err(DomainError::Validation(_))));
    }
}
