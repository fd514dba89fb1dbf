//! A simulated lab network: deterministic, stateless, driven by the clock. Every order follows
//! a fixed timeline for its collection method, measured from when it was placed; results are
//! derived from the order id and each analyte's reference range, so the same order always
//! yields the same values. Used by the local stack, tests and demos.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use sha2::{Digest, Sha256};

use wearlab_domain::lab::test_catalog::{Analyte, catalog};
use wearlab_domain::ports::lab_network::{
    LabError, LabNetwork, LabOrderRef, LabReport, LabRequest, LabResultValue, Placement, Poll, StatusUpdate,
    status_detail, status_group,
};

/// The simulated lab refuses every order for a patient at this ZIP code (no US address has
/// it), so that clients can see a refused order (`POST /v3/order` answers 400).
pub const REFUSED_ZIP: &str = "00000";

/// One step of a timeline: after `at` from placement, the order is `group.method.detail`.
struct Step {
    at: Duration,
    group: &'static str,
    detail: &'static str,
}

const fn step(minutes: i64, group: &'static str, detail: &'static str) -> Step {
    Step { at: Duration::minutes(minutes), group, detail }
}

const HOUR: i64 = 60;
const DAY: i64 = 24 * HOUR;

const WALK_IN: &[Step] = &[
    step(0, "received", "ordered"),
    step(1, "received", "requisition_created"),
    step(HOUR, "collecting_sample", "appointment_pending"),
    step(2 * DAY, "sample_with_lab", "partial_results"),
    step(3 * DAY, "completed", "completed"),
];

const AT_HOME: &[Step] = &[
    step(0, "received", "ordered"),
    step(1, "received", "requisition_created"),
    step(HOUR, "collecting_sample", "appointment_pending"),
    step(DAY, "collecting_sample", "appointment_scheduled"),
    step(3 * DAY, "sample_with_lab", "draw_completed"),
    step(4 * DAY, "sample_with_lab", "partial_results"),
    step(5 * DAY, "completed", "completed"),
];

const TESTKIT: &[Step] = &[
    step(0, "received", "ordered"),
    step(1, "received", "requisition_created"),
    step(DAY, "collecting_sample", "transit_customer"),
    step(2 * DAY, "collecting_sample", "out_for_delivery"),
    step(3 * DAY, "collecting_sample", "with_customer"),
    step(5 * DAY, "collecting_sample", "transit_lab"),
    step(7 * DAY, "sample_with_lab", "delivered_to_lab"),
    step(8 * DAY, "sample_with_lab", "partial_results"),
    step(9 * DAY, "completed", "completed"),
];

/// Steps after which the sample is on its way or at the lab: too late to cancel.
const NOT_CANCELLABLE_DETAILS: &[&str] = &["transit_lab", "draw_completed"];

fn timeline(method: &str) -> &'static [Step] {
    match method {
        "at_home_phlebotomy" => AT_HOME,
        "testkit" => TESTKIT,
        _ => WALK_IN,
    }
}

fn status_of(method: &str, s: &Step) -> String {
    format!("{}.{method}.{}", s.group, s.detail)
}

/// The deterministic lab network.
#[derive(Debug, Clone, Copy, Default)]
pub struct SimulatedLab;

fn hash(parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h.finalize().into()
}

