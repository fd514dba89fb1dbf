//! The lab catalog: labs, lab accounts, markers with LOINC-coded expected results, and lab
//! tests, from the reference data in `infra/data/lab/catalog.json` (built into the binary, read
//! once per process). See `infra/data/lab/README.md` for where it comes from.

use std::collections::HashMap;
use std::sync::LazyLock;

use base64::Engine;
use serde::Deserialize;
use uuid::Uuid;
use wearlab_models::ValidationIssue;
use wearlab_models::lab::{
    CollectionMethod, Lab, LabTest, LabTestMarker, LabTestPage, Loinc, Marker, MarkerPage, OrderSet,
    OrderSetMarkersBody,
};

use crate::common::error::{DomainError, issue};
use crate::common::limits;

/// Marker pages: `page` from 1, `size` 1 to 100, default 50.
pub const DEFAULT_PAGE_SIZE: u64 = 50;
pub const MAX_PAGE_SIZE: u64 = 100;
/// Highest page number accepted (far beyond any catalog).
pub const MAX_PAGE: u64 = 1_000_000;
/// GET /v3/lab_test: `lab_test_limit` 1 to 100, default 50.
pub const DEFAULT_LAB_TEST_LIMIT: u64 = 50;
pub const MAX_LAB_TEST_LIMIT: u64 = 100;

/// A lab account: the agreement with a lab under which orders are placed; it decides which
/// markers are available.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LabAccount {
    pub id: Uuid,
    pub lab_id: i64,
    pub name: String,
    pub excluded_provider_ids: Vec<String>,
}

impl LabAccount {
    pub fn offers(&self, m: &Marker) -> bool {
        m.lab_id == self.lab_id && !self.excluded_provider_ids.contains(&m.provider_id)
    }
}

/// An analyte: what the simulated lab needs to report a result for a LOINC code.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Analyte {
    pub key: String,
    pub loinc: Loinc,
    pub name: String,
    pub unit: Option<String>,
    pub sample_type: String,
    /// numeric, range, coded or comment.
    pub result_type: String,
    pub ref_low: Option<f64>,
    pub ref_high: Option<f64>,
    pub normal_text: Option<String>,
}

/// A lab test as stored in the reference data.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LabTestRecord {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
    pub description: String,
    pub lab_id: i64,
    pub method: String,
    pub sample_type: String,
    pub fasting: bool,
    pub price: f64,
    pub is_active: bool,
    pub common_tat_days: u32,
    pub marker_ids: Vec<i64>,
}

#[derive(Deserialize)]
struct CatalogFile {
    labs: Vec<Lab>,
    lab_accounts: Vec<LabAccount>,
    analytes: Vec<Analyte>,
    markers: Vec<Marker>,
    lab_tests: Vec<LabTestRecord>,
}

/// The whole catalog, indexed.
pub struct Catalog {
    pub labs: Vec<Lab>,
    pub accounts: Vec<LabAccount>,
    pub markers: Vec<Marker>,
    pub lab_tests: Vec<LabTestRecord>,
    analytes: HashMap<String, Analyte>,
    marker_index: HashMap<i64, usize>,
    /// Lower-cased names of the panels that contain each biomarker.
    panel_names: HashMap<i64, Vec<String>>,
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(|| {
    let file: CatalogFile = serde_json::from_str(include_str!("../../../../infra/data/lab/catalog.json"))
        .expect("catalog.json parses");
    Catalog::new(file)
});

/// The catalog of this build.
pub fn catalog() -> &'static Catalog {
    &CATALOG
}

impl Catalog {
    fn new(f: CatalogFile) -> Self {
        let marker_index = f.markers.iter().enumerate().map(|(i, m)| (m.id, i)).collect();
        let mut panel_names: HashMap<i64, Vec<String>> = HashMap::new();
        for panel in f.markers.iter().filter(|m| m.kind == "panel") {
            for er in &panel.expected_results {
                for bio in f.markers.iter().filter(|m| {
                    m.kind == "biomarker"
                        && m.lab_id == panel.lab_id
                        && m.expected_results.iter().any(|e| e.loinc.code == er.loinc.code)
                }) {
                    panel_names.entry(bio.id).or_default().push(panel.name.to_lowercase());
                }
            }
        }
        Self {
            labs: f.labs,
            accounts: f.lab_accounts,
            analytes: f.analytes.into_iter().map(|a| (a.loinc.code.clone(), a)).collect(),
            markers: f.markers,
            lab_tests: f.lab_tests,
            marker_index,
            panel_names,
        }
    }

