//! The `clawrl-runtime` subcommands other than install/rollback/status (those are in
//! [`crate::install`]): argument structs and handlers that return the text to print.
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::config::RuntimeConfig;
use crate::run::RunOptions;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub robot: RobotArgs,
    /// Stop (lower the robot, torque off) after this many seconds.
    #[arg(long)]
    pub seconds: Option<f64>,
}

/// What `run` and `identify` both take: the config, the bundle, overrides and the e-stop.
#[derive(clap::Args, Debug)]
pub struct RobotArgs {
    /// Runtime configuration (TOML). Default: $CLAWRL_RUNTIME_CONFIG, else
    /// /etc/clawrl/robot.toml, else configs/runtime/robot.toml (relative to the current
    /// directory), the first that exists.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Run this bundle instead of the installed one (`install.root` of the config). For
    /// `identify`, the bundle whose robot description and action map to use (its policy does
    /// not run).
    #[arg(long)]
    pub bundle: Option<PathBuf>,
    /// Override one config key, `KEY=VALUE` in TOML syntax (repeatable).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Clear a latched e-stop on the board at start-up. Without it a board in e-stop is
    /// refused: an e-stop survives a restart of this program until the operator, with the
    /// robot safe, says otherwise.
    #[arg(long)]
    pub clear_estop: bool,
}

impl RobotArgs {
    /// The config found and loaded, and the bundle's path (the installed one by default).
    fn load(&self) -> Result<(RuntimeConfig, PathBuf)> {
        let cfg = RuntimeConfig::find_and_load(self.config.as_deref(), &self.set)?;
        let bundle = match &self.bundle {
            Some(b) => b.clone(),
            None => crate::install::current_bundle(&cfg.install.root)?,
        };
        Ok((cfg, bundle))
    }
}

pub fn run(a: &RunArgs) -> Result<String> {
    let (cfg, bundle) = a.robot.load()?;
    with_signals(|stop| {
        let opts = RunOptions {
            bundle,
            duration: a.seconds.map(Duration::from_secs_f64),
            stop,
            clear_estop: a.robot.clear_estop,
            lockstep: None,
        };
        crate::run::run(&cfg, &opts)
    })
    .map(|s| summary_line(&s))
}

/// Runs `f` with SIGINT/SIGTERM setting the stop flag it is given, each signal acknowledged
/// on the terminal from a thread of its own.
fn with_signals(
    f: impl FnOnce(Arc<AtomicBool>) -> Result<crate::run::Summary>,
) -> Result<crate::run::Summary> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .context("installing signal handlers")?;
    let signals_handle = signals.handle();
    let acknowledge = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for (n, sig) in signals.forever().enumerate() {
                let name = if sig == signal_hook::consts::SIGINT {
                    "SIGINT"
                } else {
                    "SIGTERM"
                };
                if n == 0 {
                    eprintln!(
                        "clawrl-runtime: {name}: stopping (halt, fade out, lower, torque off)"
                    );
                } else {
                    eprintln!(
                        "clawrl-runtime: {name} again: the stop is already under way, the robot is being lowered; use the board's e-stop to cut the torque at once"
                    );
                }
            }
        })?;
    let result = f(stop);
    signals_handle.close();
    let _ = acknowledge.join();
    result
}

fn summary_line(s: &crate::run::Summary) -> String {
    format!(
        "{} cycles, {} missed deadlines, max lateness {:?}, final phase {}, phases {:?}, \
         {} goal entries limited, {} link drop(s), {} records dropped{}",
        s.cycles,
        s.missed_deadlines,
        s.max_lateness,
        s.final_phase
            .map_or_else(|| "none".to_string(), |p| format!("{p:?}")),
        s.phases,
        s.goals_limited,
        s.link_downs,
        s.records_dropped,
        s.log
            .as_ref()
            .map(|l| format!(", telemetry {}", l.display()))
            .unwrap_or_default()
    )
}