/// A number in [0, 1) from a hash.
fn unit(h: &[u8; 32], at: usize) -> f64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[at..at + 8]);
    (u64::from_be_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

fn decimals_for(a: &Analyte) -> usize {
    let high = a.ref_high.or(a.ref_low).unwrap_or(100.0);
    if high < 2.0 {
        3
    } else if high < 20.0 {
        2
    } else if high < 200.0 {
        1
    } else {
        0
    }
}

/// The index in `steps` of the latest status recorded, if it is one of them.
fn position(order: &LabOrderRef) -> Option<usize> {
    timeline(&order.collection_method)
        .iter()
        .position(|s| status_of(&order.collection_method, s) == order.last_status)
}

/// The simulated value of one analyte for one order.
pub fn simulate(order_id: &str, a: &Analyte, provider_id: &str) -> LabResultValue {
    let h = hash(&[order_id, &a.loinc.code]);
    let (result, result_type, value, interpretation) = match a.result_type.as_str() {
        "numeric" => {
            let low = a.ref_low.unwrap_or(0.0);
            let high = a.ref_high.unwrap_or(low * 2.0 + 1.0);
            let span = (high - low).max(0.001);
            let u = unit(&h, 0);
            let v = if unit(&h, 8) < 0.85 {
                low + span * (0.05 + 0.9 * u)
            } else if unit(&h, 16) < 0.5 && low > 0.0 {
                low * (0.7 + 0.25 * u)
            } else {
                high * (1.05 + 0.3 * u)
            };
            let d = decimals_for(a);
            let text = format!("{v:.d$}");
            let v: f64 = text.parse().unwrap_or(v);
            let interp = if v < low || v > high { "abnormal" } else { "normal" };
            (text, "numeric", Some(v), interp)
        }
        "range" => match (a.ref_low, a.ref_high) {
            (Some(low), None) => (format!(">{low}"), "range", Some(low), "normal"),
            (_, Some(high)) => (format!("<{high}"), "range", Some(high), "normal"),
            (None, None) => ("<1".into(), "range", Some(1.0), "normal"),
        },
        "coded" => {
            (a.normal_text.clone().unwrap_or_else(|| "Negative".into()), "coded_value", None, "normal")
        }
        _ => (a.normal_text.clone().unwrap_or_else(|| "See note".into()), "comment", None, "normal"),
    };
    LabResultValue {
        loinc_code: a.loinc.code.clone(),
        name: a.name.clone(),
        slug: a.loinc.slug.clone(),
        provider_id: provider_id.to_owned(),
        result,
        result_type: result_type.into(),
        value,
        unit: a.unit.clone(),
        min_range_value: a.ref_low,
        max_range_value: a.ref_high,
        interpretation: interpretation.into(),
        notes: None,
    }
}

#[async_trait]
impl LabNetwork for SimulatedLab {
    async fn place(&self, request: &LabRequest) -> Result<Placement, LabError> {
        if wearlab_domain::lab::validate::zip5(&request.patient_zip) == REFUSED_ZIP {
            return Err(LabError::Rejected(format!(
                "The lab does not serve the patient's ZIP code {REFUSED_ZIP}: the order was not placed."
            )));
        }
        let h = hash(&["accession", &request.order_id.to_string()]);
        let digits = u64::from_be_bytes(h[..8].try_into().expect("8 bytes")) % 1_000_000_000;
        let prefix: String = request.lab_slug.chars().take(3).collect::<String>().to_ascii_uppercase();
        let first = &timeline(&request.collection_method)[0];
        Ok(Placement {
            accession_number: format!("{prefix}{digits:09}"),
            status: status_of(&request.collection_method, first),
        })
    }

    async fn poll(&self, order: &LabOrderRef, now: DateTime<Utc>) -> Result<Poll, LabError> {
        let Some(pos) = position(order) else { return Ok(Poll::default()) };
        let steps = timeline(&order.collection_method);
        let mut poll = Poll::default();
        for s in &steps[pos + 1..] {
            let at = order.placed_at + s.at;
            if at <= now {
                poll.updates.push(StatusUpdate { status: status_of(&order.collection_method, s), at });
            } else {
                poll.next_due = Some(at);
                break;
            }
        }
        Ok(poll)
    }

    async fn cancel(&self, order: &LabOrderRef, now: DateTime<Utc>) -> Result<StatusUpdate, LabError> {
        let group = status_group(&order.last_status);
        let cancellable = matches!(group, "received" | "collecting_sample")
            && !NOT_CANCELLABLE_DETAILS.contains(&status_detail(&order.last_status));
        if !cancellable {
            return Err(LabError::NotCancellable(format!(
                "the order is {}; only orders not yet on their way to the lab can be cancelled",
                order.last_status
            )));
        }
        Ok(StatusUpdate { status: format!("cancelled.{}.cancelled", order.collection_method), at: now })
    }

    async fn results(&self, order: &LabOrderRef, _now: DateTime<Utc>) -> Result<Option<LabReport>, LabError> {
        let Some(pos) = position(order) else { return Ok(None) };
        let steps = timeline(&order.collection_method);
        let current = &steps[pos];
        let status = match current.detail {
            "partial_results" => "partial",
            "completed" => "final",
            _ => return Ok(None),
        };
        let c = catalog();
        let mut results: Vec<LabResultValue> = Vec::new();
        let id = order.order_id.to_string();
        for m in order.marker_ids.iter().filter_map(|id| c.marker(*id)) {
            for er in &m.expected_results {
                if results.iter().any(|r| r.loinc_code == er.loinc.code) {
                    continue;
                }
                if let Some(a) = c.analyte(&er.loinc.code) {
                    results.push(simulate(&id, a, &er.provider_id));
                }
            }
        }
        if status == "partial" {
            results.truncate(results.len().div_ceil(2));
        }
        let collected_at =
            steps.iter().find(|s| s.group == "sample_with_lab").map(|s| order.placed_at + s.at);
        Ok(Some(LabReport {
            status: status.into(),
            collected_at,
            reported_at: order.placed_at + current.at,
            results,
        }))
    }
}