    pub fn lab(&self, id: i64) -> Option<&Lab> {
        self.labs.iter().find(|l| l.id == id)
    }

    pub fn lab_by_slug(&self, slug: &str) -> Option<&Lab> {
        self.labs.iter().find(|l| l.slug.eq_ignore_ascii_case(slug))
    }

    pub fn account(&self, id: Uuid) -> Option<&LabAccount> {
        self.accounts.iter().find(|a| a.id == id)
    }

    pub fn marker(&self, id: i64) -> Option<&Marker> {
        self.marker_index.get(&id).map(|&i| &self.markers[i])
    }

    pub fn analyte(&self, loinc_code: &str) -> Option<&Analyte> {
        self.analytes.get(loinc_code)
    }

    pub fn lab_test(&self, id: Uuid) -> Option<&LabTestRecord> {
        self.lab_tests.iter().find(|t| t.id == id)
    }

    /// The lab test as the API shows it.
    pub fn lab_test_wire(&self, t: &LabTestRecord) -> LabTest {
        let lab = self.lab(t.lab_id).cloned().expect("lab tests name known labs");
        LabTest {
            id: t.id,
            slug: t.slug.clone(),
            name: t.name.clone(),
            description: t.description.clone(),
            sample_type: t.sample_type.clone(),
            method: CollectionMethod::from(t.method.as_str()),
            price: t.price,
            is_active: t.is_active,
            status: if t.is_active { "active" } else { "inactive" }.into(),
            fasting: t.fasting,
            common_tat_days: t.common_tat_days,
            auto_generated: false,
            lab,
            markers: t.marker_ids.iter().filter_map(|id| self.marker(*id)).map(lab_test_marker).collect(),
        }
    }

    /// The lab test an order of add-on markers only shows (`auto_generated`): its id is the
    /// order's, it holds the markers at their summed price, for the order's collection method,
    /// with the longest turnaround of the lab's tests for that method.
    pub fn add_on_lab_test_wire(
        &self,
        order_id: Uuid,
        lab_id: i64,
        method: &str,
        marker_ids: &[i64],
    ) -> LabTest {
        let lab = self.lab(lab_id).cloned().expect("orders name known labs");
        let markers: Vec<&Marker> = marker_ids.iter().filter_map(|id| self.marker(*id)).collect();
        let sample_type = markers
            .iter()
            .flat_map(|m| &m.expected_results)
            .find_map(|r| self.analyte(&r.loinc.code))
            .map(|a| a.sample_type.clone())
            .or_else(|| lab.sample_types.first().cloned())
            .unwrap_or_default();
        let common_tat_days = self
            .lab_tests
            .iter()
            .filter(|t| t.lab_id == lab_id && t.method == method)
            .map(|t| t.common_tat_days)
            .max()
            .unwrap_or(0);
        LabTest {
            id: order_id,
            slug: format!("add_on_{}", order_id.simple()),
            name: "Add-on markers".into(),
            description: format!("The add-on markers of order {order_id}."),
            sample_type,
            method: CollectionMethod::from(method),
            price: markers.iter().filter_map(|m| m.price.parse::<f64>().ok()).sum(),
            is_active: true,
            status: "active".into(),
            fasting: false,
            common_tat_days,
            auto_generated: true,
            lab,
            markers: markers.into_iter().map(lab_test_marker).collect(),
        }
    }

    fn name_matches(&self, m: &Marker, needle: &str) -> bool {
        needle.is_empty()
            || m.name.to_lowercase().contains(needle)
            || m.provider_id.to_lowercase().contains(needle)
            || self.panel_names.get(&m.id).is_some_and(|names| names.iter().any(|n| n.contains(needle)))
    }
}

