//! Conformance of the whoop adapter against its local fake.
