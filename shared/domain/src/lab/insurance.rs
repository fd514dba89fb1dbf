//! A user's insurances (POST /v2/user/{user_id}/insurance): each POST stores a new one; the
//! latest primary (or secondary) one is read back with the company named by the payor
//! directory (`infra/data/lab/payors.json`).

use std::sync::LazyLock;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use wearlab_models::lab::{
    CompanyDetails, Insurance, InsuranceBody, PayorSearchEntry, PayorSource, Relationship, UserAddress,
};

use super::validate::{self as v, Issues};
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::{TeamId, UserId};
use crate::keys::lab as keys;
use crate::ports::to_body;
use crate::ports::{Condition, Item, Query};
use crate::users::load_active;

/// One entry of the payor directory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Payor {
    pub payor_code: String,
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub address: UserAddress,
}

impl Payor {
    fn to_entry(&self) -> PayorSearchEntry {
        PayorSearchEntry {
            payor_code: self.payor_code.clone(),
            name: self.name.clone(),
            aliases: self.aliases.clone(),
            org_address: self.address.clone(),
            source: PayorSource::Platform,
        }
    }

    /// Whether `needle` (already lower case) is part of the name or of an alias.
    fn is_called(&self, needle: &str) -> bool {
        std::iter::once(&self.name).chain(&self.aliases).any(|n| n.to_lowercase().contains(needle))
    }
}

/// The clearinghouses whose payer ids `provider` may name (upstream `PayorCodeExternalProvider`).
pub const PAYOR_ID_PROVIDERS: &[&str] =
    &["change_healthcare", "availity", "stedi", "waystar", "claim_md", "apero"];

/// A search of the payor directory; every given criterion must match.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PayorSearch {
    /// Lower-cased part of a name or alias.
    name: Option<String>,
    /// A clearinghouse's payer id.
    provider_payor_id: Option<String>,
}

impl PayorSearch {
    pub fn parse(
        insurance_name: Option<&str>,
        provider: Option<&str>,
        provider_payor_id: Option<&str>,
    ) -> Result<Self, DomainError> {
        let mut issues = Issues::new();
        let provider = given(provider);
        if let Some(p) = provider
            && !PAYOR_ID_PROVIDERS.contains(&p)
        {
            issues.push(
                &["provider"],
                format!("Input should be one of: {}", PAYOR_ID_PROVIDERS.join(", ")),
                "enum",
            );
        }
        let provider_payor_id = given(provider_payor_id);
        if provider_payor_id.is_some() && provider.is_none() {
            issues.push(&["provider"], "provider is required with provider_payor_id", "missing");
        }
        issues.into_result()?;
        Ok(Self {
            name: given(insurance_name).map(str::to_lowercase),
            provider_payor_id: provider_payor_id.map(str::to_owned),
        })
    }
}

/// A query value with content, trimmed.
fn given(v: Option<&str>) -> Option<&str> {
    v.map(str::trim).filter(|v| !v.is_empty())
}

/// GET /v3/insurance/search/payor: the directory's payors that match, in directory order.
/// The directory keeps one electronic payer id per payor, the one the clearinghouses share for
/// it, so `provider` says whose id it is without narrowing further.
pub fn search_payors(search: &PayorSearch) -> Vec<PayorSearchEntry> {
    PAYORS
        .iter()
        .filter(|p| search.name.as_deref().is_none_or(|n| p.is_called(n)))
        .filter(|p| {
            search.provider_payor_id.as_deref().is_none_or(|id| p.payor_code.eq_ignore_ascii_case(id))
        })
        .map(Payor::to_entry)
        .collect()
}

static PAYORS: LazyLock<Vec<Payor>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../../../infra/data/lab/payors.json")).expect("payors.json parses")
});

/// The payor directory.
pub fn payors() -> &'static [Payor] {
    &PAYORS
}

/// The payor with this code (case-insensitive).
pub fn payor(code: &str) -> Option<&'static Payor> {
    PAYORS.iter().find(|p| p.payor_code.eq_ignore_ascii_case(code.trim()))
}

/// Most insurances read when looking for the latest of a kind.
const SCAN_MAX: u32 = 200;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct InsuranceRecord {
    id: Uuid,
    created_at: DateTime<Utc>,
    insurance: Insurance,
}

