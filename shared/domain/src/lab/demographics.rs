//! A user's demographics (PATCH /v2/user/{user_id}/info): one record per user, replaced whole
//! by each PATCH, in the user's partition.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use wearlab_models::lab::UserInfo;
use wearlab_models::{Ethnicity, GenderIdentity, Race, SexualOrientation};

use super::validate::{self as v, Issues};
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::keys::lab as keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item};
use crate::users::load_active;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct DemographicsRecord {
    info: UserInfo,
    updated_at: DateTime<Utc>,
}

/// Demographics that passed every rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Demographics(UserInfo);

impl crate::common::error::FromBody for Demographics {
    type Body = UserInfo;
    fn from_body(body: UserInfo, today: NaiveDate) -> Result<Self, DomainError> {
        Self::parse(body, today)
    }
}

impl Demographics {
    /// Checks every rule and reports every offending field.
    pub fn parse(info: UserInfo, today: NaiveDate) -> Result<Self, DomainError> {
        let mut issues = Issues::new();
        let body: [&str; 0] = [];
        v::check_name(&mut issues, &body, "first_name", &info.first_name);
        v::check_name(&mut issues, &body, "last_name", &info.last_name);
        v::check_email(&mut issues, &body, "email", &info.email);
        v::check_phone(&mut issues, &body, "phone_number", &info.phone_number);
        v::check_text(&mut issues, &body, "gender", &info.gender);
        v::check_dob(&mut issues, &body, "dob", info.dob, today);
        v::check_address(&mut issues, &["address"], &info.address);
        if let Some(proxy) = &info.medical_proxy {
            v::check_guarantor(&mut issues, &["medical_proxy"], proxy);
        }
        if let Some(r) = &info.race {
            v::check_known(&mut issues, &["race"], Race::known(r.as_str()), r.as_str(), Race::KNOWN);
        }
        if let Some(e) = &info.ethnicity {
            v::check_known(
                &mut issues,
                &["ethnicity"],
                Ethnicity::known(e.as_str()),
                e.as_str(),
                Ethnicity::KNOWN,
            );
        }
        if let Some(s) = &info.sexual_orientation {
            v::check_known(
                &mut issues,
                &["sexual_orientation"],
                SexualOrientation::known(s.as_str()),
                s.as_str(),
                SexualOrientation::KNOWN,
            );
        }
        if let Some(g) = &info.gender_identity {
            v::check_known(
                &mut issues,
                &["gender_identity"],
                GenderIdentity::known(g.as_str()),
                g.as_str(),
                GenderIdentity::KNOWN,
            );
        }
        issues.into_result()?;
        Ok(Self(info))
    }
}

/// Stores the user's demographics (replacing any earlier ones). One read, one write.
pub async fn set(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    d: Demographics,
) -> Result<UserInfo, DomainError> {
    load_active(deps, team, user_id).await?;
    let record = DemographicsRecord { info: d.0, updated_at: deps.now() };
    deps.table.put(Item::new(keys::demographics(user_id), to_body(&record)), Condition::None).await?;
    tracing::info!(team_id = %team, user_id = %user_id, "demographics set");
    Ok(record.info)
}

/// The user's demographics, if set (no team check: callers have checked the user).
pub async fn find(deps: &Deps, user_id: UserId) -> Result<Option<UserInfo>, DomainError> {
    match deps.table.get(&keys::demographics(user_id)).await? {
        Some(item) => Ok(Some(item.decode::<DemographicsRecord>()?.info)),
        None => Ok(None),
    }
}

/// The user's demographics, or 404.
pub async fn latest(deps: &Deps, team: TeamId, user_id: UserId) -> Result<UserInfo, DomainError> {
    load_active(deps, team, user_id).await?;
    find(deps, user_id)
        .await?
        .ok_or_else(|| DomainError::NotFound(format!("No demographics for user {user_id}.")))
}
