//! PATCH semantics: an omitted field means "leave as is", an explicit `null` means "clear".

use serde::{Deserialize, Deserializer};

/// One field of a PATCH body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Patch<T> {
    /// Field absent: keep the stored value.
    #[default]
    Keep,
    /// Field present and `null`: clear the stored value.
    Clear,
    /// Field present with a value.
    Set(T),
}

impl<T> Patch<T> {
    /// The value after applying this patch to `current`.
    pub fn apply(self, current: Option<T>) -> Option<T> {
        match self {
            Patch::Keep => current,
            Patch::Clear => None,
            Patch::Set(v) => Some(v),
        }
    }

    pub fn is_keep(&self) -> bool {
        matches!(self, Patch::Keep)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Only called when the key is present (fields use `#[serde(default)]`).
        Ok(match Option::<T>::deserialize(d)? {
            None => Patch::Clear,
            Some(v) => Patch::Set(v),
        })
    }
}
