//! Wearlab's unit for each timeseries a phone uploads: the labels the mobile SDKs write in a
//! sample's `unit`, what each becomes, and the values a reading may take.
//!
//! The labels are the SDKs' own (public sources): iOS `tryVital/vital-ios`,
//! `Sources/VitalCore/Core/Client/Data Models/Patches/QuantitySample.swift` (the `Unit` enum) and
//! `Sources/VitalHealthKit/HealthKit/Models/CoreModels+Extensions.swift` (`QuantityUnit`: the
//! label beside the HealthKit unit the value is read in); Android `tryVital/vital-android`,
//! `VitalClient/src/main/java/io/tryvital/client/services/data/Summary.kt` (`SampleType`). Where
//! the label and the value disagree the value wins: Android labels active energy and the basal
//! metabolic rate `kJ` but reads them in kilocalories (`inKilocalories`,
//! `inKilocaloriesPerDay`, `VitalHealthConnect/.../records/RecordProcessor.kt`), and both SDKs
//! label heart-rate variability `rmssd` while the value is milliseconds (iOS: SDNN read in
//! `secondUnit(with: .milli)`; Android: `heartRateVariabilityMillis`).

use wearlab_models::Resource;

use wearlab_models::data::GLUCOSE_MG_DL_PER_MMOL_L;

/// One label an SDK writes, the Wearlab unit it becomes, and the factor to it.
struct Reading {
    sent: &'static str,
    unit: &'static str,
    factor: f64,
}

const fn same(unit: &'static str) -> Reading {
    Reading { sent: unit, unit, factor: 1.0 }
}

const fn read(sent: &'static str, unit: &'static str) -> Reading {
    Reading { sent, unit, factor: 1.0 }
}

const BPM: &[Reading] = &[same("bpm")];
/// Android writes steps and floors with an empty label.
const STEPS: &[Reading] = &[same("count"), read("", "count")];
const COUNT: &[Reading] = &[same("count")];
const PERCENT: &[Reading] = &[same("%")];
const CELSIUS: &[Reading] = &[same("°C")];
const MINUTES: &[Reading] = &[read("minute", "min")];
const LITERS: &[Reading] = &[same("L")];
/// Milliseconds under either label; which measure it is, is the provider's
/// (`super::hrv_measure`).
const HRV: &[Reading] = &[read("rmssd", "ms"), same("ms")];
const GLUCOSE: &[Reading] =
    &[Reading { sent: "mmol/L", unit: "mg/dL", factor: GLUCOSE_MG_DL_PER_MMOL_L }, same("mg/dL")];
const MMHG: &[Reading] = &[same("mmHg")];
const WATER: &[Reading] = &[same("mL"), read("ml", "mL")];
const MG: &[Reading] = &[same("mg")];
/// Labelled `count`, read in HealthKit's count/min.
const RECOVERY: &[Reading] = &[read("count", "bpm")];
const ACTIVE_ENERGY: &[Reading] = &[same("kcal"), read("kJ", "kcal")];
/// Android's `kJ` here is a basal metabolic rate in kcal per day, not an hour's energy.
const BASAL_ENERGY: &[Reading] = &[same("kcal"), read("kJ", "kcal/day")];
const METERS: &[Reading] = &[read("meter", "m"), same("m")];
const VO2_MAX: &[Reading] = &[same("mL/kg/min")];
const FLOW: &[Reading] = &[same("L/min")];
/// The body summary's sample lists: Android writes body fat `percent`.
const FAT: &[Reading] = &[same("%"), read("percent", "%")];
const KG: &[Reading] = &[same("kg")];

/// The readings of `resource`'s samples and the largest value it may have (in Wearlab's unit).
fn rule(resource: &Resource) -> Option<(&'static [Reading], Option<f64>)> {
    use Resource as R;
    Some(match resource {
        R::Heartrate | R::RespiratoryRate => (BPM, None),
        R::Hrv => (HRV, None),
        R::BloodOxygen | R::AfibBurden => (PERCENT, Some(100.0)),
        R::Glucose => (GLUCOSE, Some(2000.0)),
        R::BloodPressure => (MMHG, None),
        R::BodyTemperature | R::BasalBodyTemperature => (CELSIUS, None),
        R::Water => (WATER, None),
        R::Caffeine => (MG, None),
        R::MindfulnessMinutes | R::StandDuration | R::DaylightExposure => (MINUTES, None),
        R::Steps | R::FloorsClimbed => (STEPS, None),
        R::WheelchairPush
        | R::StandHour
        | R::HeartRateAlert
        | R::SleepApneaAlert
        | R::SleepBreathingDisturbance
        | R::InhalerUsage
        | R::Fall
        | R::UvExposure
        | R::Handwashing => (COUNT, None),
        R::HeartRateRecoveryOneMinute => (RECOVERY, None),
        R::CaloriesActive => (ACTIVE_ENERGY, None),
        R::CaloriesBasal => (BASAL_ENERGY, None),
        R::Distance => (METERS, None),
        R::Vo2Max => (VO2_MAX, None),
        R::ForcedExpiratoryVolume1 | R::ForcedVitalCapacity => (LITERS, None),
        R::PeakExpiratoryFlowRate => (FLOW, None),
        R::Fat => (FAT, Some(100.0)),
        R::Weight => (KG, None),
        _ => return None,
    })
}