#[derive(Debug, clap::Args)]
pub struct IdentifyArgs {
    #[command(flatten)]
    pub robot: RobotArgs,
    /// Print what would move and for how long, and move nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `clawrl-runtime identify`: prints the plan, then plays it through the normal loop; the
/// telemetry log (`telemetry.dir` must be set) is what `clawrl sysid` reads.
pub fn identify(a: &IdentifyArgs) -> Result<String> {
    let (cfg, path) = a.robot.load()?;
    let bundle = crate::run::load_bundle(&cfg, &path)?;
    let (plan, servos, groups) = crate::identify::plan(&cfg, &bundle)?;
    let text = crate::identify::describe(&plan, &servos, &groups);
    if a.dry_run {
        return Ok(text);
    }
    if cfg.telemetry.dir.as_os_str().is_empty() {
        anyhow::bail!("identify writes its measurements to the telemetry log: set telemetry.dir");
    }
    eprint!("{text}");
    let seconds = cfg.safety.stand_s + cfg.safety.fade_s + plan.seconds();
    with_signals(|stop| {
        let opts = RunOptions {
            bundle: path,
            duration: Some(Duration::from_secs_f64(seconds)),
            stop,
            clear_estop: a.robot.clear_estop,
            lockstep: None,
        };
        crate::run::run_with(&cfg, &opts, |cfg, b| {
            crate::identify::controller(cfg, b, plan)
        })
    })
    .map(|s| summary_line(&s))
}

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// A telemetry log written by `run`.
    pub log: PathBuf,
    /// The bundle, when it is no longer where the log says (same SHA-256 required).
    #[arg(long)]
    pub bundle: Option<PathBuf>,
}

pub fn replay(a: &ReplayArgs) -> Result<String> {
    let r = crate::replay::replay(&a.log, a.bundle.as_deref())?;
    if r.mismatches > 0 {
        anyhow::bail!("{r}");
    }
    Ok(r.to_string())
}

#[derive(Debug, clap::Args)]
pub struct McapArgs {
    /// A telemetry log written by `run`.
    pub log: PathBuf,
    /// The MCAP file to write; default the log's name with `.mcap`.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn mcap(a: &McapArgs) -> Result<String> {
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| a.log.with_extension("mcap"));
    anyhow::ensure!(out != a.log, "--out {} is the log itself", out.display());
    let e = crate::mcap_log::export(&a.log, &out).map_err(|e| anyhow::anyhow!("{e}"))?;
    let topics: Vec<String> = e.messages.iter().map(|(t, n)| format!("{t} {n}")).collect();
    Ok(format!(
        "wrote {} from {} records ({}): {}",
        out.display(),
        e.records,
        e.integrity,
        topics.join(", ")
    ))
}

#[derive(Debug, clap::Args)]
pub struct CheckWiringArgs {
    /// Runtime configuration (TOML), as for `run`; its `robot.description` gives the IDs.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Override one config key, `KEY=VALUE` in TOML syntax (repeatable).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// The pose the robot is in: `rest` (lying folded, as `run` leaves it) or `stand` (held
    /// or standing in its default pose).
    #[arg(long, value_enum, default_value = "rest")]
    pub pose: crate::wiring::Pose,
}

pub fn check_wiring(a: &CheckWiringArgs) -> Result<String> {
    let cfg = RuntimeConfig::find_and_load(a.config.as_deref(), &a.set)?;
    let (table, ok) = crate::run::check_wiring(&cfg, a.pose, None)?;
    if !ok {
        // The table on stdout (where a pipe or a file wants it), the verdict as the error.
        println!("{table}");
        anyhow::bail!("the robot is not wired as {} says", describe(&cfg));
    }
    Ok(table)
}

fn describe(cfg: &RuntimeConfig) -> String {
    cfg.robot.description.as_ref().map_or_else(
        || "the shipped robot's table (no robot.description in the config)".to_string(),
        |d| d.display().to_string(),
    )
}

#[derive(Debug, clap::Args)]
pub struct SelfTestArgs {}

