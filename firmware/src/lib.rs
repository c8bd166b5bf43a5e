//! Claw-foot servo firmware core: `no_std`, written against embedded-hal 1.0 and embedded-io.
//!
//! - [`controller`]: the logic (safety state machine, servo channels, control tables), no I/O.
//! - [`runner`]: the loop that connects it to hardware traits.
//! - [`pwm`], [`imu`], [`hal`]: the hardware seams (embedded-hal traits and small ones of ours).
//! - `virtual_board` (feature `std`): the same core on a pseudo-terminal with a servo model.
#![cfg_attr(not(any(test, feature = "std")), no_std)]

pub mod config;
pub mod controller;
pub mod hal;
pub mod handler;
pub mod imu;
pub mod pwm;
pub mod runner;
pub mod safety;
pub mod servo;
pub mod tables;
#[cfg(feature = "std")]
pub mod virtual_board;

pub use config::{FirmwareConfig, SafeBehaviour, ServoConfig, ServoWiring, WiringError};
pub use controller::{Controller, Pulses, Sensors};
pub use runner::{Firmware, Hardware, Polled};
pub use safety::SafetyState;