/// A marker as a lab test lists it.
fn lab_test_marker(m: &Marker) -> LabTestMarker {
    LabTestMarker {
        id: m.id,
        name: m.name.clone(),
        slug: m.slug.clone(),
        provider_id: m.provider_id.clone(),
        kind: m.kind.clone(),
        unit: m.unit.clone(),
    }
}

/// A validated page request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSpec {
    pub page: u64,
    pub size: u64,
}

impl PageSpec {
    /// `page` at least 1 (default 1), `size` 1 to 100 (default 50); 422 otherwise.
    pub fn parse(page: Option<i64>, size: Option<i64>) -> Result<Self, DomainError> {
        let mut issues = Vec::new();
        let page = page.unwrap_or(1);
        let size = size.unwrap_or(DEFAULT_PAGE_SIZE as i64);
        if page < 1 || page as u64 > MAX_PAGE {
            issues.push(issue(&["page"], format!("page must be between 1 and {MAX_PAGE}"), "value_error"));
        }
        if !(1..=MAX_PAGE_SIZE as i64).contains(&size) {
            issues.push(issue(
                &["size"],
                format!("size must be between 1 and {MAX_PAGE_SIZE}"),
                "value_error",
            ));
        }
        if issues.is_empty() {
            Ok(Self { page: page as u64, size: size as u64 })
        } else {
            Err(DomainError::Validation(issues))
        }
    }

    /// Cuts `all` into the requested page with the wrapper's counts.
    pub fn cut<T: Clone>(&self, all: &[T]) -> (Vec<T>, u64, u64) {
        let total = all.len() as u64;
        let pages = total.div_ceil(self.size);
        let start = ((self.page - 1) * self.size).min(total) as usize;
        let end = (start + self.size as usize).min(all.len());
        (all[start..end].to_vec(), total, pages)
    }
}

fn marker_page(markers: Vec<Marker>, spec: PageSpec) -> MarkerPage {
    let (markers, total, pages) = spec.cut(&markers);
    MarkerPage { markers, total, page: spec.page, size: spec.size, pages }
}

/// GET /v3/lab_tests/markers filters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MarkerFilter {
    pub lab_ids: Vec<i64>,
    pub lab_slug: Option<String>,
    pub name: String,
    pub a_la_carte_enabled: Option<bool>,
    pub lab_account_id: Option<Uuid>,
}

fn account_or_invalid(id: Option<Uuid>, loc: &[&str]) -> Result<Option<&'static LabAccount>, DomainError> {
    match id {
        None => Ok(None),
        Some(id) => catalog()
            .account(id)
            .map(Some)
            .ok_or_else(|| DomainError::invalid(loc, format!("unknown lab account {id}"), "value_error")),
    }
}

/// Markers matching every filter, a page of them.
pub fn list_markers(filter: &MarkerFilter, spec: PageSpec) -> Result<MarkerPage, DomainError> {
    let c = catalog();
    let account = account_or_invalid(filter.lab_account_id, &["lab_account_id"])?;
    // `lab_slug` wins over `lab_id`; an unknown slug matches no lab.
    let labs: Option<Vec<i64>> = match &filter.lab_slug {
        Some(slug) if !slug.is_empty() => Some(c.lab_by_slug(slug).map(|l| vec![l.id]).unwrap_or_default()),
        _ if !filter.lab_ids.is_empty() => Some(filter.lab_ids.clone()),
        _ => None,
    };
    let needle = filter.name.trim().to_lowercase();
    let markers: Vec<Marker> = c
        .markers
        .iter()
        .filter(|m| labs.as_ref().is_none_or(|ids| ids.contains(&m.lab_id)))
        .filter(|m| filter.a_la_carte_enabled.is_none_or(|a| m.a_la_carte_enabled == a))
        .filter(|m| account.is_none_or(|a| a.offers(m)))
        .filter(|m| c.name_matches(m, &needle))
        .cloned()
        .collect();
    Ok(marker_page(markers, spec))
}

