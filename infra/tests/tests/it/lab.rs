//! Tests of the lab endpoints.