/// An insurance that passed every rule, its company resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct NewInsurance(Insurance);

impl crate::common::error::FromBody for NewInsurance {
    type Body = InsuranceBody;
    fn from_body(body: InsuranceBody, today: NaiveDate) -> Result<Self, DomainError> {
        Self::parse(body, today)
    }
}

impl NewInsurance {
    pub fn parse(body: InsuranceBody, today: NaiveDate) -> Result<Self, DomainError> {
        let mut issues = Issues::new();
        let payor = payor(&body.payor_code);
        let at: Vec<wearlab_models::LocPart> = vec!["payor_code".into()];
        if let Some(long) =
            crate::common::limits::too_long(&at, &body.payor_code, crate::common::limits::MAX_CODE_CHARS)
        {
            // Not echoed: a refused value is named in the answer only when it is short.
            issues.list.push(long);
        } else if payor.is_none() {
            issues.push(
                &["payor_code"],
                format!("unknown payor_code '{}': not in the payor directory", body.payor_code),
                "value_error",
            );
        }
        v::check_text(&mut issues, &[], "member_id", &body.member_id);
        v::check_known(
            &mut issues,
            &["relationship"],
            Relationship::known(body.relationship.as_str()),
            body.relationship.as_str(),
            Relationship::KNOWN,
        );
        let insured = ["insured"];
        let p = &body.insured;
        v::check_name(&mut issues, &insured, "first_name", &p.first_name);
        v::check_name(&mut issues, &insured, "last_name", &p.last_name);
        v::check_person_gender(&mut issues, &insured, &p.gender);
        v::check_address(&mut issues, &["insured", "address"], &p.address);
        v::check_dob(&mut issues, &insured, "dob", p.dob, today);
        v::check_email(&mut issues, &insured, "email", &p.email);
        v::check_phone(&mut issues, &insured, "phone_number", &p.phone_number);
        v::check_optional_text(&mut issues, &[], "group_id", body.group_id.as_deref());
        if let Some(g) = &body.guarantor {
            v::check_guarantor(&mut issues, &["guarantor"], g);
        }
        issues.into_result()?;
        let payor = payor.expect("checked above");
        Ok(Self(Insurance {
            payor_code: payor.payor_code.clone(),
            member_id: body.member_id,
            relationship: body.relationship,
            insured: body.insured,
            group_id: body.group_id,
            guarantor: body.guarantor,
            is_primary: body.is_primary.unwrap_or(true),
            company: CompanyDetails { name: payor.name.clone(), address: payor.address.clone() },
        }))
    }
}

/// Stores a new insurance of the user.
pub async fn create(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    new: NewInsurance,
) -> Result<Insurance, DomainError> {
    load_active(deps, team, user_id).await?;
    let record = InsuranceRecord { id: Uuid::new_v4(), created_at: deps.now(), insurance: new.0 };
    let key = keys::insurance(user_id, record.created_at, record.id);
    deps.table.put(Item::new(key, to_body(&record)), Condition::NotExists).await?;
    tracing::info!(team_id = %team, user_id = %user_id, "insurance stored");
    Ok(record.insurance)
}

/// The latest insurance with this `is_primary`, if any (no team check).
pub async fn find_latest(
    deps: &Deps,
    user_id: UserId,
    is_primary: bool,
) -> Result<Option<Insurance>, DomainError> {
    let q = Query::partition(crate::keys::user_partition(user_id))
        .prefix(keys::INSURANCE_PREFIX)
        .descending()
        .limit(SCAN_MAX);
    let page = deps.table.query(q).await?;
    for item in page.items {
        let r: InsuranceRecord = item.decode()?;
        if r.insurance.is_primary == is_primary {
            return Ok(Some(r.insurance));
        }
    }
    Ok(None)
}

/// The latest insurance with this `is_primary`, or 404.
pub async fn latest(
    deps: &Deps,
    team: TeamId,
    user_id: UserId,
    is_primary: bool,
) -> Result<Insurance, DomainError> {
    load_active(deps, team, user_id).await?;
    find_latest(deps, user_id, is_primary).await?.ok_or_else(|| {
        let kind = if is_primary { "primary" } else { "secondary" };
        DomainError::NotFound(format!("No {kind} insurance for user {user_id}."))
    })
}
