//! The one table of what every Observation of wearable data is coded with: the Wearlab
//! timeseries it is read from, its LOINC code, its UCUM unit, its category and profile, and how
//! a day of samples becomes one value. `docs/FHIR.md` lists the same table, with each code's
//! source; a test checks that the two agree.
//!
//! Sources: the codes and units the FHIR R4 vital-signs profile requires
//! (<https://hl7.org/fhir/R4/observation-vitalsigns.html>: heart rate 8867-4 in `/min`,
//! respiratory rate 9279-1, oxygen saturation 2708-6 in `%`, body temperature 8310-5 in `Cel`,
//! body weight 29463-7 in `kg`, BMI 39156-5 in `kg/m2`, blood pressure panel 85354-9 with
//! systolic 8480-6 and diastolic 8462-4 in `mm[Hg]`, body height 8302-2 in `cm`); the other
//! LOINC codes from their pages at <https://loinc.org/> (59408-5, 40443-4, 80404-7, 41982-0,
//! 2339-0, 55423-8, 41981-2, and the sleep codes 93832-4, 93830-8, 93831-6, 93829-0); UCUM from
//! <https://ucum.org/ucum> (`/min`, `ms`, `%`, `Cel`, `kg`, `kg/m2`, `cm`, `mg/dL`, `mm[Hg]`,
//! `kcal`, `min`, and the annotation `{steps}`).

use wearlab_models::Resource;
use wearlab_models::data::{ActivitySummary, BodySummary, GLUCOSE_MG_DL_PER_MMOL_L, SleepSummary};

/// LOINC's system URI.
pub const LOINC: &str = "http://loinc.org";
/// UCUM's system URI.
pub const UCUM: &str = "http://unitsofmeasure.org";
/// FHIR's Observation category code system.
pub const CATEGORY_SYSTEM: &str = "http://terminology.hl7.org/CodeSystem/observation-category";

/// An Observation category (FHIR's `observation-category` value set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    VitalSigns,
    Activity,
    Laboratory,
}

impl Category {
    pub fn code(self) -> &'static str {
        match self {
            Category::VitalSigns => "vital-signs",
            Category::Activity => "activity",
            Category::Laboratory => "laboratory",
        }
    }

    pub fn display(self) -> &'static str {
        match self {
            Category::VitalSigns => "Vital Signs",
            Category::Activity => "Activity",
            Category::Laboratory => "Laboratory",
        }
    }

    pub const ALL: [Category; 3] = [Category::VitalSigns, Category::Activity, Category::Laboratory];
}

/// How a day of samples becomes the Observation's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// The mean of the day's samples (rates, levels, measurements).
    Mean,
    /// The sum of the day's samples (counts and energy over the day).
    Sum,
}

/// Where an Observation's value is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// One Observation per stored day of the timeseries' samples (of one provider and source),
    /// its value the day's aggregate.
    Samples(Aggregate),
    /// One Observation per stored sleep session (a summary: a night and a nap are two), its
    /// value the time asleep, each of [`SleepStage::ALL`] a component.
    SleepSessions,
    /// One Observation per stored day summary that holds the value (one provider and source a
    /// day), its value the summary's.
    DayValues(DayValue),
}

/// A value a day summary holds, read as one Observation of that day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DayValue {
    /// The activity summary's `heart_rate.resting_bpm`.
    RestingHeartRate,
    /// The body summary's `height` (a height measured that day).
    Height,
    /// The body summary's `weight`, from a provider that keeps no `weight` timeseries (one
    /// that does, Withings say, is read from its samples: reading both would answer one
    /// weighing twice).
    BodyWeight,
    /// The body summary's `fat`, from a provider that keeps no `fat` timeseries (as
    /// [`DayValue::BodyWeight`]).
    BodyFat,
}

/// A day summary's value as a [`DayValue`] reads it: the summary's own id, day and source,
/// and the value in its Wearlab unit (`None`: the summary does not hold it).
#[derive(Debug, Clone, PartialEq)]
pub struct DayReading<'a> {
    pub id: &'a str,
    pub date: chrono::NaiveDate,
    pub value: Option<(f64, &'static str)>,
    pub source: &'a wearlab_models::data::SourceContext,
}

