//! clawrl's robot-side runtime.
//!
//! Today it holds the two pieces every later part of the loop stands on: [`rate::FixedRate`],
//! a loop timer that wakes at absolute deadlines (sleep, then spin the last stretch, as
//! deployed real-time loops do) on a [`clock::Clock`] (the OS's monotonic clock, or a fake one
//! in tests), and [`guard::JointGuard`], which refuses non-finite actions and
//! clamps every servo target to its joint limits before anything is sent to the firmware.
//! The policy runner and the serial link land with the runtime issue.
pub mod clock;
pub mod guard;
pub mod rate;
