//! Every string the hosted pages show, one catalogue per language (`shared/web/locales/*.txt`),
//! and dates and numbers written the way a reader of that language expects.
//!
//! A catalogue is lines of `key = text` (`#` starts a comment line). `{name}` in a text is
//! filled by [`Catalogue::fill`]; a literal brace is not needed by any text and not supported.
//! English is complete by definition; the unit tests check that every other catalogue has
//! exactly English's keys with the same placeholders, so a page never shows a key or an
//! English fallback in another language.

use std::collections::HashMap;
use std::sync::LazyLock;

use chrono::{Datelike, NaiveDate};
pub use wearlab_domain::common::language::Language;

const SOURCES: [(Language, &str); 5] = [
    (Language::En, include_str!("../locales/en.txt")),
    (Language::Es, include_str!("../locales/es.txt")),
    (Language::De, include_str!("../locales/de.txt")),
    (Language::Fr, include_str!("../locales/fr.txt")),
    (Language::Pt, include_str!("../locales/pt.txt")),
];

/// The texts of one language.
#[derive(Debug)]
pub struct Catalogue {
    language: Language,
    texts: HashMap<&'static str, &'static str>,
}

static CATALOGUES: LazyLock<Vec<Catalogue>> =
    LazyLock::new(|| SOURCES.iter().map(|(l, src)| Catalogue::parse(*l, src)).collect());

/// The catalogue of `language`.
pub fn catalogue(language: Language) -> &'static Catalogue {
    CATALOGUES.iter().find(|c| c.language == language).unwrap_or(&CATALOGUES[0])
}

impl Catalogue {
    fn parse(language: Language, src: &'static str) -> Self {
        let texts = src
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|l| l.split_once(" = ").map(|(k, v)| (k.trim(), v.trim())))
            .collect();
        Self { language, texts }
    }

    pub fn language(&self) -> Language {
        self.language
    }

    /// The text of `key`. A key missing here falls back to English, and one missing there to
    /// the key itself (the catalogue tests make both impossible for a shipped key).
    pub fn get(&self, key: &str) -> &'static str {
        self.texts.get(key).or_else(|| CATALOGUES[0].texts.get(key)).copied().unwrap_or_else(|| {
            tracing::warn!(key, "hosted page text missing from the catalogue");
            ""
        })
    }

    /// The text of `key` with each `{name}` replaced by its value (values are not escaped:
    /// escape the result when it goes into HTML).
    pub fn fill(&self, key: &str, args: &[(&str, &str)]) -> String {
        let mut out = self.get(key).to_owned();
        for (name, value) in args {
            out = out.replace(&format!("{{{name}}}"), value);
        }
        out
    }

    /// A calendar date, long form: "April 12, 2026", "12 de abril de 2026", "12. April 2026",
    /// "12 avril 2026", "12 de abril de 2026".
    pub fn date(&self, d: NaiveDate) -> String {
        let month = self.get(MONTH_KEYS[d.month0() as usize]);
        let (day, year) = (d.day(), d.year());
        match self.language {
            Language::En => format!("{month} {day}, {year}"),
            Language::De => format!("{day}. {month} {year}"),
            Language::Fr => format!("{day} {month} {year}"),
            Language::Es | Language::Pt => format!("{day} de {month} de {year}"),
        }
    }

    /// A number with at most `decimals` decimals (trailing zeros dropped), grouped by
    /// thousands: "12,345.6", "12.345,6", "12 345,6".
    pub fn number(&self, value: f64, decimals: usize) -> String {
        self.write_number(value, decimals, true)
    }

    /// A measured value with exactly `decimals` decimals, trailing zeros kept (a lab's "25.0"
    /// says its precision): "25.0", "25,0", grouped as [`Catalogue::number`] groups.
    pub fn measured(&self, value: f64, decimals: usize) -> String {
        self.write_number(value, decimals, false)
    }

    fn write_number(&self, value: f64, decimals: usize, trim: bool) -> String {
        if !value.is_finite() {
            return value.to_string();
        }
        let fixed = format!("{:.*}", decimals, value.abs());
        let (int, frac) = fixed.split_once('.').unwrap_or((&fixed, ""));
        let frac = if trim { frac.trim_end_matches('0') } else { frac };
        let (group, point) = match self.language {
            Language::En => (",", "."),
            Language::De | Language::Es | Language::Pt => (".", ","),
            // French groups with a narrow no-break space.
            Language::Fr => ("\u{202f}", ","),
        };
        // Spanish leaves four-digit numbers ungrouped (RAE); the others group from four digits.
        let grouped = if self.language == Language::Es && int.len() <= 4 {
            int.to_owned()
        } else {
            group_thousands(int, group)
        };
        let sign = if value < 0.0 && (int.bytes().any(|b| b != b'0') || frac.bytes().any(|b| b != b'0')) {
            "-"
        } else {
            ""
        };
        if frac.is_empty() { format!("{sign}{grouped}") } else { format!("{sign}{grouped}{point}{frac}") }
    }
}

