//! A create request, parsed: every rule checked, every offending field reported.

use chrono::NaiveDate;
use wearlab_models::lab::{
    BillingType, CollectionMethod, CreateOrderBody, OrderSet, PatientDetails, Physician, UserAddress,
};

use crate::common::error::DomainError;
use crate::common::ids::UserId;
use crate::lab::test_catalog::{LabAccount, ResolvedOrderSet, resolve_order_set};
use crate::lab::validate::{self as v, Issues};

/// The physician who signs orders that name none (the network's own).
pub fn network_physician() -> Physician {
    Physician { first_name: "Alex".into(), last_name: "Morgan".into(), npi: "1234567893".into(), email: None }
}

/// A parsed create request.
#[derive(Debug, Clone)]
pub struct NewOrder {
    pub user_id: UserId,
    pub patient_details: PatientDetails,
    pub patient_address: UserAddress,
    pub order_set: OrderSet,
    pub resolved: ResolvedOrderSet,
    pub collection_method: String,
    pub physician: Physician,
    pub priority: bool,
    pub billing_type: BillingType,
}

impl crate::common::error::FromBody for NewOrder {
    type Body = CreateOrderBody;
    fn from_body(body: CreateOrderBody, today: NaiveDate) -> Result<Self, DomainError> {
        Self::parse(body, today)
    }
}

impl NewOrder {
    /// Checks every rule; `lab_test_id` (deprecated) becomes a one-test order set.
    pub fn parse(body: CreateOrderBody, today: NaiveDate) -> Result<Self, DomainError> {
        let mut issues = Issues::new();
        let p = &body.patient_details;
        let pd = ["patient_details"];
        v::check_name(&mut issues, &pd, "first_name", &p.first_name);
        v::check_name(&mut issues, &pd, "last_name", &p.last_name);
        v::check_dob(&mut issues, &pd, "dob", p.dob, today);
        v::check_person_gender(&mut issues, &pd, &p.gender);
        v::check_email(&mut issues, &pd, "email", &p.email);
        v::check_phone(&mut issues, &pd, "phone_number", &p.phone_number);
        v::check_address(&mut issues, &["patient_address"], &body.patient_address);
        if !v::is_us(&body.patient_address.country) {
            issues.push(
                &["patient_address", "country"],
                "the lab network serves US addresses only",
                "value_error",
            );
        }
        if let Some(ph) = &body.physician {
            let at = ["physician"];
            v::check_name(&mut issues, &at, "first_name", &ph.first_name);
            v::check_name(&mut issues, &at, "last_name", &ph.last_name);
            if !v::is_npi(&ph.npi) {
                issues.push(
                    &["physician", "npi"],
                    "npi must be 10 digits with a valid check digit",
                    "value_error",
                );
            }
            if let Some(e) = &ph.email {
                v::check_email(&mut issues, &at, "email", e);
            }
        }
        let billing_type = body.billing_type.clone().unwrap_or(BillingType::ClientBill);
        v::check_known(
            &mut issues,
            &["billing_type"],
            BillingType::known(billing_type.as_str()),
            billing_type.as_str(),
            BillingType::KNOWN,
        );
        let (order_set, base): (Option<OrderSet>, [&str; 1]) = match (&body.order_set, body.lab_test_id) {
            (Some(_), Some(_)) => {
                issues.push(
                    &["lab_test_id"],
                    "give either order_set or the deprecated lab_test_id, not both",
                    "value_error",
                );
                (None, ["order_set"])
            }
            (Some(set), None) => (Some(set.clone()), ["order_set"]),
            (None, Some(id)) => {
                (Some(OrderSet { lab_test_ids: Some(vec![id]), add_on: None }), ["lab_test_id"])
            }
            (None, None) => {
                issues.push(&["order_set"], "Field required", "missing");
                (None, ["order_set"])
            }
        };
        let resolved = order_set.as_ref().and_then(|set| {
            let base: &[&str] = if base[0] == "lab_test_id" { &[] } else { &base };
            match resolve_order_set(set, None::<&LabAccount>, base, true) {
                Ok(r) => Some(r),
                Err(found) => {
                    let found = found
                        .into_iter()
                        .map(|mut i| {
                            // A deprecated lab_test_id is reported where the client sent it.
                            if body.lab_test_id.is_some() && body.order_set.is_none() {
                                i.loc = vec!["lab_test_id".into()];
                            }
                            i
                        })
                        .collect::<Vec<_>>();
                    issues.list.extend(found);
                    None
                }
            }
        });
        let mut method = String::new();
        if let Some(r) = &resolved {
            let supported: Vec<&str> = r.lab.collection_methods.iter().map(|m| m.as_str()).collect();
            method = match &body.collection_method {
                Some(m) => m.as_str().to_owned(),
                None => r
                    .lab_tests
                    .first()
                    .map(|t| t.method.clone())
                    .unwrap_or_else(|| supported.first().copied().unwrap_or("walk_in_test").to_owned()),
            };
            if CollectionMethod::known(&method).is_none() || !supported.contains(&method.as_str()) {
                issues.push(
                    &["collection_method"],
                    format!("the lab offers: {}", supported.join(", ")),
                    "value_error",
                );
            } else if r.lab_tests.iter().any(|t| t.method != method) {
                issues.push(
                    &["collection_method"],
                    "every lab test of the order must be for this collection method",
                    "value_error",
                );
            }
        }
        issues.into_result()?;
        let resolved = resolved.expect("no issues means the order set resolved");
        Ok(Self {
            user_id: UserId::from_uuid(body.user_id),
            patient_details: body.patient_details,
            patient_address: body.patient_address,
            order_set: order_set.expect("resolved"),
            resolved,
            collection_method: method,
            physician: body.physician.unwrap_or_else(network_physician),
            priority: body.priority.unwrap_or(false),
            billing_type,
        })
    }
}
