//! Patient service centers near an order: great-circle distance from the centroid of the
//! patient's ZIP code (`infra/data/lab/zip_centroids.csv`, US Census ZCTA centroids) to each
//! site of the order's lab (`infra/data/lab/psc_sites.json`), nearest first.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde::Deserialize;
use uuid::Uuid;
use wearlab_models::lab::{
    BillingType, GeoLocation, PatientServiceCenter, PscCapability, PscInfo, PscMetadata,
};

use super::orders::{self, Links};
use super::test_catalog::catalog;
use super::validate::zip5;
use crate::Deps;
use crate::common::error::DomainError;
use crate::common::ids::TeamId;
use crate::ports::LabNetwork;

/// The radii a search may use, in miles.
pub const RADII: [u32; 5] = [10, 20, 25, 50, 100];
pub const DEFAULT_RADIUS: u32 = 25;
/// Mean Earth radius in miles (IUGG).
pub const EARTH_RADIUS_MILES: f64 = 3958.8;

#[derive(Debug, Clone, Deserialize)]
struct Site {
    lab_id: i64,
    site_code: String,
    metadata: PscMetadata,
    capabilities: Vec<PscCapability>,
    supported_bill_types: Vec<BillingType>,
    location: GeoLocation,
}

static SITES: LazyLock<Vec<Site>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../../../infra/data/lab/psc_sites.json"))
        .expect("psc_sites.json parses")
});

static ZIPS: LazyLock<HashMap<&'static str, (f64, f64)>> = LazyLock::new(|| {
    include_str!("../../../../infra/data/lab/zip_centroids.csv")
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut parts = line.split(',');
            let zip = parts.next()?;
            let lat = parts.next()?.parse().ok()?;
            let lng = parts.next()?.parse().ok()?;
            Some((zip, (lat, lng)))
        })
        .collect()
});

/// The centroid of a US ZIP code (ZIP+4 accepted), if known.
pub fn zip_centroid(zip: &str) -> Option<(f64, f64)> {
    ZIPS.get(zip5(zip.trim())).copied()
}

/// Great-circle distance in miles (haversine).
pub fn distance_miles(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (p1, p2) = (a.0.to_radians(), b.0.to_radians());
    let dp = p2 - p1;
    let dl = (b.1 - a.1).to_radians();
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_MILES * h.sqrt().asin()
}

/// `radius` as given (default 25); anything but 10, 20, 25, 50 or 100 is a 422.
pub fn parse_radius(raw: Option<&str>) -> Result<u32, DomainError> {
    match raw {
        None => Ok(DEFAULT_RADIUS),
        Some(s) => s.trim().parse::<u32>().ok().filter(|r| RADII.contains(r)).ok_or_else(|| {
            DomainError::invalid(&["radius"], "radius must be one of 10, 20, 25, 50, 100", "enum")
        }),
    }
}

/// The `capabilities` filter; unknown values are a 422.
pub fn parse_capabilities(raw: &[String]) -> Result<Vec<PscCapability>, DomainError> {
    let mut out = Vec::new();
    for (i, s) in raw.iter().enumerate() {
        match PscCapability::known(s) {
            Some(c) => out.push(c),
            None => {
                return Err(DomainError::Validation(vec![wearlab_models::ValidationIssue {
                    loc: vec!["capabilities".into(), i.into()],
                    msg: format!("'{s}' is not one of: {}", PscCapability::KNOWN.join(", ")),
                    kind: "enum".into(),
                }]));
            }
        }
    }
    Ok(out)
}

/// Sites of `lab_id` within `radius` miles of `zip`, having every capability asked for,
/// nearest first.
pub fn near(
    zip: &str,
    lab_id: i64,
    radius: u32,
    capabilities: &[PscCapability],
) -> Result<Vec<PatientServiceCenter>, DomainError> {
    let origin = zip_centroid(zip).ok_or_else(|| {
        DomainError::Rejected(format!("No location is known for the patient's ZIP code {zip}."))
    })?;
    let mut found: Vec<(f64, &Site)> = SITES
        .iter()
        .filter(|s| s.lab_id == lab_id)
        .filter(|s| capabilities.iter().all(|c| s.capabilities.contains(c)))
        .map(|s| (distance_miles(origin, (s.location.lat, s.location.lng)), s))
        .filter(|(d, _)| *d <= f64::from(radius))
        .collect();
    found.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.site_code.cmp(&b.1.site_code)));
    Ok(found
        .into_iter()
        .map(|(d, s)| PatientServiceCenter {
            metadata: s.metadata.clone(),
            distance: format!("{}", d.round() as i64),
            site_code: s.site_code.clone(),
            supported_bill_types: s.supported_bill_types.clone(),
            capabilities: s.capabilities.clone(),
            location: s.location,
        })
        .collect())
}

/// GET /v3/order/{order_id}/psc/info.
pub async fn for_order(
    deps: &Deps,
    network: &dyn LabNetwork,
    team: TeamId,
    order_id: Uuid,
    radius: u32,
    capabilities: &[PscCapability],
    links: &Links,
) -> Result<PscInfo, DomainError> {
    let rec = orders::record(deps, network, team, order_id, links).await?;
    let lab = catalog().lab(rec.lab_id).expect("orders name known labs");
    Ok(PscInfo {
        lab_id: lab.id,
        slug: lab.slug.clone(),
        patient_service_centers: near(&rec.patient_address.zip, lab.id, radius, capabilities)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centroids_and_distances() {
        let nyc = zip_centroid("10001").unwrap();
        let la = zip_centroid("90012-1234").unwrap();
        let d = distance_miles(nyc, la);
        assert!((2440.0..2460.0).contains(&d), "{d}");
        assert!(zip_centroid("00000").is_none());
    }

    #[test]
    fn radius_boundary_sites_exist() {
        let sites = near("10001", 1, 25, &[]).unwrap();
        assert!(sites.iter().any(|s| s.metadata.city == "White Plains"));
        assert!(!sites.iter().any(|s| s.metadata.city == "Livingston"));
        let wider = near("10001", 1, 50, &[]).unwrap();
        assert!(wider.iter().any(|s| s.metadata.city == "Livingston"));
        let d: Vec<f64> = wider
            .iter()
            .map(|s| distance_miles(zip_centroid("10001").unwrap(), (s.location.lat, s.location.lng)))
            .collect();
        assert!(d.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn radius_values() {
        assert_eq!(parse_radius(None).unwrap(), 25);
        assert_eq!(parse_radius(Some("100")).unwrap(), 100);
        assert!(parse_radius(Some("30")).is_err());
        assert!(parse_radius(Some("abc")).is_err());
    }
}
