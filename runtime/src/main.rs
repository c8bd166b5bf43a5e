//! `clawrl-runtime`: the only clawrl program on the robot computer.
use clap::{Parser, Subcommand};
use clawrl_runtime::{cmd, install};

#[derive(Parser)]
#[command(
    name = "clawrl-runtime",
    version,
    about = "clawrl's robot-side runtime for the claw-foot quadruped"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify a policy bundle, copy it into the inactive slot and switch to it.
    Install(install::InstallArgs),
    /// Switch back to the previously installed bundle.
    Rollback(install::RootArgs),
    /// Show what each slot holds and which one is current.
    Status(install::RootArgs),
    /// Run the installed bundle on the robot until SIGINT/SIGTERM (or --seconds).
    Run(cmd::RunArgs),
    /// With the robot on a stand, legs free: play a safe excitation of every joint group
    /// (chirp, steps, PRBS inside the joint and speed limits) through the normal loop and log
    /// it, for `clawrl sysid`. Prints what it will move and for how long first.
    Identify(cmd::IdentifyArgs),
    /// Run a telemetry log's inputs through the policy again and compare every output.
    Replay(cmd::ReplayArgs),
    /// Write a telemetry log as MCAP (joint states, IMU, goals, command, action, phase as
    /// JSON channels), the file Foxglove and PlotJuggler open.
    Mcap(cmd::McapArgs),
    /// With the robot lying folded (as `run` leaves it; or --pose stand) and the torque off:
    /// every servo of the robot description answers at its ID and reads its angle in that
    /// pose; a reversed or swapped servo is named. Nothing moves; exit 1 when the wiring is
    /// not as described.
    CheckWiring(cmd::CheckWiringArgs),
    /// Check this computer can run a student (format, arithmetic, safety sequence); no board.
    SelfTest(cmd::SelfTestArgs),
    /// Timing figures on this computer.
    Bench(cmd::BenchArgs),
}

fn main() {
    // `clawrl-runtime status | head -1`: once the reader has gone, the next print ends the
    // program quietly, as it does any Unix tool (and `clawrl`), instead of a panic in
    // `println!` with a backtrace (Rust ignores SIGPIPE by default).
    #[cfg(unix)]
    // SAFETY: the first thing in main, before any other thread exists; SIG_DFL is valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // candle splits even a 180x64 matmul across threads unless told otherwise (45 us instead of
    // 3 us per matmul, BENCHMARKS.md); one student on a robot wants one thread.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        // SAFETY: first thing in main, before any thread exists.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", "1") };
    }
    let cli = Cli::parse();
    // Not while the robot runs: a log reader that goes away must not kill the process before
    // its stop sequence (halt, fade out, lower, torque off), as SIGPIPE's default would.
    #[cfg(unix)]
    if matches!(cli.command, Command::Run(_) | Command::Identify(_)) {
        // SAFETY: still before any other thread exists; SIG_IGN is valid.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
    }
    let result = match &cli.command {
        Command::Install(a) => install::run_install(a),
        Command::Rollback(a) => install::run_rollback(a),
        Command::Status(a) => install::run_status(a),
        Command::Run(a) => cmd::run(a),
        Command::Identify(a) => cmd::identify(a),
        Command::Replay(a) => cmd::replay(a),
        Command::Mcap(a) => cmd::mcap(a),
        Command::CheckWiring(a) => cmd::check_wiring(a),
        Command::SelfTest(a) => cmd::self_test(a),
        Command::Bench(a) => cmd::bench(a),
    };
    match result {
        Ok(text) => println!("{}", text.trim_end()),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(1);
        }
    }
}
