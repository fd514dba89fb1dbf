//! Each provider's mark, served by Wearlab itself (link-api, under [`MARKS_PATH`]) so that no page
//! loads an image from a third-party host and the catalog's `logo` URLs always resolve: the
//! vendored Simple Icons path (`infra/data/marks/`, CC0, see the README there) in the vendor's
//! colour, or else a monogram of the provider's initials on the vendor's colour.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::provider_catalog::{ProviderInfo, catalog};

/// Where the marks are served: `{MARKS_PATH}/{slug}.svg`.
pub const MARKS_PATH: &str = "/v2/link/web/marks";

/// The vendored Simple Icons files, by their Simple Icons slug.
const VENDORED: [(&str, &str); 10] = [
    ("abbott", include_str!("../../../../infra/data/marks/abbott.svg")),
    ("apple", include_str!("../../../../infra/data/marks/apple.svg")),
    ("eightsleep", include_str!("../../../../infra/data/marks/eightsleep.svg")),
    ("fitbit", include_str!("../../../../infra/data/marks/fitbit.svg")),
    ("garmin", include_str!("../../../../infra/data/marks/garmin.svg")),
    ("google", include_str!("../../../../infra/data/marks/google.svg")),
    ("peloton", include_str!("../../../../infra/data/marks/peloton.svg")),
    ("runkeeper", include_str!("../../../../infra/data/marks/runkeeper.svg")),
    ("samsung", include_str!("../../../../infra/data/marks/samsung.svg")),
    ("strava", include_str!("../../../../infra/data/marks/strava.svg")),
];

/// The address of `slug`'s mark on the deployment, relative to its public URL (the catalog's
/// `logo`).
pub fn mark_path(slug: &str) -> String {
    format!("{MARKS_PATH}/{slug}.svg")
}

/// A catalog `logo` (a path of the deployment) as an address on the deployment at `base_url`
/// (its public URL); an address that is already absolute as it is.
pub fn logo_url(base_url: &str, logo: &str) -> String {
    if logo.starts_with('/') { format!("{}{logo}", base_url.trim_end_matches('/')) } else { logo.to_owned() }
}

static MARKS: LazyLock<HashMap<&'static str, String>> =
    LazyLock::new(|| catalog().all().iter().map(|p| (p.slug.as_str(), render(p))).collect());

/// The SVG document of `slug`'s mark; `None` for a slug not in the catalog.
pub fn mark_svg(slug: &str) -> Option<&'static str> {
    MARKS.get(slug).map(String::as_str)
}

fn render(p: &ProviderInfo) -> String {
    let vendored = p.mark.as_deref().and_then(|m| VENDORED.iter().find(|(slug, _)| *slug == m));
    match vendored.and_then(|(_, svg)| path_data(svg)) {
        // The icon on a white tile with a margin, in the vendor's colour.
        Some(d) => format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"-4 -4 32 32\">\
             <rect x=\"-4\" y=\"-4\" width=\"32\" height=\"32\" rx=\"7\" fill=\"#fff\"/>\
             <path fill=\"#{}\" d=\"{d}\"/></svg>",
            p.color
        ),
        None => monogram(&p.name, &p.color),
    }
}

/// The `d` of a Simple Icons file (each is one path).
fn path_data(svg: &str) -> Option<&str> {
    let start = svg.find(" d=\"")? + 4;
    let len = svg[start..].find('"')?;
    Some(&svg[start..start + len])
}

/// The initials of a name: the first letters of its first two words ("Health Connect": "HC",
/// "Oura": "O"), parenthesised words left out.
fn initials(name: &str) -> String {
    name.split_whitespace()
        .filter(|w| !w.starts_with('('))
        .take(2)
        .filter_map(|w| w.chars().find(|c| c.is_alphanumeric()))
        .flat_map(char::to_uppercase)
        .collect()
}

/// White initials on the vendor's colour (every catalog colour is dark enough for white text).
fn monogram(name: &str, color: &str) -> String {
    let text = initials(name);
    let size = if text.chars().count() > 1 { 12 } else { 15 };
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 32 32\">\
         <rect width=\"32\" height=\"32\" rx=\"7\" fill=\"#{color}\"/>\
         <text x=\"16\" y=\"16\" dy=\".35em\" text-anchor=\"middle\" fill=\"#fff\" font-size=\"{size}\" \
         font-weight=\"700\" font-family=\"system-ui,-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif\">{text}</text></svg>",
    )
}

/// WCAG 2.1's contrast ratio of white on `RRGGBB`.
#[cfg(test)]
fn contrast_with_white(hex: &str) -> f64 {
    let channel = |i: usize| {
        let v = f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap()) / 255.0;
        if v <= 0.03928 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
    };
    let l = 0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4);
    1.05 / (l + 0.05)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_has_a_mark_and_vendored_ones_are_used() {
        for p in catalog().all() {
            let svg = mark_svg(&p.slug).unwrap();
            assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{}", p.slug);
            assert!(svg.contains(&format!("#{}", p.color)), "{}", p.slug);
            match &p.mark {
                Some(m) => {
                    assert!(VENDORED.iter().any(|(s, _)| s == m), "{}: {m} is not vendored", p.slug);
                    assert!(svg.contains("<path"), "{}", p.slug);
                }
                None => {
                    assert!(svg.contains("<text"), "{}", p.slug);
                    // The monogram's white initials are readable (WCAG AA for large text).
                    assert!(contrast_with_white(&p.color) >= 4.5, "{}: {}", p.slug, p.color);
                }
            }
        }
        // Every vendored file is one some provider uses.
        for (slug, _) in VENDORED {
            assert!(catalog().all().iter().any(|p| p.mark.as_deref() == Some(slug)), "{slug}");
        }
        assert_eq!(mark_svg("carrier_pigeon"), None);
    }

    #[test]
    fn monograms_take_the_first_letters() {
        assert_eq!(initials("Health Connect"), "HC");
        assert_eq!(initials("Oura"), "O");
        assert_eq!(initials("Omron (Bluetooth)"), "O");
        assert_eq!(initials("Accu-Chek (Bluetooth)"), "A");
        assert!(monogram("Oura", "111111").contains(">O</text>"));
    }
}
