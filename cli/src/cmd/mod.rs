//! One module per subcommand: its arguments (clap) and a `run` that calls the libraries.
pub mod bench;
pub mod compare;
pub mod distill;
pub mod endpoint;
pub mod eval;
pub mod export;
pub mod flash;
pub mod hil;
pub mod keygen;
pub mod outputs;
pub mod plot;
pub mod serve;
pub mod simulate;
pub mod slope_curve;
pub mod train;
pub mod verify;
