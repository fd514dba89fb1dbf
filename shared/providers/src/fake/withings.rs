//! The local fake of withings's API.
