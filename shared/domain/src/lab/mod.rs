//! Lab ordering: demographics and insurance of users, the lab catalog, orders on a
//! `LabNetwork` port (simulated by `wearlab_sim::SimulatedLab`), results, patient service centers, portal links and
//! their identity check (`verification`).
//!
//! Everything of a user is stored in the user's partition, so erasure removes it; the two
//! pointer items outside it are listed by `keys::lab::outside_keys`.

pub mod demographics;
pub mod insurance;
pub mod orders;
pub mod portal;
pub mod psc;
pub mod test_catalog;
pub mod validate;
pub mod verification;

pub use orders::{Links, advance_due};
