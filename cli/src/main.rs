//! `clawrl`: the desktop command. One file per subcommand under `cmd/`, each a thin call into
//! the trainer, sim and policy libraries.
use std::io::IsTerminal;

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Parser)]
#[command(
    name = "clawrl",
    version,
    about = "clawrl desktop trainer for the claw-foot quadruped",
    after_help = "Every --set takes SECTION.KEY=VALUE (sections: run, policy, ppo, sac, distill, task; \
                  which ones apply is said by each subcommand). Logs go to stderr; RUST_LOG sets \
                  the level, NO_COLOR turns colour off."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Train(cmd::train::Args),
    Distill(cmd::distill::Args),
    Eval(cmd::eval::Args),
    Compare(cmd::compare::Args),
    Export(cmd::export::Args),
    Verify(cmd::verify::Args),
    Keygen(cmd::keygen::Args),
    Flash(cmd::flash::Args),
    Hil(cmd::hil::Args),
    Serve(cmd::serve::Args),
    Endpoint(cmd::endpoint::Args),
    Plot(cmd::plot::Args),
    Robot(cmd::robot::Args),
    Simulate(cmd::simulate::Args),
    Bench(cmd::bench::Args),
    SlopeCurve(cmd::slope_curve::Args),
    Teleop(cmd::teleop::Args),
    /// Fit the servo model (gain, damping, armature, friction per joint group; the loop's
    /// latency) to `clawrl-runtime identify` logs; `--hil BUNDLE` makes the log in the loop
    /// against servos that differ from the model.
    Sysid(cmd::sysid::Args),
    /// Run a sweep file's trials (grid, random draws, seeds) on Ray Tune with ASHA early
    /// stopping, each trial a `clawrl train`; one table and the best trial's run file.
    Sweep(cmd::sweep::Args),
}

fn main() {
    // `clawrl ... | head -1`: once the reader has gone, the next print ends the program quietly,
    // as it does any Unix tool, instead of a panic in `println!` with a backtrace (Rust ignores
    // SIGPIPE by default). Sockets are not affected: std sends with MSG_NOSIGNAL.
    #[cfg(unix)]
    // SAFETY: the first thing in main, before any other thread exists; SIG_DFL is valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    init_logging();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Train(a) => cmd::train::run(a),
        Command::Distill(a) => cmd::distill::run(a),
        Command::Eval(a) => cmd::eval::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Keygen(a) => cmd::keygen::run(a),
        Command::Robot(a) => cmd::robot::run(a),
        Command::Flash(a) => cmd::flash::run(a),
        Command::Hil(a) => cmd::hil::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Endpoint(a) => cmd::endpoint::run(a),
        Command::Plot(a) => cmd::plot::run(a),
        Command::Simulate(a) => cmd::simulate::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::SlopeCurve(a) => cmd::slope_curve::run(a),
        Command::Teleop(a) => cmd::teleop::run(a),
        Command::Sysid(a) => cmd::sysid::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

/// Logs on stderr at `info` (or RUST_LOG), colour only on a terminal and without NO_COLOR, so
/// log files under nohup, CI or a pipe hold plain text.
fn init_logging() {
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .init();
}