/// The markers of one lab test, a page of them.
pub fn lab_test_markers(
    id: Uuid,
    lab_account_id: Option<Uuid>,
    spec: PageSpec,
) -> Result<MarkerPage, DomainError> {
    let c = catalog();
    let account = account_or_invalid(lab_account_id, &["lab_account_id"])?;
    let t = c.lab_test(id).ok_or_else(|| DomainError::NotFound(format!("Lab test {id} not found.")))?;
    let markers = t
        .marker_ids
        .iter()
        .filter_map(|id| c.marker(*id))
        .filter(|m| account.is_none_or(|a| a.offers(m)))
        .cloned()
        .collect();
    Ok(marker_page(markers, spec))
}

/// An order set resolved against the catalog: one lab, its lab tests, its add-on markers.
#[derive(Debug, Clone)]
pub struct ResolvedOrderSet {
    pub lab: &'static Lab,
    pub lab_tests: Vec<&'static LabTestRecord>,
    pub add_ons: Vec<&'static Marker>,
}

impl ResolvedOrderSet {
    /// Every marker of the order: the lab tests' then the add-ons, each once.
    pub fn markers(&self) -> Vec<&'static Marker> {
        let c = catalog();
        let mut out: Vec<&'static Marker> = Vec::new();
        for t in &self.lab_tests {
            for m in t.marker_ids.iter().filter_map(|id| c.marker(*id)) {
                if !out.iter().any(|o| o.id == m.id) {
                    out.push(m);
                }
            }
        }
        for m in &self.add_ons {
            if !out.iter().any(|o| o.id == m.id) {
                out.push(m);
            }
        }
        out
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Resolves lab test ids and add-ons (by test code or marker id) to one lab. `base` is the
/// location of the order set in the body (e.g. `["order_set"]`); every problem is
/// reported at its own location.
pub fn resolve_order_set(
    set: &OrderSet,
    account: Option<&LabAccount>,
    base: &[&str],
    require_something: bool,
) -> Result<ResolvedOrderSet, Vec<ValidationIssue>> {
    let c = catalog();
    let mut issues = Vec::new();
    let loc =
        |tail: &[&str]| -> Vec<String> { base.iter().chain(tail.iter()).map(|s| s.to_string()).collect() };
    let push = |issues: &mut Vec<ValidationIssue>, l: Vec<String>, idx: Option<usize>, msg: String| {
        let mut v: Vec<wearlab_models::LocPart> = l.into_iter().map(Into::into).collect();
        if let Some(i) = idx {
            v.push(i.into());
        }
        issues.push(ValidationIssue { loc: v, msg, kind: "value_error".into() });
    };
    // The bounds first: a list over its bound or with a duplicate is not looked into.
    let add_on = set.add_on.clone().unwrap_or_default();
    let ids_loc = loc(&["lab_test_ids"]);
    let codes_loc = loc(&["add_on", "provider_ids"]);
    let markers_loc = loc(&["add_on", "marker_ids"]);
    let mut bounds = Vec::new();
    if let Some(ids) = &set.lab_test_ids
        && let Err(found) = limits::check_set(&strs(&ids_loc), ids, limits::MAX_LAB_TEST_IDS)
    {
        bounds.extend(found);
    }
    if let Some(codes) = &add_on.provider_ids {
        match limits::check_set(&strs(&codes_loc), codes, limits::MAX_ADD_ON_MARKERS) {
            Err(found) => bounds.extend(found),
            Ok(()) => {
                for (i, code) in codes.iter().enumerate() {
                    let mut at: Vec<wearlab_models::LocPart> =
                        codes_loc.iter().map(|s| s.as_str().into()).collect();
                    at.push(i.into());
                    bounds.extend(limits::too_long(&at, code, limits::MAX_CODE_CHARS));
                }
            }
        }
    }
    if let Some(ids) = &add_on.marker_ids
        && let Err(found) = limits::check_set(&strs(&markers_loc), ids, limits::MAX_ADD_ON_MARKERS)
    {
        bounds.extend(found);
    }
    if !bounds.is_empty() {
        return Err(bounds);
    }
    let mut tests: Vec<&'static LabTestRecord> = Vec::new();
    for (i, id) in set.lab_test_ids.iter().flatten().enumerate() {
        match c.lab_test(*id) {
            Some(t) if t.is_active => {
                if !tests.iter().any(|x| x.id == t.id) {
                    tests.push(t);
                }
            }
            _ => push(&mut issues, loc(&["lab_test_ids"]), Some(i), format!("unknown lab test {id}")),
        }
    }
    let mut lab_id = tests.first().map(|t| t.lab_id).or(account.map(|a| a.lab_id));
    if tests.iter().any(|t| Some(t.lab_id) != lab_id) {
        push(
            &mut issues,
            loc(&["lab_test_ids"]),
            None,
            "all lab tests of an order must be of one lab".into(),
        );
    }
    let mut add_ons: Vec<&'static Marker> = Vec::new();
    for (i, code) in add_on.provider_ids.iter().flatten().enumerate() {
        let found: Vec<&'static Marker> = c
            .markers
            .iter()
            .filter(|m| m.provider_id == *code && lab_id.is_none_or(|l| m.lab_id == l))
            .collect();
        match found.as_slice() {
            [m] => {
                lab_id = Some(m.lab_id);
                add_ons.push(m);
            }
            [] => push(
                &mut issues,
                loc(&["add_on", "provider_ids"]),
                Some(i),
                format!("unknown test code {code}"),
            ),
            _ => push(
                &mut issues,
                loc(&["add_on", "provider_ids"]),
                Some(i),
                format!("test code {code} exists at several labs; name a lab test or a lab account"),
            ),
        }
    }
    for (i, id) in add_on.marker_ids.iter().flatten().enumerate() {
        match c.marker(*id) {
            Some(m) if lab_id.is_none_or(|l| m.lab_id == l) => {
                lab_id = Some(m.lab_id);
                add_ons.push(m);
            }
            Some(_) => push(
                &mut issues,
                loc(&["add_on", "marker_ids"]),
                Some(i),
                format!("marker {id} is of another lab"),
            ),
            None => {
                push(&mut issues, loc(&["add_on", "marker_ids"]), Some(i), format!("unknown marker {id}"))
            }
        }
    }
    for (i, m) in add_ons.iter().enumerate() {
        if !m.a_la_carte_enabled {
            push(
                &mut issues,
                loc(&["add_on"]),
                Some(i),
                format!("marker {} cannot be ordered on its own", m.id),
            );
        }
    }
    if let Some(a) = account {
        if lab_id.is_some_and(|l| l != a.lab_id) {
            push(&mut issues, loc(&[]), None, "the lab account is for another lab".into());
        }
        for m in tests
            .iter()
            .flat_map(|t| t.marker_ids.iter())
            .filter_map(|id| c.marker(*id))
            .chain(add_ons.iter().copied())
        {
            if !a.offers(m) {
                push(
                    &mut issues,
                    loc(&[]),
                    None,
                    format!("marker {} is not available with this lab account", m.id),
                );
                break;
            }
        }
    }
    if require_something && tests.is_empty() && add_ons.is_empty() && issues.is_empty() {
        push(
            &mut issues,
            loc(&["lab_test_ids"]),
            None,
            "an order needs at least one lab test or add-on".into(),
        );
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    let lab = match lab_id.and_then(|l| c.lab(l)) {
        Some(l) => l,
        None => {
            return Err(vec![issue(&[], "nothing to order", "value_error")]);
        }
    };
    Ok(ResolvedOrderSet { lab, lab_tests: tests, add_ons })
}

/// POST /v3/lab_tests/list_order_set_markers.
pub fn order_set_markers(body: &OrderSetMarkersBody, spec: PageSpec) -> Result<MarkerPage, DomainError> {
    let account = account_or_invalid(body.lab_account_id, &["lab_account_id"])?;
    let set = OrderSet { lab_test_ids: body.lab_test_ids.clone(), add_on: body.add_on.clone() };
    let empty = set.lab_test_ids.as_ref().is_none_or(Vec::is_empty)
        && set.add_on.as_ref().is_none_or(|a| {
            a.provider_ids.as_ref().is_none_or(Vec::is_empty)
                && a.marker_ids.as_ref().is_none_or(Vec::is_empty)
        });
    if empty {
        return Ok(marker_page(vec![], spec));
    }
    let resolved = resolve_order_set(&set, account, &[], false).map_err(DomainError::Validation)?;
    Ok(marker_page(resolved.markers().into_iter().cloned().collect(), spec))
}

/// GET /v3/lab_test filters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabTestFilter {
    pub lab_slug: Option<String>,
    pub collection_method: Option<String>,
    pub name: Option<String>,
}

fn filtered_lab_tests(f: &LabTestFilter) -> Vec<&'static LabTestRecord> {
    let c = catalog();
    let lab = f.lab_slug.as_deref().filter(|s| !s.is_empty()).map(|s| c.lab_by_slug(s).map(|l| l.id));
    let needle = f.name.as_deref().unwrap_or("").trim().to_lowercase();
    c.lab_tests
        .iter()
        .filter(|t| lab.is_none_or(|l| Some(t.lab_id) == l))
        .filter(|t| f.collection_method.as_deref().is_none_or(|m| m.is_empty() || t.method == m))
        .filter(|t| needle.is_empty() || t.name.to_lowercase().contains(&needle) || t.slug.contains(&needle))
        .collect()
}

