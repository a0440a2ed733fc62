//! The WeChat ClawBot (iLink Bot) HTTP API client and the account store,
//! shared by the daemon's ClawBot component and the `scv clawbot` CLI.
//! The API is described in `shared/spec/ilink.md`.

pub mod client;
pub mod store;
pub mod types;

pub use client::{IlinkClient, IlinkError};
pub use store::{AccountStore, ChatSession, Credentials, Delivery, Settings};

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
