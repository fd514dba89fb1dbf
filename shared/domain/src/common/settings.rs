//! Operator settings given as text (the edge reads them from the environment and passes them
//! here): one rule for the bounded whole numbers, and one wording for a refused value.

use std::ops::RangeInclusive;

/// `value` of the setting `name` as a whole number within `range` (spaces around it allowed),
/// `default` when unset; anything else is refused with a message naming the setting.
pub fn whole_number(
    name: &str,
    value: Option<&str>,
    range: RangeInclusive<usize>,
    default: usize,
) -> Result<usize, String> {
    let Some(v) = value else { return Ok(default) };
    match v.trim().parse::<usize>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => {
            Err(format!("{name} must be a whole number from {} to {}, not {v:?}", range.start(), range.end()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_whole_number_or_the_default_or_a_refusal_naming_the_setting() {
        assert_eq!(whole_number("N", None, 1..=9, 4), Ok(4));
        assert_eq!(whole_number("N", Some(" 9 "), 1..=9, 4), Ok(9));
        for bad in ["0", "10", "-1", "2x", ""] {
            let e = whole_number("N", Some(bad), 1..=9, 4).unwrap_err();
            assert!(e.starts_with("N must be a whole number from 1 to 9"), "{bad}: {e}");
        }
    }
}
