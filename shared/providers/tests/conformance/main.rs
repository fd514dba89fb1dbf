//! The adapter conformance suite: every real adapter, pointed at the local fake of its
//! provider, links, refreshes (including the rotating-token race), fetches every resource
//! across pages with units mapped, handles 401/429/5xx, answers the push handshake, checks
//! push signatures and revokes.

mod dexcom;
mod google_health;
mod oura;
mod polar;
mod strava;
mod whoop;
mod withings;