impl DayValue {
    /// The summary field it reads, as the data API names it.
    pub fn field(self) -> &'static str {
        match self {
            DayValue::RestingHeartRate => "heart_rate.resting_bpm",
            DayValue::Height => "height",
            DayValue::BodyWeight => "weight",
            DayValue::BodyFat => "fat",
        }
    }

    pub fn of_activity(a: &ActivitySummary) -> DayReading<'_> {
        let value = a.heart_rate.as_ref().and_then(|h| h.resting_bpm).map(|v| (v, "bpm"));
        DayReading { id: &a.id, date: a.calendar_date, value, source: &a.source }
    }

    /// `b`'s value of this kind, in its Wearlab unit; `None` for a weight or body fat of a
    /// provider that keeps the timeseries too (its samples are read instead).
    pub fn of_body(self, b: &BodySummary) -> DayReading<'_> {
        let from_samples = |series: Resource| {
            crate::common::provider_catalog::catalog()
                .get(&b.source.provider)
                .is_some_and(|p| p.supported_resources.contains(&series))
        };
        let value = match self {
            DayValue::Height => b.height.map(|m| (m, "m")),
            DayValue::BodyWeight if !from_samples(Resource::Weight) => b.weight.map(|kg| (kg, "kg")),
            DayValue::BodyFat if !from_samples(Resource::Fat) => b.fat.map(|pct| (pct, "%")),
            DayValue::RestingHeartRate | DayValue::BodyWeight | DayValue::BodyFat => None,
        };
        DayReading { id: &b.id, date: b.calendar_date, value, source: &b.source }
    }
}

/// A stage of a sleep session, a component of its Observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepStage {
    Light,
    Deep,
    Rem,
    Awake,
}

impl SleepStage {
    pub const ALL: [SleepStage; 4] =
        [SleepStage::Light, SleepStage::Deep, SleepStage::Rem, SleepStage::Awake];

    /// The stage's LOINC code (<https://loinc.org/93830-8/>, <https://loinc.org/93831-6/>,
    /// <https://loinc.org/93829-0/>). LOINC has no code for the time awake within a sleep
    /// session: that component is coded by its text alone.
    pub fn loinc(self) -> Option<Loinc> {
        match self {
            SleepStage::Light => Some(Loinc { code: "93830-8", display: "Light sleep duration" }),
            SleepStage::Deep => Some(Loinc { code: "93831-6", display: "Deep sleep duration" }),
            SleepStage::Rem => Some(Loinc { code: "93829-0", display: "REM sleep duration" }),
            SleepStage::Awake => None,
        }
    }

    /// The component's `code.text`.
    pub fn text(self) -> &'static str {
        match self.loinc() {
            Some(l) => l.display,
            None => "Awake duration within the sleep session",
        }
    }

    /// The session's seconds in this stage.
    pub fn seconds(self, s: &SleepSummary) -> i64 {
        match self {
            SleepStage::Light => s.light,
            SleepStage::Deep => s.deep,
            SleepStage::Rem => s.rem,
            SleepStage::Awake => s.awake,
        }
    }
}

/// A LOINC coding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loinc {
    pub code: &'static str,
    pub display: &'static str,
}

/// A unit a Wearlab sample may carry for this code, and the factor to the code's UCUM unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accepts {
    pub wearlab: &'static str,
    pub factor: f64,
}

const fn same(wearlab: &'static str) -> Accepts {
    Accepts { wearlab, factor: 1.0 }
}

/// One coded Observation of a Wearlab timeseries.
#[derive(Debug, Clone, PartialEq)]
pub struct Code {
    pub resource: Resource,
    /// The Observation's code; `also` are further codings of the same concept (or a more
    /// specific one, as resting heart rate beside heart rate).
    pub loinc: Loinc,
    pub also: &'static [Loinc],
    /// The code's `text`: what the Observation is about.
    pub text: &'static str,
    /// The UCUM code of the value (and of each component) and its human unit.
    pub ucum: &'static str,
    pub unit: &'static str,
    pub accepts: &'static [Accepts],
    pub category: Category,
    /// The FHIR profile the Observation follows, when one applies.
    pub profile: Option<&'static str>,
    pub reading: Reading,
    /// Blood pressure: the systolic and diastolic components (the Observation has no value).
    pub components: Option<(Loinc, Loinc)>,
}

