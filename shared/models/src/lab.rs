//! Lab ordering: demographics, insurance, the marker and lab test catalog, orders, results,
//! patient service centers and portal links, as the API speaks them.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::{Ethnicity, GenderIdentity, PortalContext, Race, SexualOrientation};

crate::open_enum!(
    /// Gender of a person on an insurance (`insured`) or an order's patient.
    PersonGender {
        Female => "female",
        Male => "male",
        Other_ => "other",
        Unknown => "unknown",
    }
);

crate::open_enum!(
    /// Relationship of the user to the insured person.
    Relationship {
        Self_ => "Self",
        Spouse => "Spouse",
        Other_ => "Other",
    }
);

crate::open_enum!(
    /// How the sample is collected.
    CollectionMethod {
        Testkit => "testkit",
        WalkInTest => "walk_in_test",
        AtHomePhlebotomy => "at_home_phlebotomy",
    }
);

crate::open_enum!(
    /// Who pays the lab.
    BillingType {
        ClientBill => "client_bill",
        CommercialInsurance => "commercial_insurance",
        PatientBill => "patient_bill",
    }
);

crate::open_enum!(
    /// What a patient service center offers.
    PscCapability {
        Stat => "stat",
        AppointmentSchedulingViaService => "appointment_scheduling_via_service",
        AppointmentSchedulingWithLab => "appointment_scheduling_with_lab",
    }
);

crate::open_enum!(
    /// How to read a result's `result` string.
    ResultType {
        Numeric => "numeric",
        Range => "range",
        Comment => "comment",
        CodedValue => "coded_value",
    }
);

crate::open_enum!(
    /// The lab's reading of a result.
    Interpretation {
        Normal => "normal",
        Abnormal => "abnormal",
        Critical => "critical",
    }
);

// ---------------------------------------------------------------- people and addresses

/// Input field names serde also reads under another name (`#[serde(alias)]`), as
/// (alias, field): the 422 check, which walks the documented schema, must not call a field held
/// under its alias missing. Every `#[serde(alias)]` of a request body is listed here (a test
/// checks it).
pub const INPUT_ALIASES: &[(&str, &str)] = &[("zip_code", "zip")];

/// A postal address. Input takes `zip` or its alias `zip_code`; answers carry `zip`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct UserAddress {
    pub first_line: String,
    #[serde(default)]
    pub second_line: Option<String>,
    pub city: String,
    /// Two-letter state code for US addresses.
    pub state: String,
    /// ZIP code (`12345` or `12345-6789` for US addresses). Also accepted as `zip_code`.
    #[serde(alias = "zip_code")]
    pub zip: String,
    /// Country code, e.g. `US`.
    pub country: String,
    #[serde(default)]
    pub access_notes: Option<String>,
}

/// Someone financially responsible for the patient (medical proxy or guarantor).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct GuarantorDetails {
    pub first_name: String,
    pub last_name: String,
    pub address: UserAddress,
    pub phone_number: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub household_income: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub household_size: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// PATCH /v2/user/{user_id}/info body and answer: the user's demographics.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct UserInfo {
    pub first_name: String,
    pub last_name: String,
    pub email: String,
    pub phone_number: String,
    pub gender: String,
    pub dob: NaiveDate,
    pub address: UserAddress,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medical_proxy: Option<GuarantorDetails>,
    #[serde(default)]
    pub race: Option<Race>,
    #[serde(default)]
    pub ethnicity: Option<Ethnicity>,
    #[serde(default)]
    pub sexual_orientation: Option<SexualOrientation>,
    #[serde(default)]
    pub gender_identity: Option<GenderIdentity>,
}

/// A person named on an insurance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct PersonDetails {
    pub first_name: String,
    pub last_name: String,
    pub gender: PersonGender,
    pub address: UserAddress,
    pub dob: NaiveDate,
    pub email: String,
    pub phone_number: String,
}

/// An insurance company as the payor directory names it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct CompanyDetails {
    pub name: String,
    pub address: UserAddress,
}

/// POST /v2/user/{user_id}/insurance body.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct InsuranceBody {
    /// Payer id from the payor directory, e.g. `60054`.
    pub payor_code: String,
    pub member_id: String,
    pub relationship: Relationship,
    pub insured: PersonDetails,
    #[serde(default)]
    pub group_id: Option<String>,
    #[serde(default)]
    pub guarantor: Option<GuarantorDetails>,
    /// Default true.
    #[serde(default)]
    pub is_primary: Option<bool>,
}

