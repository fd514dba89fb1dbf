//! One module per resource under `/v3`.

pub mod lab_tests;
pub mod markers;
pub mod orders;
pub mod payors;
pub mod portal_page;
pub mod psc;
