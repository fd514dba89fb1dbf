//! Wearlab's sport of a workout: a slug of the name the provider gives (`running`,
//! `functional_fitness`), `other` when it gives none. The pulled providers' adapters and the
//! phone's uploads read sports by this one rule.

/// A provider's sport name as a Wearlab sport slug: lower case, Latin accents dropped, every run
/// of other characters one `_` (`"Functional Fitness"` -> `functional_fitness`, `"E-Mountain
/// Biking"` -> `e_mountain_biking`, `"Pétanque"` -> `petanque`); `other` when nothing is left.
pub fn sport_slug(name: &str) -> String {
    let mut slug = String::with_capacity(name.len());
    for c in name.chars().flat_map(char::to_lowercase) {
        let c = match c {
            'à' | 'á' | 'â' | 'ä' => 'a',
            'ç' => 'c',
            'è' | 'é' | 'ê' | 'ë' => 'e',
            'ì' | 'í' | 'î' | 'ï' => 'i',
            'ò' | 'ó' | 'ô' | 'ö' => 'o',
            'ù' | 'ú' | 'û' | 'ü' => 'u',
            c => c,
        };
        if c.is_ascii_alphanumeric() {
            slug.push(c);
        } else if !slug.is_empty() && !slug.ends_with('_') {
            slug.push('_');
        }
    }
    while slug.ends_with('_') {
        slug.pop();
    }
    if slug.is_empty() { "other".to_owned() } else { slug }
}

#[cfg(test)]
mod tests {
    use super::sport_slug;

    #[test]
    fn sport_names_become_slugs() {
        assert_eq!(sport_slug("running"), "running");
        assert_eq!(sport_slug(" Functional Fitness "), "functional_fitness");
        assert_eq!(sport_slug("E-Mountain Biking"), "e_mountain_biking");
        assert_eq!(sport_slug("Pushing a Wheelchair (Running Pace)"), "pushing_a_wheelchair_running_pace");
        assert_eq!(sport_slug("Pétanque"), "petanque");
        assert_eq!(sport_slug(" - "), "other");
    }
}
