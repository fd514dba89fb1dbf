//! The order as the API and its events show it, and its requisition form.

use chrono::{DateTime, Duration, Utc};
use uuid::Uuid;
use wearlab_models::EventEnvelope;
use wearlab_models::lab::{
    CollectionMethod, Interpretation, Order, OrderDetails, OrderDetailsData, OrderResults, PatientDetails,
    Physician, ResultEntry, ResultMetadata, ResultType, UserAddress,
};

use super::REQUISITION_URL_DAYS;
use super::record::{OrderRecord, ResultsRecord};
use crate::common::signing;
use crate::events::user_event;
use crate::lab::test_catalog::catalog;
use crate::ports::to_body;

/// Where links in answers point: the API's public base URL, e.g. `https://api.example.com`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Links {
    pub base_url: String,
}

impl Links {
    /// The base URL: `configured` (the deployment's public URL) when given, else `proto://host`
    /// of the request. The one rule for the API's public address; the edge decides the values
    /// (`wearlab_web::public_links` from a request and `WEARLAB_PUBLIC_URL`).
    pub fn for_host(configured: Option<&str>, host: Option<&str>, proto: Option<&str>) -> Self {
        if let Some(url) = configured
            && !url.trim().is_empty()
        {
            return Self { base_url: url.trim().trim_end_matches('/').to_owned() };
        }
        // Without a configured address (the local stack: a deployment does not start without
        // one) links are derived from the request only for a loopback host, so that no header a
        // caller sends can point the links it hands to users elsewhere.
        let host = host.filter(|h| is_loopback(h)).unwrap_or("localhost");
        let proto = proto.filter(|p| matches!(*p, "http" | "https")).unwrap_or("http");
        Self { base_url: format!("{proto}://{host}") }
    }
}

/// `localhost`, `127.x.x.x` or `[::1]`, with an optional port, and nothing else.
fn is_loopback(host: &str) -> bool {
    let (name, port) = match host.rsplit_once(':') {
        Some((n, p)) if !n.ends_with(':') && !host.ends_with(']') => (n, Some(p)),
        _ => (host, None),
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    let ipv4_loopback = name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback());
    port_ok && (name.eq_ignore_ascii_case("localhost") || ipv4_loopback || name == "[::1]")
}

