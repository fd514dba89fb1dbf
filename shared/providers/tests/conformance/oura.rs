//! Conformance of the oura adapter against its local fake.
