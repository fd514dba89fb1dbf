//! The local fake of whoop's API.
