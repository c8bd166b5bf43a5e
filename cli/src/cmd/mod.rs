//! One module per subcommand: its arguments (clap) and a `run` that calls the libraries.
pub mod bench;
pub mod eval;
pub mod plot;
pub mod simulate;
pub mod train;
