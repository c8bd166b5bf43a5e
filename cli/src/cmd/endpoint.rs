//! `clawrl endpoint check`: one verification request against the configured endpoint.
use std::path::PathBuf;

use anyhow::Result;

/// Work with the policy endpoint of configs/endpoint.toml.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// List the served models, confirm the configured teacher and student, run one act on each
    /// for the same states, and print status, latency, shapes and the teacher-student KL.
    Check {
        /// The endpoint config ([endpoint]: base_url, api_key, teacher_model, student_model,
        /// timeout).
        #[arg(long, default_value = clawrl_endpoint::config::DEFAULT_FILE)]
        endpoint: PathBuf,
        /// Simulated states (fresh episodes of the student's task) to act on.
        #[arg(long, default_value_t = 8)]
        states: usize,
        #[arg(long, default_value_t = 777)]
        seed: u64,
    },
}

pub fn run(a: Args) -> Result<()> {
    match a.command {
        Command::Check {
            endpoint,
            states,
            seed,
        } => {
            anyhow::ensure!(states > 0, "--states must be at least 1");
            print!(
                "{}",
                clawrl_trainer::endpoint_check::check(&endpoint, states, seed)?
            );
            Ok(())
        }
    }
}
