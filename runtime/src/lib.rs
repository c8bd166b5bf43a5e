//! clawrl's robot-side runtime: the only clawrl program on the robot computer.
//!
//! It loads an installed policy bundle ([`install`]), runs the student with candle
//! ([`inference`]) on observations built from the bundle's manifest ([`observation`]) inside a
//! safety state machine ([`controller`]), and talks Dynamixel 2.0 to the servo board
//! ([`link`], [`wire`]). [`run`] joins them with three threads (control, serial, telemetry);
//! [`telemetry`] logs every cycle and [`replay`] checks a log bit for bit.
//!
//! The pieces underneath: [`rate::FixedRate`], a loop timer that wakes at absolute deadlines
//! on a [`clock::Clock`] (the OS's monotonic clock, or a fake one in tests); [`config`], the
//! runtime's TOML (the robot it is, its limits, its link), validated on load.
//!
//! Around the loop: [`cmd`] (the subcommands but install, rollback and status, which live in
//! [`install`]), [`selftest`] (what a robot computer checks without a board), [`bench`] (its
//! timing figures) and [`synthetic`] (a student of the shipped shape for both, before a
//! trained bundle is there).
pub mod bench;
pub mod clock;
pub mod cmd;
pub mod command;
pub mod config;
pub mod controller;
pub mod identify;
pub mod inference;
pub mod install;
pub mod link;
pub mod lockstep;
pub mod mcap_log;
pub mod observation;
pub mod rate;
pub mod replay;
pub mod run;
pub mod selftest;
pub mod synthetic;
pub mod telemetry;
pub mod wire;
pub mod wiring;