/// Why a reading was refused.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Refused {
    /// A label the SDKs do not write for this resource; the message names the ones they do.
    Unit(String),
    /// A value outside what the resource can hold.
    Value(String),
}

/// `value` labelled `sent` as a sample of `resource` in Wearlab's unit: the value and its unit.
pub(super) fn convert(resource: &Resource, sent: &str, value: f64) -> Result<(f64, &'static str), Refused> {
    let Some((readings, max)) = rule(resource) else {
        return Err(Refused::Unit(format!("{resource} samples are not read from the phone")));
    };
    let Some(r) = readings.iter().find(|r| r.sent == sent) else {
        let known: Vec<String> = readings.iter().map(|r| format!("'{}'", r.sent)).collect();
        return Err(Refused::Unit(format!("unit must be one of {} for {resource}", known.join(", "))));
    };
    let v = value * r.factor;
    if !v.is_finite() || v < 0.0 {
        return Err(Refused::Value("value must be a number of at least 0".into()));
    }
    match max {
        Some(max) if v > max => Err(Refused::Value(format!("value must be at most {max} {}", r.unit))),
        _ => Ok((v, r.unit)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_an_sdk_writes_becomes_wearlabs_unit() {
        let cases = [
            (Resource::Glucose, "mmol/L", 5.0, 90.091, "mg/dL"),
            (Resource::Glucose, "mg/dL", 99.0, 99.0, "mg/dL"),
            (Resource::CaloriesActive, "kJ", 12.5, 12.5, "kcal"),
            (Resource::CaloriesBasal, "kJ", 1650.0, 1650.0, "kcal/day"),
            (Resource::CaloriesBasal, "kcal", 70.0, 70.0, "kcal"),
            (Resource::Steps, "", 120.0, 120.0, "count"),
            (Resource::FloorsClimbed, "count", 3.0, 3.0, "count"),
            (Resource::Fat, "percent", 21.5, 21.5, "%"),
            (Resource::Water, "ml", 250.0, 250.0, "mL"),
            (Resource::Water, "mL", 250.0, 250.0, "mL"),
            (Resource::Hrv, "rmssd", 48.0, 48.0, "ms"),
            (Resource::Distance, "meter", 812.0, 812.0, "m"),
            (Resource::MindfulnessMinutes, "minute", 10.0, 10.0, "min"),
            (Resource::HeartRateRecoveryOneMinute, "count", 22.0, 22.0, "bpm"),
        ];
        for (resource, sent, value, want, unit) in cases {
            let got = convert(&resource, sent, value);
            let Ok((v, u)) = got else { panic!("{resource} {sent:?}: {got:?}") };
            assert!((v - want).abs() < 1e-9 && u == unit, "{resource} {sent:?}: {v} {u}");
        }
    }

    #[test]
    fn a_label_the_sdks_do_not_write_is_refused_naming_the_ones_they_do() {
        let Err(Refused::Unit(msg)) = convert(&Resource::Glucose, "mg/L", 90.0) else { panic!() };
        assert_eq!(msg, "unit must be one of 'mmol/L', 'mg/dL' for glucose");
        assert!(matches!(convert(&Resource::Heartrate, "kJ", 60.0), Err(Refused::Unit(_))));
    }

    #[test]
    fn the_bounds_hold_in_wearlabs_unit() {
        // 111 mmol/L is 2000.02 mg/dL: over the bound although the sent number is small.
        assert!(matches!(convert(&Resource::Glucose, "mmol/L", 111.0), Err(Refused::Value(_))));
        assert!(convert(&Resource::Glucose, "mg/dL", 2000.0).is_ok());
        assert!(matches!(convert(&Resource::BloodOxygen, "%", 100.5), Err(Refused::Value(_))));
        assert!(matches!(convert(&Resource::Heartrate, "bpm", -1.0), Err(Refused::Value(_))));
        assert!(matches!(convert(&Resource::Heartrate, "bpm", f64::NAN), Err(Refused::Value(_))));
        assert!(convert(&Resource::Heartrate, "bpm", 0.0).is_ok());
    }
}
