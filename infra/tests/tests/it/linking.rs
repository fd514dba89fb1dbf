//! Tests of the linking endpoints.
