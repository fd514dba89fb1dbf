//! Values kept per key within one process (an async lock per throttle item, a semaphore per
//! webhook endpoint), made on first use. When many are kept, those nobody holds are forgotten,
//! so the map stays bounded however many keys a long-running process meets.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Keys kept before the idle ones are forgotten.
const KEPT: usize = 10_000;

pub struct PerKey<T> {
    kept: Mutex<HashMap<String, Arc<T>>>,
    make: Box<dyn Fn() -> T + Send + Sync>,
}

impl<T> PerKey<T> {
    /// Values made by `make` the first time their key is asked for.
    pub fn new(make: impl Fn() -> T + Send + Sync + 'static) -> Self {
        Self { kept: Mutex::new(HashMap::new()), make: Box::new(make) }
    }

    /// The value of `key`: the same one for every caller while any caller holds it.
    pub fn get(&self, key: &str) -> Arc<T> {
        let mut kept = self.kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if kept.len() >= KEPT && !kept.contains_key(key) {
            kept.retain(|_, v| Arc::strong_count(v) > 1);
        }
        kept.entry(key.to_owned()).or_insert_with(|| Arc::new((self.make)())).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_key_and_idle_ones_are_forgotten_when_many_are_kept() {
        let p = PerKey::new(|| ());
        let a = p.get("a");
        assert!(Arc::ptr_eq(&a, &p.get("a")));
        assert!(!Arc::ptr_eq(&a, &p.get("b")));
        // Up to the bound: "a" (held) and "b" plus idle values nobody holds any more.
        for i in 0..KEPT - 2 {
            p.get(&i.to_string());
        }
        assert_eq!(p.kept.lock().unwrap().len(), KEPT);
        // A new key over the bound: every idle value went, the held one stayed.
        p.get("new");
        let kept = p.kept.lock().unwrap();
        assert_eq!(kept.len(), 2, "a and new");
        assert!(kept.contains_key("a") && kept.contains_key("new"));
    }
}
