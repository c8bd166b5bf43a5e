//! The robot's deployment contract, in one place and free of MuJoCo and candle.
//!
//! Everything the simulator, the policy bundle, the on-robot runtime and the firmware tables
//! must agree on lives here, so they agree by construction:
//! - [`quadruped`]: the claw-foot robot's servos (names, order, default pose, joint limits),
//!   its onboard observation (names, units, how raw sensor values become the vector) and its
//!   action map (action -> servo target).
//! - [`description`]: a robot as one file (`robots/NAME/robot.toml`), checked against its
//!   MJCF by name.
//! - [`ObsSource`]: which observation vector a network reads.
//! - [`History`]: the stack of past observations a student reads.
//! - [`board`]: what the servo board does between the body and the runtime (IMU filter,
//!   velocity from position, slew limit, register quantisation), shared by the firmware and
//!   the simulator's board sensor path.
//!
//! Without the `std` feature only the constants remain (for the no_std firmware).
#![cfg_attr(not(feature = "std"), no_std)]

pub mod board;
pub mod quadruped;
pub mod rate;
pub mod rotation;

#[cfg(feature = "std")]
mod action;
#[cfg(feature = "std")]
pub mod description;
#[cfg(feature = "std")]
pub mod excitation;
#[cfg(feature = "std")]
mod history;
#[cfg(feature = "std")]
pub mod observation;

#[cfg(feature = "std")]
pub use action::{ActionMap, ActionMapError};
#[cfg(feature = "std")]
pub use history::History;
#[cfg(feature = "std")]
pub use observation::{ObsEntry, OnboardLayout, OnboardSensors};

/// Which observation vector a network reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "std",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum ObsSource {
    /// Exactly what the robot computer sees (IMU, joints, last action, command).
    Onboard,
    /// Onboard followed by simulation-only quantities (for teachers and critics).
    Privileged,
}
