//! The languages the hosted pages (link widget, user portal) speak, and how a page picks one:
//! an explicit choice (a link token's `language`, a page's `lang` parameter) wins, then the
//! browser's `Accept-Language` (RFC 9110 section 12.5.4: the highest `q` first, `q=0` never),
//! then English.

use serde::{Deserialize, Serialize};

use super::error::DomainError;

/// A language of the hosted pages. Regional tags choose their language (`pt-BR` is
/// Portuguese, `en-GB` English).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    #[default]
    En,
    Es,
    De,
    Fr,
    Pt,
}

impl Language {
    pub const ALL: [Language; 5] = [Self::En, Self::Es, Self::De, Self::Fr, Self::Pt];

    /// The BCP 47 primary language subtag (`<html lang>`, the `language` field).
    pub fn tag(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Es => "es",
            Self::De => "de",
            Self::Fr => "fr",
            Self::Pt => "pt",
        }
    }

    /// The language of a BCP 47 tag (`de`, `pt-BR`, `EN_us`), when the pages speak it.
    pub fn from_tag(tag: &str) -> Option<Self> {
        let primary = tag.trim().split(['-', '_']).next()?;
        Self::ALL.into_iter().find(|l| l.tag().eq_ignore_ascii_case(primary))
    }

    /// An explicit choice sent through the API: 422 naming the languages when not spoken.
    pub fn parse(tag: &str) -> Result<Self, DomainError> {
        Self::from_tag(tag).ok_or_else(|| {
            let known: Vec<&str> = Self::ALL.iter().map(|l| l.tag()).collect();
            DomainError::invalid(
                &["language"],
                format!("must be one of {} (a regional tag such as pt-BR is accepted)", known.join(", ")),
                "enum",
            )
        })
    }

    /// The best language of an `Accept-Language` header the pages speak, if any.
    pub fn from_accept_language(header: &str) -> Option<Self> {
        // Bounded: a header of thousands of entries is not a browser's.
        let mut best: Option<(u16, usize, Self)> = None;
        for (i, entry) in header.split(',').take(32).enumerate() {
            let mut parts = entry.split(';');
            let Some(lang) = parts.next().and_then(Self::from_tag) else { continue };
            let q = parts
                .find_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
                .map_or(Some(1000), quality);
            let Some(q) = q.filter(|q| *q > 0) else { continue };
            // Higher q wins; among equals the earlier entry.
            if best.is_none_or(|(bq, bi, _)| q > bq || (q == bq && i < bi)) {
                best = Some((q, i, lang));
            }
        }
        best.map(|(_, _, l)| l)
    }

    /// The page's language: the explicit choice when it is spoken, else the browser's, else English.
    pub fn negotiate(explicit: Option<&str>, accept_language: Option<&str>) -> Self {
        explicit
            .and_then(Self::from_tag)
            .or_else(|| accept_language.and_then(Self::from_accept_language))
            .unwrap_or_default()
    }
}

/// A `q` value in thousandths (`0.8` is 800); `None` when malformed.
fn quality(v: &str) -> Option<u16> {
    let v = v.trim();
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u16 = match int {
        "0" => 0,
        "1" => 1,
        _ => return None,
    };
    let frac_value: u16 = format!("{frac:0<3}").parse().ok()?;
    let q = whole * 1000 + frac_value;
    (q <= 1000).then_some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_choose_their_language() {
        assert_eq!(Language::from_tag("pt-BR"), Some(Language::Pt));
        assert_eq!(Language::from_tag("EN_us"), Some(Language::En));
        assert_eq!(Language::from_tag("de"), Some(Language::De));
        assert_eq!(Language::from_tag("it"), None);
        assert_eq!(Language::from_tag(""), None);
        assert!(Language::parse("klingon").is_err());
    }

    #[test]
    fn accept_language_is_read_by_quality() {
        assert_eq!(Language::from_accept_language("fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7"), Some(Language::Fr));
        assert_eq!(Language::from_accept_language("it, de;q=0.5, es;q=0.9"), Some(Language::Es));
        assert_eq!(Language::from_accept_language("es;q=0, pt;q=0.1"), Some(Language::Pt));
        assert_eq!(Language::from_accept_language("*"), None);
        assert_eq!(Language::from_accept_language("de;q=abc, fr;q=2"), None);
        assert_eq!(Language::from_accept_language("de;q=0.500, fr;q=0.5"), Some(Language::De));
    }

    #[test]
    fn an_explicit_choice_wins_over_the_browser() {
        assert_eq!(Language::negotiate(Some("de"), Some("fr")), Language::De);
        assert_eq!(Language::negotiate(Some("it"), Some("fr")), Language::Fr);
        assert_eq!(Language::negotiate(None, None), Language::En);
    }
}
