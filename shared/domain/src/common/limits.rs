//! Bounds on the lists and texts of request bodies: the one rule (and wording) every parser
//! uses, so no accepted body can make a stored item exceed DynamoDB's 400 KB.
//!
//! A list over its bound is reported once at the list (its items are not looked at, so a 6 MB
//! list does not make a 6 MB answer); a duplicate in a list that is a set is reported at the
//! duplicate's index, at most [`MAX_DUPLICATES_REPORTED`] of them.

use std::collections::HashSet;
use std::hash::Hash;

use wearlab_models::{LocPart, ValidationIssue};

/// Webhook `event_types` of one endpoint.
pub const MAX_EVENT_TYPES: usize = 100;
/// One webhook event type, in characters.
pub const MAX_EVENT_TYPE_CHARS: usize = 200;
/// Lab test ids of one order set (`order_set.lab_test_ids`, `list_order_set_markers`).
pub const MAX_LAB_TEST_IDS: usize = 100;
/// Add-on markers of one order set (`add_on.provider_ids` and `add_on.marker_ids`, each).
pub const MAX_ADD_ON_MARKERS: usize = 100;
/// A code looked up in a directory (an add-on test code, an insurance `payor_code`), in
/// characters.
pub const MAX_CODE_CHARS: usize = 64;
/// Link token `filter_on_providers` (more than the provider catalog holds, with room to grow).
pub const MAX_FILTER_ON_PROVIDERS: usize = 100;
/// Data pull preferences: providers given their own `history_days` (a map: no duplicates).
pub const MAX_HISTORY_DAYS_PROVIDERS: usize = 100;
/// Duplicates reported in one answer (the rest are alike).
pub const MAX_DUPLICATES_REPORTED: usize = 20;

fn loc_of(loc: &[&str]) -> Vec<LocPart> {
    loc.iter().map(|s| LocPart::from(*s)).collect()
}

/// `None` when `len` is within `max`; else the issue at `loc`, worded as FastAPI words it.
pub fn too_many(loc: &[&str], len: usize, max: usize) -> Option<ValidationIssue> {
    (len > max).then(|| ValidationIssue {
        loc: loc_of(loc),
        msg: format!("List should have at most {max} items after validation, not {len}"),
        kind: "too_long".into(),
    })
}

/// `None` when `s` has at most `max` characters; else the issue at `loc`.
pub fn too_long(loc: &[LocPart], s: &str, max: usize) -> Option<ValidationIssue> {
    (s.chars().count() > max).then(|| ValidationIssue {
        loc: loc.to_vec(),
        msg: format!("String should have at most {max} characters"),
        kind: "string_too_long".into(),
    })
}

/// Each item of `items` (a set) that repeats an earlier one, reported at its index.
pub fn duplicates<T: Eq + Hash>(loc: &[&str], items: &[T]) -> Vec<ValidationIssue> {
    let mut seen = HashSet::with_capacity(items.len());
    let mut found = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if !seen.insert(item) && found.len() < MAX_DUPLICATES_REPORTED {
            let mut at = loc_of(loc);
            at.push(i.into());
            found.push(ValidationIssue {
                loc: at,
                msg: "duplicate item: the list is a set, each value at most once".into(),
                kind: "value_error".into(),
            });
        }
    }
    found
}

/// The bound and the uniqueness of a set-valued list: `Err` with its issues when it breaks
/// either. Callers look at the items only once this is `Ok`.
pub fn check_set<T: Eq + Hash>(loc: &[&str], items: &[T], max: usize) -> Result<(), Vec<ValidationIssue>> {
    if let Some(i) = too_many(loc, items.len(), max) {
        return Err(vec![i]);
    }
    let dups = duplicates(loc, items);
    if dups.is_empty() { Ok(()) } else { Err(dups) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_over_its_bound_is_one_issue_naming_the_bound() {
        let items = vec![1; 5_000];
        let found = check_set(&["xs"], &items, 100).unwrap_err();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].msg, "List should have at most 100 items after validation, not 5000");
        assert_eq!(found[0].kind, "too_long");
    }

    #[test]
    fn duplicates_are_reported_at_their_index_and_capped() {
        let found = check_set(&["xs"], &[1, 2, 1, 3, 2], 100).unwrap_err();
        let at: Vec<_> = found.iter().map(|i| i.loc.last().cloned()).collect();
        assert_eq!(at, vec![Some(LocPart::Index(2)), Some(LocPart::Index(4))]);
        let many = check_set(&["xs"], &[7; 90], 100).unwrap_err();
        assert_eq!(many.len(), MAX_DUPLICATES_REPORTED);
        assert!(check_set(&["xs"], &[1, 2, 3], 3).is_ok());
    }

    #[test]
    fn text_bounds_count_characters() {
        assert!(too_long(&[], &"é".repeat(10), 10).is_none());
        assert_eq!(
            too_long(&[], &"a".repeat(11), 10).unwrap().msg,
            "String should have at most 10 characters"
        );
    }
}