pub fn self_test(_: &SelfTestArgs) -> Result<String> {
    let lines = crate::selftest::run()?;
    let n = lines.len();
    Ok(format!(
        "{}\nself-test passed: {n} checks on {}",
        lines
            .iter()
            .map(|l| format!("ok: {l}"))
            .collect::<Vec<_>>()
            .join("\n"),
        std::env::consts::ARCH
    ))
}

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Time the student's forward pass (and candle's single ops, and the same network in
    /// plain Rust loops).
    #[arg(long)]
    pub inference: bool,
    /// The bundle to time; default a synthetic student of the shipped shape.
    #[arg(long)]
    pub bundle: Option<PathBuf>,
    /// Forward passes (and control cycles) to time.
    #[arg(long, default_value_t = 20_000)]
    pub iterations: usize,
    /// Time the control loop's wake-ups at each of --rates for --seconds.
    #[arg(long)]
    pub lateness: bool,
    /// Also time them with a CPU-load neighbour: one busy thread per CPU, in this process.
    #[arg(long)]
    pub neighbour: bool,
    /// Next to each, a Python sleep loop of the unitree-deploy kind at the same rate
    /// (scripts/bench/python_sleep_loop.py).
    #[arg(long)]
    pub python: bool,
    /// Time the whole control cycle (status packet in, observation, student, goals packet
    /// out) against the wire time of the recommended cycle.
    #[arg(long)]
    pub cycle: bool,
    /// Seconds per rate for --lateness and --python.
    #[arg(long, default_value_t = 60.0)]
    pub seconds: f64,
    /// Loop rates, Hz.
    #[arg(long, value_delimiter = ',', default_values_t = [50.0, 200.0, 500.0])]
    pub rates: Vec<f64>,
    /// The timer's busy-wait before each deadline, µs (configs/runtime/robot.toml's spin_us).
    #[arg(long, default_value_t = 200)]
    pub spin_us: u64,
    /// Give the timer thread SCHED_FIFO (--priority) and pin it (--cpu), as `run` does.
    #[arg(long)]
    pub realtime: bool,
    #[arg(long, default_value_t = 80)]
    pub priority: i32,
    /// CPU to pin the timer thread to with --realtime; -1 for none.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub cpu: i32,
    /// The Python interpreter for --python.
    #[arg(long, default_value = "python3")]
    pub python_bin: String,
    /// Baud rate of the wire-time limit for --cycle.
    #[arg(long, default_value_t = 1_000_000)]
    pub baud: u32,
}

