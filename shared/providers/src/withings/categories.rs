//! Withings's workout categories: the table of `workout_object.category` in the Withings API
//! reference (api-evangelist/withings `openapi/_original/withings-data-api-openapi.yml`), names
//! verbatim.

/// `(category, the Withings API reference's description)`, in the document's order.
pub const CATEGORIES: &[(i64, &str)] = &[
    (1, "Walk"),
    (2, "Run"),
    (3, "Hiking"),
    (4, "Skating"),
    (5, "BMX"),
    (6, "Bicycling"),
    (7, "Swimming"),
    (8, "Surfing"),
    (9, "Kitesurfing"),
    (10, "Windsurfing"),
    (11, "Bodyboard"),
    (12, "Tennis"),
    (13, "Table tennis"),
    (14, "Squash"),
    (15, "Badminton"),
    (16, "Lift weights"),
    (17, "Fitness"),
    (18, "Elliptical"),
    (19, "Pilates"),
    (20, "Basket-ball"),
    (21, "Soccer"),
    (22, "Football"),
    (23, "Rugby"),
    (24, "Volley-ball"),
    (25, "Waterpolo"),
    (26, "Horse riding"),
    (27, "Golf"),
    (28, "Yoga"),
    (29, "Dancing"),
    (30, "Boxing"),
    (31, "Fencing"),
    (32, "Wrestling"),
    (33, "Martial arts"),
    (34, "Skiing"),
    (35, "Snowboarding"),
    (36, "Other"),
    (128, "No activity"),
    (187, "Rowing"),
    (188, "Zumba"),
    (191, "Baseball"),
    (192, "Handball"),
    (193, "Hockey"),
    (194, "Ice hockey"),
    (195, "Climbing"),
    (196, "Ice skating"),
    (272, "Multi-sport"),
    (306, "Indoor walk"),
    (307, "Indoor running"),
    (308, "Indoor cycling"),
    (455, "Standup Paddleboarding"),
    (456, "Padel"),
    (457, "Gaming"),
    (490, "Beach volleyball"),
    (491, "Stair Stepper"),
    (492, "Skateboarding"),
    (493, "Parkour"),
    (494, "Kayaking"),
    (495, "Canoeing"),
    (496, "Sailing"),
    (497, "Fishing"),
    (498, "Trail Running"),
    (499, "Snowshoeing"),
    (500, "Paintball"),
    (501, "Archery"),
    (502, "Scuba Diving"),
    (503, "Baseball Training"),
    (504, "Biathlon"),
    (505, "Bocce"),
    (506, "Pétanque"),
    (507, "Paragliding"),
    (508, "Frisbee"),
    (509, "Skydiving"),
    (510, "Pickleball"),
    (511, "Cornhole"),
    (512, "Dodgeball"),
    (513, "Ultimate"),
    (514, "Teqball"),
    (515, "Pushing a Wheelchair (Running Pace)"),
    (516, "Pushing a Wheelchair (Walking Pace)"),
    (517, "Athletics"),
    (518, "Track Cycling"),
    (519, "Pentathlon"),
    (520, "Sport Shooting"),
    (521, "Triathlon"),
    (522, "Diving"),
    (523, "Mountain Biking"),
    (524, "Gravel Biking"),
    (525, "E-Biking"),
    (526, "E-Mountain Biking"),
    (527, "Handcycling"),
    (528, "Velomobile"),
    (529, "Backcountry Skiing"),
    (530, "Nordic Skiing"),
    (531, "Roller Skiing"),
    (532, "Racquetball"),
    (534, "Hip Hop"),
    (535, "Muaythai"),
    (536, "Taekwondo"),
    (537, "Judo"),
    (538, "Trampoline"),
    (539, "Standing Frame"),
    (540, "Seated Strenght"),
    (541, "Seated Cardio"),
    (542, "Walk With Walker"),
    (543, "Walk With Cane"),
    (544, "Breaking"),
    (545, "Chores"),
    (546, "Crossfit"),
    (547, "Spinclass"),
    (548, "Cricket"),
    (549, "Flamenco Dancing"),
    (550, "HIIT"),
    (551, "Meditation"),
    (552, "Stretching"),
    (553, "Yard Work Gardening"),
    (554, "Cleaning"),
    (555, "Public Speaking"),
    (556, "Spikeball"),
    (557, "Lacrosse"),
    (558, "Baby Wearing"),
    (559, "Dog Walking"),
    (560, "Breathing excercises"),
    (561, "Balance Drills"),
    (562, "Pushing a Stroller"),
    (563, "Toddler Wearing"),
    (564, "Bowling"),
    (565, "Lasertag"),
    (566, "Nordic Walking"),
    (567, "Sumo Wrestling"),
    (568, "Cooking"),
];

/// Wearlab's sport for a category named `name`, where the simulator and the other adapters already
/// use a slug for the same sport; otherwise the name is slugged as it stands.
const SAME_SPORT: &[(&str, &str)] = &[
    ("Walk", "walking"),
    ("Run", "running"),
    ("Bicycling", "cycling"),
    ("Lift weights", "strength_training"),
];

/// The sport slug of a workout category; `other` for a code the table does not list.
pub fn sport(category: i64) -> String {
    let Some((_, name)) = CATEGORIES.iter().find(|(code, _)| *code == category) else {
        return "other".to_owned();
    };
    match SAME_SPORT.iter().find(|(n, _)| n == name) {
        Some((_, slug)) => (*slug).to_owned(),
        None => crate::adapter::sport_slug(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_map_to_sport_slugs() {
        assert_eq!(CATEGORIES.len(), 130, "every row of the Withings API reference's table");
        assert_eq!(sport(1), "walking");
        assert_eq!(sport(2), "running");
        assert_eq!(sport(6), "cycling");
        assert_eq!(sport(7), "swimming");
        assert_eq!(sport(16), "strength_training");
        assert_eq!(sport(36), "other");
        assert_eq!(sport(307), "indoor_running");
        assert_eq!(sport(506), "petanque");
        assert_eq!(sport(550), "hiit");
        assert_eq!(sport(999), "other", "a code the table does not list");
        let codes: std::collections::HashSet<i64> = CATEGORIES.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes.len(), CATEGORIES.len(), "no code twice");
    }
}