/// A stored insurance, with the company resolved from `payor_code`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct Insurance {
    pub payor_code: String,
    pub member_id: String,
    pub relationship: Relationship,
    pub insured: PersonDetails,
    #[schema(required = true)]
    pub group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guarantor: Option<GuarantorDetails>,
    pub is_primary: bool,
    pub company: CompanyDetails,
}

// ---------------------------------------------------------------- catalog

/// A LOINC code.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct Loinc {
    pub id: i64,
    pub name: String,
    pub slug: String,
    pub code: String,
    #[schema(required = true)]
    pub unit: Option<String>,
}

/// One result a marker yields.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ExpectedResult {
    pub id: i64,
    pub name: String,
    pub slug: String,
    pub lab_id: i64,
    /// The lab's result code.
    pub provider_id: String,
    pub loinc: Loinc,
    /// False for calculated results a lab may leave out.
    pub required: bool,
}

/// A biomarker or a panel of a lab.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct Marker {
    pub id: i64,
    pub name: String,
    pub slug: String,
    pub description: String,
    pub lab_id: i64,
    /// The lab's test code.
    pub provider_id: String,
    /// `biomarker` or `panel`.
    #[serde(rename = "type")]
    pub kind: String,
    #[schema(required = true)]
    pub unit: Option<String>,
    /// Price in US dollars, e.g. `"12.50"`.
    pub price: String,
    /// Whether the marker can be ordered on its own (as an add-on).
    pub a_la_carte_enabled: bool,
    pub expected_results: Vec<ExpectedResult>,
}

/// A page of markers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct MarkerPage {
    pub markers: Vec<Marker>,
    #[schema(minimum = 0)]
    pub total: u64,
    #[schema(minimum = 0)]
    pub page: u64,
    #[schema(minimum = 0)]
    pub size: u64,
    #[schema(minimum = 0)]
    pub pages: u64,
}

/// A lab of the network.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct Lab {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub first_line_address: String,
    pub city: String,
    pub state: String,
    pub zipcode: String,
    pub collection_methods: Vec<CollectionMethod>,
    pub sample_types: Vec<String>,
}

/// A marker as listed in a lab test.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct LabTestMarker {
    pub id: i64,
    pub name: String,
    pub slug: String,
    pub provider_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[schema(required = true)]
    pub unit: Option<String>,
}

/// A lab test: markers sold together by one lab for one collection method.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct LabTest {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub sample_type: String,
    pub method: CollectionMethod,
    /// Price in US dollars.
    pub price: f64,
    pub is_active: bool,
    pub status: String,
    pub fasting: bool,
    pub common_tat_days: u32,
    /// True for the lab test an order of add-on markers only shows (made for that order, not
    /// in the catalog).
    pub auto_generated: bool,
    pub lab: Lab,
    pub markers: Vec<LabTestMarker>,
}

/// GET /v3/lab_test answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct LabTestPage {
    pub data: Vec<LabTest>,
    /// Pass as `next_cursor` for the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// Markers added to an order on their own.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default, ToSchema)]
pub struct AddOnOrder {
    /// The lab's test codes (`provider_id` of markers). A set: each code at most once.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub provider_ids: Option<Vec<String>>,
    /// Marker ids. A set: each id at most once.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub marker_ids: Option<Vec<i64>>,
}

/// POST /v3/lab_tests/list_order_set_markers body.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct OrderSetMarkersBody {
    /// A set: each id at most once.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub lab_test_ids: Option<Vec<Uuid>>,
    #[serde(default)]
    pub add_on: Option<AddOnOrder>,
    #[serde(default)]
    pub lab_account_id: Option<Uuid>,
}

// ---------------------------------------------------------------- orders

/// What an order contains.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default, ToSchema)]
pub struct OrderSet {
    /// A set: each id at most once.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub lab_test_ids: Option<Vec<Uuid>>,
    #[serde(default)]
    pub add_on: Option<AddOnOrder>,
}

/// The patient of an order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct PatientDetails {
    pub first_name: String,
    pub last_name: String,
    pub dob: NaiveDate,
    pub gender: PersonGender,
    pub phone_number: String,
    pub email: String,
}