const MONTH_KEYS: [&str; 12] = [
    "month.1", "month.2", "month.3", "month.4", "month.5", "month.6", "month.7", "month.8", "month.9",
    "month.10", "month.11", "month.12",
];

fn group_thousands(digits: &str, sep: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 * sep.len());
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(sep);
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn placeholders(text: &str) -> BTreeSet<&str> {
        text.split('{').skip(1).filter_map(|s| s.split_once('}').map(|(name, _)| name)).collect()
    }

    #[test]
    fn every_catalogue_has_englishs_keys_and_placeholders() {
        let en = catalogue(Language::En);
        assert!(!en.texts.is_empty());
        for lang in Language::ALL {
            let c = catalogue(lang);
            assert_eq!(c.language(), lang);
            let missing: Vec<_> = en.texts.keys().filter(|k| !c.texts.contains_key(*k)).collect();
            let extra: Vec<_> = c.texts.keys().filter(|k| !en.texts.contains_key(*k)).collect();
            assert!(missing.is_empty() && extra.is_empty(), "{lang:?}: missing {missing:?}, extra {extra:?}");
            for (k, v) in &c.texts {
                assert!(!v.is_empty(), "{lang:?} {k} is empty");
                assert_eq!(placeholders(v), placeholders(en.texts[k]), "{lang:?} {k}");
            }
        }
    }

    #[test]
    fn no_catalogue_line_is_malformed() {
        for (lang, src) in SOURCES {
            for line in src.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
                assert!(line.contains(" = "), "{lang:?}: {line:?} is not `key = text`");
            }
            let keys: Vec<_> =
                src.lines().filter_map(|l| l.split_once(" = ")).map(|(k, _)| k.trim()).collect();
            let unique: BTreeSet<_> = keys.iter().collect();
            assert_eq!(keys.len(), unique.len(), "{lang:?} repeats a key");
        }
    }

    #[test]
    fn dates_read_as_each_language_writes_them() {
        let d = NaiveDate::from_ymd_opt(2026, 4, 12).unwrap();
        assert_eq!(catalogue(Language::En).date(d), "April 12, 2026");
        assert_eq!(catalogue(Language::Es).date(d), "12 de abril de 2026");
        assert_eq!(catalogue(Language::De).date(d), "12. April 2026");
        assert_eq!(catalogue(Language::Fr).date(d), "12 avril 2026");
        assert_eq!(catalogue(Language::Pt).date(d), "12 de abril de 2026");
    }

    #[test]
    fn numbers_read_as_each_language_writes_them() {
        assert_eq!(catalogue(Language::En).number(12345.6, 1), "12,345.6");
        assert_eq!(catalogue(Language::De).number(12345.6, 1), "12.345,6");
        assert_eq!(catalogue(Language::Fr).number(12345.6, 2), "12\u{202f}345,6");
        assert_eq!(catalogue(Language::Es).number(1234.5, 1), "1234,5");
        assert_eq!(catalogue(Language::Es).number(12345.0, 1), "12.345");
        assert_eq!(catalogue(Language::Pt).number(-0.25, 2), "-0,25");
        assert_eq!(catalogue(Language::En).number(-0.001, 1), "0");
        assert_eq!(catalogue(Language::En).number(5.0, 0), "5");
        assert_eq!(catalogue(Language::De).measured(25.0, 1), "25,0");
        assert_eq!(catalogue(Language::Fr).measured(1234.5, 2), "1\u{202f}234,50");
        assert_eq!(catalogue(Language::En).measured(0.1, 3), "0.100");
    }

    #[test]
    fn texts_are_filled() {
        let en = catalogue(Language::En);
        assert_eq!(en.fill("month.4", &[]), "April");
        assert_eq!(CATALOGUES[0].fill("nonexistent.key", &[]), "");
    }
}
