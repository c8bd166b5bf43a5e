//! One endpoint for every clawrl policy, teacher or student, the way users of unified model
//! APIs reach many models: configure base URL, key and model ids once ([`config`]), verify with
//! one request, and get errors that name the cause ([`client`]).
//!
//! - [`api`]: the wire format (`/v1/models`, `/v1/act`, `{"error": {...}}` bodies).
//! - [`config`]: `[endpoint]` in TOML, the `CLAWRL_API_KEY` override and its rules.
//! - [`proxy`]: which proxy variable routes a request (so a failure can name it).
//! - [`client`]: requests and diagnoses.
//! - [`remote`]: [`RemotePolicy`], a served policy behind `clawrl_policy::ActionSource`.
//! - `server` (feature `server`): `clawrl serve`.
pub mod api;
pub mod client;
pub mod config;
pub mod proxy;
pub mod remote;
#[cfg(feature = "server")]
pub mod server;

pub use api::ModelInfo;
pub use client::{Client, EndpointError, ErrorKind};
pub use config::{EndpointConfig, Role};
pub use remote::RemotePolicy;

/// The process environment, as [`EndpointConfig::load`] and [`Client::new`] read it.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}