/// The ordering physician.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct Physician {
    pub first_name: String,
    pub last_name: String,
    /// National Provider Identifier: 10 digits with a valid check digit.
    pub npi: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// POST /v3/order body.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct CreateOrderBody {
    pub user_id: Uuid,
    pub patient_details: PatientDetails,
    pub patient_address: UserAddress,
    #[serde(default)]
    pub order_set: Option<OrderSet>,
    /// Deprecated: send `order_set.lab_test_ids`.
    #[serde(default)]
    #[schema(deprecated)]
    pub lab_test_id: Option<Uuid>,
    /// Defaults to the lab tests' method.
    #[serde(default)]
    pub collection_method: Option<CollectionMethod>,
    /// Defaults to the network's physician.
    #[serde(default)]
    pub physician: Option<Physician>,
    #[serde(default)]
    pub priority: Option<bool>,
    /// Default `client_bill`; `commercial_insurance` needs a primary insurance on file.
    #[serde(default)]
    pub billing_type: Option<BillingType>,
}

/// One status change of an order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct OrderEvent {
    /// Position in the order's history, from 1.
    pub id: u32,
    pub created_at: DateTime<Utc>,
    /// `<group>.<collection_method>.<detail>`, e.g. `received.walk_in_test.ordered`.
    pub status: String,
}

/// Who defined a payor of the directory.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PayorSource {
    /// The platform's directory (`infra/data/lab/payors.json`).
    Platform,
    /// A payor the team added.
    Team,
}

/// One payor of `GET /v3/insurance/search/payor`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct PayorSearchEntry {
    /// The code to send as `payor_code` in an insurance.
    pub payor_code: String,
    pub name: String,
    /// Other names the payor is known by (e.g. `UHC`).
    pub aliases: Vec<String>,
    pub org_address: UserAddress,
    pub source: PayorSource,
}

/// The answer of a POST that changes an order (place, cancel): the upstream `PostOrderResponse`.
/// `GET /v3/order/{order_id}` answers the bare [`Order`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct PostOrderResponse {
    pub order: Order,
    /// Always `success` (a refusal is an HTTP error).
    pub status: String,
    /// What happened, for people.
    pub message: String,
}

impl PostOrderResponse {
    pub fn success(order: Order, message: &str) -> Self {
        PostOrderResponse { order, status: "success".to_owned(), message: message.to_owned() }
    }
}

/// The part of an order that its collection method runs: the upstream order's `details`, a
/// union tagged by `type` (the collection method) whose `data` holds the part's id and times.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct OrderDetails {
    /// The collection method: `walk_in_test`, `at_home_phlebotomy` or `testkit`.
    #[serde(rename = "type")]
    pub kind: CollectionMethod,
    pub data: OrderDetailsData,
}

/// The collection part of an order. Wearlab keeps one id per order: `id` is the order's id.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct OrderDetailsData {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A lab order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct Order {
    pub id: Uuid,
    pub team_id: Uuid,
    pub user_id: Uuid,
    pub patient_details: PatientDetails,
    pub patient_address: UserAddress,
    pub order_set: OrderSet,
    pub lab_tests: Vec<LabTest>,
    /// The first lab test (kept for clients of single-test orders); for an order of add-on
    /// markers only, a lab test made for the order (`auto_generated`, its id the order's).
    pub lab_test: LabTest,
    pub lab: Lab,
    pub collection_method: CollectionMethod,
    /// The collection method's part of the order (`type` is the collection method).
    pub details: OrderDetails,
    /// The latest status, `<group>.<collection_method>.<detail>`.
    pub status: String,
    pub events: Vec<OrderEvent>,
    /// Whether the order carries an Advance Beneficiary Notice (ABN) form. Always false: the
    /// network asks for none.
    pub has_abn: bool,
    pub physician: Physician,
    pub priority: bool,
    pub billing_type: BillingType,
    /// The lab's accession number, printed as a barcode on the requisition.
    pub sample_id: String,
    /// Deprecated: a signed link to the requisition PDF, valid 7 days. Use
    /// GET /v3/order/{order_id}/requisition/pdf.
    #[schema(required = true, deprecated)]
    pub requisition_form_url: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// GET /v3/orders answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct OrderPage {
    pub orders: Vec<Order>,
    pub total: u64,
    pub page: u64,
    pub size: u64,
    pub pages: u64,
}