fn encode_cursor(offset: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("lab_test:{offset}"))
}

fn decode_cursor(s: &str) -> Option<usize> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).ok()?;
    String::from_utf8(bytes).ok()?.strip_prefix("lab_test:")?.parse().ok()
}

/// GET /v3/lab_test: a page of lab tests with the cursor of the next.
pub fn list_lab_tests(
    f: &LabTestFilter,
    limit: Option<i64>,
    cursor: Option<&str>,
) -> Result<LabTestPage, DomainError> {
    let mut issues = Vec::new();
    let limit = limit.unwrap_or(DEFAULT_LAB_TEST_LIMIT as i64);
    if !(1..=MAX_LAB_TEST_LIMIT as i64).contains(&limit) {
        issues.push(issue(
            &["lab_test_limit"],
            format!("lab_test_limit must be between 1 and {MAX_LAB_TEST_LIMIT}"),
            "value_error",
        ));
    }
    let offset = match cursor.filter(|c| !c.is_empty()) {
        None => 0,
        Some(c) => decode_cursor(c).unwrap_or_else(|| {
            issues.push(issue(&["next_cursor"], "invalid cursor", "value_error"));
            0
        }),
    };
    if !issues.is_empty() {
        return Err(DomainError::Validation(issues));
    }
    let all = filtered_lab_tests(f);
    let c = catalog();
    let end = (offset + limit as usize).min(all.len());
    let data =
        all.get(offset.min(all.len())..end).unwrap_or_default().iter().map(|t| c.lab_test_wire(t)).collect();
    let next_cursor = (end < all.len()).then(|| encode_cursor(end));
    Ok(LabTestPage { data, next_cursor })
}

/// Deprecated GET /v3/lab_tests: every lab test.
pub fn all_lab_tests() -> Vec<LabTest> {
    let c = catalog();
    c.lab_tests.iter().map(|t| c.lab_test_wire(t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_consistent() {
        let c = catalog();
        assert!(c.labs.len() >= 3);
        assert!(c.markers.len() >= 300, "{}", c.markers.len());
        for m in &c.markers {
            assert!(c.lab(m.lab_id).is_some());
            assert!(!m.expected_results.is_empty());
            for er in &m.expected_results {
                assert!(c.analyte(&er.loinc.code).is_some(), "{}", er.loinc.code);
            }
        }
        for t in &c.lab_tests {
            assert!(t.marker_ids.iter().all(|id| c.marker(*id).is_some_and(|m| m.lab_id == t.lab_id)));
        }
    }

    #[test]
    fn pages_cut() {
        let spec = PageSpec::parse(Some(3), Some(2)).unwrap();
        assert_eq!(spec.cut(&[1, 2, 3, 4, 5]), (vec![5], 5, 3));
        assert!(PageSpec::parse(Some(0), None).is_err());
        assert!(PageSpec::parse(None, Some(101)).is_err());
    }
}
