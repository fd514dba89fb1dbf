//! Tests live in `tests/it`: one binary, one module per area.