pub fn bench(a: &BenchArgs) -> Result<String> {
    use crate::bench as b;
    if !(a.inference || a.lateness || a.python || a.cycle) {
        anyhow::bail!("nothing to time: pass --inference, --lateness, --python and/or --cycle");
    }
    anyhow::ensure!(
        a.seconds > 0.0 && a.seconds.is_finite(),
        "--seconds must be positive"
    );
    anyhow::ensure!(a.iterations > 0, "--iterations must be positive");
    // Each figure goes to stderr as soon as it is measured, and all of them to stdout at the
    // end: a long run that is interrupted still shows what it measured.
    let mut lines = Vec::new();
    let mut emit = |line: String| {
        eprintln!("bench: {line}");
        lines.push(line);
    };
    emit(format!("machine: {}", b::machine()));
    emit(format!("load average at start: {}", b::load_average()));
    if a.inference || a.cycle {
        let (bundle, what) = match &a.bundle {
            Some(p) => (
                clawrl_bundle::read(p, &clawrl_bundle::Trust::default())?,
                p.display().to_string(),
            ),
            None => {
                let p = std::env::temp_dir()
                    .join(format!("clawrl-bench-{}.clawrl", std::process::id()));
                crate::synthetic::write_shipped_shape(&p, 7)?;
                let b = clawrl_bundle::read(&p, &clawrl_bundle::Trust::default())?;
                std::fs::remove_file(&p).ok();
                (b, "synthetic student of the shipped shape".to_string())
            }
        };
        let student = crate::inference::Student::from_bundle(&bundle)?;
        let net = format!(
            "{} -> {:?} -> {}",
            student.obs_dim(),
            student.config().hidden,
            student.action_dim(),
        );
        if a.inference {
            let p = b::inference(&student, a.iterations)?;
            emit(format!(
                "inference ({what}, {net}, {}): {p}",
                std::env::consts::ARCH
            ));
            let hidden = student.config().hidden.first().copied().unwrap_or(64);
            for (op, p) in b::candle_ops(student.obs_dim(), hidden, a.iterations)? {
                emit(format!("candle op {op}: {p}"));
            }
            if let Some(p) = b::plain_forward(&bundle, a.iterations) {
                emit(format!(
                    "the same network in plain Rust loops (f32, no tensor library): {p}"
                ));
            }
        }
        if a.cycle {
            let wire = b::WireTime::recommended_cycle(a.baud);
            let t = b::cycle(&bundle, a.iterations)?;
            emit(format!(
                "control cycle (status packet decoded, observation, student {net}, limits, \
                 goals encoded, SYNC WRITE written; Running): {}",
                t.cycle
            ));
            emit(format!(
                "  of which the forward pass: {} ({:.0} % of the cycle's time)",
                t.forward,
                100.0 * t.forward_share
            ));
            emit(format!(
                "  wire time of the recommended cycle: {wire}; cycle p99.9 / wire time = {:.2} %",
                100.0 * t.cycle.p999.as_secs_f64() / wire.duration().as_secs_f64()
            ));
        }
    }
    if a.lateness || a.python {
        let script = b::python_script();
        let spin = Duration::from_micros(a.spin_us);
        let mut warned = false;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let loads: &[bool] = if a.neighbour {
            &[false, true]
        } else {
            &[false]
        };
        for &loaded in loads {
            let neighbour = if loaded {
                Some(b::Neighbour::start(cpus)?)
            } else {
                None
            };
            let load = match &neighbour {
                Some(n) => format!("with {} busy neighbour threads", n.threads()),
                None => "idle".to_string(),
            };
            for &hz in &a.rates {
                anyhow::ensure!(hz > 0.0 && hz.is_finite(), "rates must be positive");
                if a.lateness {
                    let (realtime, priority, cpu) = (a.realtime, a.priority, a.cpu);
                    let seconds = a.seconds;
                    // A thread of its own, so that --realtime changes only the timer's
                    // scheduling, as `run` changes only the control thread's.
                    let (warning, l) = std::thread::Builder::new()
                        .name("timer".into())
                        .spawn(move || {
                            let w = realtime
                                .then(|| crate::run::make_realtime(priority, cpu))
                                .flatten();
                            (w, b::lateness(hz, Duration::from_secs_f64(seconds), spin))
                        })?
                        .join()
                        .map_err(|_| anyhow::anyhow!("the timer thread panicked"))?;
                    let sched = match (&warning, a.realtime) {
                        (_, false) => String::new(),
                        (None, true) => format!(", SCHED_FIFO {}", a.priority),
                        (Some(_), true) => ", realtime refused".to_string(),
                    };
                    if let Some(w) = warning.filter(|_| !warned) {
                        warned = true;
                        emit(format!("warning: {w}"));
                    }
                    emit(format!(
                        "lateness {hz} Hz, {} s, Rust FixedRate (spin {} us{}), {load}: {}, missed deadlines {}",
                        a.seconds, a.spin_us, sched, l.lateness, l.missed
                    ));
                }
                if a.python {
                    let p = b::python_loop(&a.python_bin, &script, hz, a.seconds)?;
                    emit(format!(
                        "lateness {hz} Hz, {} s, Python {} time.sleep loop, {load}: {}, \
                         started a period or more late {}, behind the absolute schedule by {:.1} ms at the end",
                        a.seconds, p.python, p.lateness, p.missed, p.drift_ms
                    ));
                }
            }
            drop(neighbour);
        }
    }
    emit(format!("load average at end: {}", b::load_average()));
    Ok(lines.join("\n"))
}