/// One result of an order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ResultEntry {
    pub name: String,
    pub slug: String,
    /// The result as the lab reports it; read it according to `type` (also sent as `result_type`).
    pub result: String,
    #[serde(rename = "type")]
    pub kind: ResultType,
    /// The same value as `type`, under the name the deprecation notes use.
    pub result_type: ResultType,
    /// Deprecated: the numeric value (the bound for `range` results), null otherwise. Use `result`.
    #[schema(required = true, deprecated)]
    pub value: Option<f64>,
    #[schema(required = true)]
    pub unit: Option<String>,
    pub timestamp: DateTime<Utc>,
    #[schema(required = true)]
    pub notes: Option<String>,
    #[schema(required = true)]
    pub min_range_value: Option<f64>,
    #[schema(required = true)]
    pub max_range_value: Option<f64>,
    #[schema(required = true)]
    pub is_above_max_range: Option<bool>,
    #[schema(required = true)]
    pub is_below_min_range: Option<bool>,
    pub interpretation: Interpretation,
    #[schema(required = true)]
    pub loinc: Option<String>,
    #[schema(required = true)]
    pub loinc_slug: Option<String>,
    /// The lab's result code.
    #[schema(required = true)]
    pub provider_id: Option<String>,
}

/// Who and what the results are about.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct ResultMetadata {
    pub patient: String,
    pub dob: NaiveDate,
    pub laboratory: String,
    pub specimen_number: String,
    #[schema(required = true)]
    pub date_collected: Option<DateTime<Utc>>,
    pub date_reported: DateTime<Utc>,
    /// The patient's age in whole years on the report date, e.g. `"55"`.
    pub age: String,
    /// `partial` or `final`.
    pub status: String,
}

/// GET /v3/order/{order_id}/result answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct OrderResults {
    pub order_id: Uuid,
    pub metadata: ResultMetadata,
    pub results: Vec<ResultEntry>,
}

// ---------------------------------------------------------------- patient service centers

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct PscMetadata {
    pub name: String,
    pub state: String,
    pub city: String,
    pub zip_code: String,
    pub first_line: String,
    #[schema(required = true)]
    pub second_line: Option<String>,
    #[schema(required = true)]
    pub phone_number: Option<String>,
    #[schema(required = true)]
    pub fax_number: Option<String>,
    /// Opening hours by weekday (`monday` ... `sunday`), e.g. `"07:00-15:30"`; null when closed
    /// or not known.
    #[schema(required = true, value_type = Option<Object>)]
    pub hours: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct GeoLocation {
    pub lat: f64,
    pub lng: f64,
}

/// One patient service center near the patient.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct PatientServiceCenter {
    pub metadata: PscMetadata,
    /// Great-circle distance from the patient's ZIP centroid, in whole miles, e.g. `"12"`.
    pub distance: String,
    pub site_code: String,
    pub supported_bill_types: Vec<BillingType>,
    pub capabilities: Vec<PscCapability>,
    pub location: GeoLocation,
}

/// GET /v3/order/{order_id}/psc/info answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct PscInfo {
    pub lab_id: i64,
    /// The lab's slug (non-exhaustive).
    pub slug: String,
    pub patient_service_centers: Vec<PatientServiceCenter>,
}

// ---------------------------------------------------------------- portal

/// POST /v2/user/{user_id}/create_portal_url body.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct PortalUrlBody {
    pub context: PortalContext,
    /// When set, the link opens this order (an order of the user).
    #[serde(default)]
    pub order_id: Option<Uuid>,
}

/// A portal link.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ToSchema)]
pub struct PortalUrl {
    pub url: String,
    /// Seconds until the link expires.
    pub expires_in: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `#[serde(alias = "...")]` of the crate, as (alias, field), read from the sources.
    fn aliases_in_sources() -> Vec<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).expect("src") {
            let text = std::fs::read_to_string(entry.expect("entry").path()).expect("source");
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                if !line.trim_start().starts_with("#[serde(") {
                    continue;
                }
                let Some(rest) = line.split("alias = \"").nth(1) else { continue };
                let alias = rest.split('"').next().unwrap_or_default().to_owned();
                let field = lines[i + 1..]
                    .iter()
                    .find_map(|l| l.trim().strip_prefix("pub ").and_then(|f| f.split(':').next()))
                    .unwrap_or_default()
                    .to_owned();
                found.push((alias, field));
            }
        }
        found
    }

    #[test]
    fn input_aliases_lists_every_serde_alias() {
        let mut listed: Vec<(String, String)> =
            INPUT_ALIASES.iter().map(|(a, f)| (a.to_string(), f.to_string())).collect();
        let mut found = aliases_in_sources();
        listed.sort();
        found.sort();
        assert_eq!(listed, found);
        let a: UserAddress = serde_json::from_value(serde_json::json!({
            "first_line": "1 Main St", "city": "New York", "state": "NY", "zip_code": "10001", "country": "US"
        }))
        .expect("zip_code is read as zip");
        assert_eq!(a.zip, "10001");
    }
}