const VITALS: &str = "http://hl7.org/fhir/StructureDefinition/";

#[allow(clippy::too_many_arguments)]
fn code(
    resource: Resource,
    loinc: (&'static str, &'static str),
    ucum: &'static str,
    unit: &'static str,
    accepts: &'static [Accepts],
    category: Category,
    profile: Option<&'static str>,
    aggregate: Aggregate,
) -> Code {
    Code {
        resource,
        loinc: Loinc { code: loinc.0, display: loinc.1 },
        also: &[],
        text: loinc.1,
        ucum,
        unit,
        accepts,
        category,
        profile,
        reading: Reading::Samples(aggregate),
        components: None,
    }
}

/// Every code emitted for wearable data, in the order a search walks them.
// The units each code reads (see `Code::accepts`).
const PER_MINUTE: &[Accepts] = &[same("bpm")];
const PERCENT: &[Accepts] = &[same("%"), same("percent")];
const CELSIUS: &[Accepts] = &[same("°C")];
const MMHG: &[Accepts] = &[same("mmHg")];
const KG: &[Accepts] = &[same("kg"), Accepts { wearlab: "lb", factor: 0.453_592_37 }];
const KG_M2: &[Accepts] = &[same("kg/m2"), same("kg/m²")];
const MS: &[Accepts] = &[same("ms")];
const MG_DL: &[Accepts] = &[same("mg/dL"), Accepts { wearlab: "mmol/L", factor: GLUCOSE_MG_DL_PER_MMOL_L }];
const COUNT: &[Accepts] = &[same("count")];
const KCAL: &[Accepts] = &[same("kcal")];
/// Heights are kept in meters.
const CM: &[Accepts] = &[Accepts { wearlab: "m", factor: 100.0 }];
/// Sleep sessions are summaries, kept in seconds: no sample unit to read.
const SESSIONS: &[Accepts] = &[];

