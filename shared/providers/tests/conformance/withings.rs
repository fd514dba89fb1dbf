//! Conformance of the withings adapter against its local fake.