impl OrderRecord {
    /// The order as the API shows it. `signing_key` signs the deprecated requisition URL.
    pub fn to_wire(&self, links: &Links, signing_key: &[u8], now: DateTime<Utc>) -> Order {
        let c = catalog();
        let lab_tests: Vec<_> =
            self.lab_test_ids.iter().filter_map(|id| c.lab_test(*id)).map(|t| c.lab_test_wire(t)).collect();
        let lab = c.lab(self.lab_id).cloned().expect("orders name known labs");
        let expires = (now + Duration::days(REQUISITION_URL_DAYS)).timestamp();
        let signature = signing::sign(signing_key, &requisition_message(self.id, expires));
        Order {
            id: self.id,
            team_id: self.team_id.as_uuid(),
            user_id: self.user_id.as_uuid(),
            patient_details: self.patient_details.clone(),
            patient_address: self.patient_address.clone(),
            order_set: self.order_set.clone(),
            lab_test: lab_tests.first().cloned().unwrap_or_else(|| {
                c.add_on_lab_test_wire(self.id, self.lab_id, &self.collection_method, &self.marker_ids)
            }),
            lab_tests,
            lab,
            collection_method: CollectionMethod::from(self.collection_method.as_str()),
            details: OrderDetails {
                kind: CollectionMethod::from(self.collection_method.as_str()),
                data: OrderDetailsData {
                    id: self.id,
                    created_at: self.created_at,
                    updated_at: self.updated_at,
                },
            },
            status: self.status.clone(),
            events: self.events.clone(),
            has_abn: false,
            physician: self.physician.clone(),
            priority: self.priority,
            billing_type: self.billing_type.clone(),
            sample_id: self.sample_id.clone(),
            requisition_form_url: Some(format!(
                "{}/v3/order/{}/requisition/pdf?expires={expires}&signature={signature}",
                links.base_url, self.id
            )),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

pub(super) fn requisition_message(order_id: Uuid, expires: i64) -> String {
    format!("requisition:{order_id}:{expires}")
}

pub(super) fn envelope(rec: &OrderRecord, event_type: &str, order: &Order) -> EventEnvelope {
    user_event(event_type, rec.team_id, rec.user_id, &rec.client_user_id, to_body(order))
}

/// What a requisition form shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Requisition {
    pub order_id: Uuid,
    pub accession_number: String,
    pub created_at: DateTime<Utc>,
    pub patient: PatientDetails,
    pub patient_address: UserAddress,
    pub physician: Physician,
    pub lab_name: String,
    pub lab_address: String,
    pub collection_method: String,
    pub priority: bool,
    pub billing_type: String,
    pub fasting: bool,
    /// (test code, name) of each lab test and add-on marker.
    pub tests: Vec<(String, String)>,
    pub status: String,
}

pub(super) fn requisition_of(rec: &OrderRecord) -> Requisition {
    let c = catalog();
    let lab = c.lab(rec.lab_id).expect("orders name known labs");
    let mut tests: Vec<(String, String)> = Vec::new();
    let mut fasting = false;
    let mut covered: Vec<i64> = Vec::new();
    for t in rec.lab_test_ids.iter().filter_map(|id| c.lab_test(*id)) {
        fasting |= t.fasting;
        for m in t.marker_ids.iter().filter_map(|id| c.marker(*id)) {
            covered.push(m.id);
            tests.push((m.provider_id.clone(), m.name.clone()));
        }
    }
    for m in rec.marker_ids.iter().filter(|id| !covered.contains(id)).filter_map(|id| c.marker(*id)) {
        tests.push((m.provider_id.clone(), m.name.clone()));
    }
    Requisition {
        order_id: rec.id,
        accession_number: rec.sample_id.clone(),
        created_at: rec.created_at,
        patient: rec.patient_details.clone(),
        patient_address: rec.patient_address.clone(),
        physician: rec.physician.clone(),
        lab_name: lab.name.clone(),
        lab_address: format!("{}, {}, {} {}", lab.first_line_address, lab.city, lab.state, lab.zipcode),
        collection_method: rec.collection_method.clone(),
        priority: rec.priority,
        billing_type: rec.billing_type.to_string(),
        fasting,
        tests,
        status: rec.status.clone(),
    }
}

impl ResultsRecord {
    /// The results as the API shows them, with the order's patient and lab.
    pub(super) fn into_wire(self, rec: &OrderRecord) -> OrderResults {
        let r = self;
        let p = &rec.patient_details;
        let lab = catalog().lab(rec.lab_id).map(|l| l.name.clone()).unwrap_or_default();
        OrderResults {
            order_id: rec.id,
            metadata: ResultMetadata {
                patient: format!("{} {}", p.first_name, p.last_name),
                dob: p.dob,
                laboratory: lab,
                specimen_number: rec.sample_id.clone(),
                date_collected: r.collected_at,
                date_reported: r.reported_at,
                age: r.reported_at.date_naive().years_since(p.dob).unwrap_or(0).to_string(),
                status: r.status.clone(),
            },
            results: r
                .results
                .into_iter()
                .map(|x| {
                    let below =
                        x.value.zip(x.min_range_value).map(|(v, lo)| x.result_type == "numeric" && v < lo);
                    let above =
                        x.value.zip(x.max_range_value).map(|(v, hi)| x.result_type == "numeric" && v > hi);
                    let kind = ResultType::from(x.result_type.as_str());
                    ResultEntry {
                        name: x.name,
                        slug: x.slug.clone(),
                        result: x.result,
                        result_type: kind.clone(),
                        kind,
                        value: x.value,
                        unit: x.unit,
                        timestamp: r.reported_at,
                        notes: x.notes,
                        min_range_value: x.min_range_value,
                        max_range_value: x.max_range_value,
                        is_above_max_range: above,
                        is_below_min_range: below,
                        interpretation: Interpretation::from(x.interpretation.as_str()),
                        loinc: Some(x.loinc_code),
                        loinc_slug: Some(x.slug),
                        provider_id: Some(x.provider_id),
                    }
                })
                .collect(),
        }
    }
}