pub fn codes() -> &'static [Code] {
    use Aggregate::{Mean, Sum};
    use Category::{Activity, Laboratory, VitalSigns};
    static CODES: std::sync::LazyLock<Vec<Code>> = std::sync::LazyLock::new(|| {
        let heart_rate = || {
            code(
                Resource::Heartrate,
                ("8867-4", "Heart rate"),
                "/min",
                "beats/minute",
                PER_MINUTE,
                VitalSigns,
                Some("heartrate"),
                Mean,
            )
        };
        // Weight and body fat are read from their timeseries, and from body summaries of the
        // providers that keep no such timeseries ([`DayValue::BodyWeight`]): one code, two readings.
        let weight = || {
            code(
                Resource::Weight,
                ("29463-7", "Body weight"),
                "kg",
                "kg",
                KG,
                VitalSigns,
                Some("bodyweight"),
                Mean,
            )
        };
        let fat = || {
            code(
                Resource::Fat,
                ("41982-0", "Percentage of body fat Measured"),
                "%",
                "%",
                PERCENT,
                VitalSigns,
                None,
                Mean,
            )
        };
        vec![
            heart_rate(),
            // Resting heart rate: the heart rate profile requires 8867-4 and allows a more
            // specific code beside it (https://hl7.org/fhir/R4/observation-vitalsigns.html).
            Code {
                also: &[Loinc { code: "40443-4", display: "Heart rate --resting" }],
                text: "Resting heart rate",
                reading: Reading::DayValues(DayValue::RestingHeartRate),
                resource: Resource::Activity,
                ..heart_rate()
            },
            code(
                Resource::RespiratoryRate,
                ("9279-1", "Respiratory rate"),
                "/min",
                "breaths/minute",
                PER_MINUTE,
                VitalSigns,
                Some("resprate"),
                Mean,
            ),
            Code {
                also: &[Loinc {
                    code: "59408-5",
                    display: "Oxygen saturation in Arterial blood by Pulse oximetry",
                }],
                ..code(
                    Resource::BloodOxygen,
                    ("2708-6", "Oxygen saturation in Arterial blood"),
                    "%",
                    "%",
                    PERCENT,
                    VitalSigns,
                    Some("oxygensat"),
                    Mean,
                )
            },
            code(
                Resource::BodyTemperature,
                ("8310-5", "Body temperature"),
                "Cel",
                "Cel",
                CELSIUS,
                VitalSigns,
                Some("bodytemp"),
                Mean,
            ),
            Code {
                components: Some((
                    Loinc { code: "8480-6", display: "Systolic blood pressure" },
                    Loinc { code: "8462-4", display: "Diastolic blood pressure" },
                )),
                ..code(
                    Resource::BloodPressure,
                    ("85354-9", "Blood pressure panel with all children optional"),
                    "mm[Hg]",
                    "mmHg",
                    MMHG,
                    VitalSigns,
                    Some("bp"),
                    Mean,
                )
            },
            weight(),
            Code { resource: Resource::Body, reading: Reading::DayValues(DayValue::BodyWeight), ..weight() },
            Code {
                reading: Reading::DayValues(DayValue::Height),
                ..code(
                    Resource::Body,
                    ("8302-2", "Body height"),
                    "cm",
                    "cm",
                    CM,
                    VitalSigns,
                    Some("bodyheight"),
                    Mean,
                )
            },
            code(
                Resource::BodyMassIndex,
                ("39156-5", "Body mass index (BMI) [Ratio]"),
                "kg/m2",
                "kg/m2",
                KG_M2,
                VitalSigns,
                Some("bmi"),
                Mean,
            ),
            code(
                Resource::Hrv,
                ("80404-7", "R-R interval.standard deviation (Heart rate variability)"),
                "ms",
                "ms",
                MS,
                VitalSigns,
                None,
                Mean,
            ),
            fat(),
            Code { resource: Resource::Body, reading: Reading::DayValues(DayValue::BodyFat), ..fat() },
            code(
                Resource::Glucose,
                ("2339-0", "Glucose [Mass/volume] in Blood"),
                "mg/dL",
                "mg/dL",
                MG_DL,
                Laboratory,
                None,
                Mean,
            ),
            code(
                Resource::Steps,
                ("55423-8", "Number of steps in unspecified time Pedometer"),
                "{steps}",
                "steps",
                COUNT,
                Activity,
                None,
                Sum,
            ),
            code(
                Resource::CaloriesActive,
                ("41981-2", "Calories burned"),
                "kcal",
                "kcal",
                KCAL,
                Activity,
                None,
                Sum,
            ),
            // Sleep is `activity`: the category's definition names sleep data
            // (https://terminology.hl7.org/CodeSystem-observation-category.html); no R4
            // vital-signs profile applies.
            Code {
                resource: Resource::Sleep,
                loinc: Loinc { code: "93832-4", display: "Sleep duration" },
                also: &[],
                text: "Sleep duration",
                ucum: "min",
                unit: "min",
                accepts: SESSIONS,
                category: Activity,
                profile: None,
                reading: Reading::SleepSessions,
                components: None,
            },
        ]
    });
    &CODES
}

impl Code {
    /// The profile's canonical URL.
    pub fn profile_url(&self) -> Option<String> {
        self.profile.map(|p| format!("{VITALS}{p}"))
    }

    /// A sample's value in the code's unit, or `None` for a unit it does not read.
    pub fn convert(&self, unit: &str, value: f64) -> Option<f64> {
        self.accepts.iter().find(|a| a.wearlab == unit).map(|a| value * a.factor)
    }

    /// Whether a search's `code` token (`[system|]code`) names this code.
    pub fn matches(&self, token: &str) -> bool {
        let (system, code) = match token.split_once('|') {
            Some((s, c)) => (Some(s), c),
            None => (None, token),
        };
        system.is_none_or(|s| s.is_empty() || s == LOINC)
            && (self.loinc.code == code || self.also.iter().any(|l| l.code == code))
    }
}
