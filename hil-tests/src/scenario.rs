//! Scenarios: the runtime (its real `run`, in this process) on the bridge's port, the board
//! and the body behind it, a fault plan and events, and what came out. Each scenario's pass
//! condition lives with its test (tests/scenarios.rs); this module runs them and measures.
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clawrl_firmware::FirmwareConfig;
use clawrl_runtime::config::RuntimeConfig;
use clawrl_runtime::lockstep::Lockstep;
use clawrl_runtime::run::{RunOptions, Summary};
use clawrl_sim::quadruped::{Heading, TaskConfig};

use crate::body::{MujocoBody, Wiring};
use crate::bridge::Bridge;
use crate::faults::{Fault, FaultWindow};
use crate::line::{BoardPort, BridgeConfig, Clocking, Event, Trace};
use crate::reference::{Pose, Walk, relative_gap, simulate};
use clawrl_firmware::SafetyState;
use clawrl_runtime::controller::{Fault as RuntimeFault, Phase};

/// What a scenario does to the robot, and so what its run must show. The pass conditions key
/// on this, never on the name, so a renamed scenario keeps its checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Walk,
    Turn,
    Push,
    LinkLoss,
    NoisyLink,
    /// So noisy that the runtime must stop on its stale fault.
    NoisyLinkStops,
    Stall,
    EStop,
    BadInstall,
    /// Walking up or down a tilted floor ([`Scenario::floor`]): the slope student's task.
    Slope,
    /// Driven live over UDP ([`Scenario::teleop`]), then the stream cut: the runtime's command
    /// guard stands the robot and starts the stop sequence.
    Teleop,
}

impl Kind {
    /// The policy keeps control to the end (the others stop the robot on purpose): the
    /// walking checks apply and the run is compared with the pure simulation.
    pub fn walks(self) -> bool {
        !matches!(
            self,
            Kind::LinkLoss | Kind::EStop | Kind::NoisyLinkStops | Kind::Teleop
        )
    }

    /// How many seeds a run covers, from the first. The walk over 16: whether a student sets
    /// off from a stand can turn on a chaotic branch that differs between machines, so the bar
    /// is a count over a window, not one seed's verdict. Turning, the push and the stall over
    /// 4; the link and install faults check the safety path, not the gait: one.
    pub fn seed_count(self) -> u64 {
        match self {
            Kind::Walk => 16,
            Kind::Turn | Kind::Push | Kind::Stall | Kind::Slope => 4,
            _ => 1,
        }
    }

    /// Its gap to the pure simulation is measured over its seeds, and asserted ([`gap_checks`]).
    pub fn gap_measured(self) -> bool {
        matches!(self, Kind::Walk | Kind::Turn | Kind::Slope)
    }
}

/// One scenario. Times are seconds after the policy takes over (after stand and fade-in).
#[derive(Debug, Clone)]
pub struct Scenario {
    pub kind: Kind,
    pub name: &'static str,
    pub about: &'static str,
    /// Forward m/s, lateral m/s, yaw rad/s.
    pub command: [f64; 3],
    /// Seconds of policy control.
    pub seconds: f64,
    pub faults: Vec<FaultWindow>,
    pub events: Vec<(f64, Event)>,
    /// Install a corrupt bundle into the runtime's slots at this time.
    pub bad_install_at: Option<f64>,
    /// The floor the body stands on, over the task's (a slope scenario's); `None`: the task's.
    pub floor: Option<Floor>,
    /// A live drive: each segment's command streamed over UDP once per control period into the
    /// runtime's network source (`[command] source = "network"`), from the runtime's start
    /// (before the takeover: segment times may be negative) to the last segment's end, where
    /// the stream is cut. Empty: the fixed `command`.
    pub teleop: Vec<Segment>,
    /// The runtime listens for command datagrams on this loopback port (a person driving with
    /// `clawrl teleop`); `None`: a free port when `teleop` has segments.
    pub listen: Option<u16>,
    /// The body's servos as this file says (a servo_model.toml: a robot whose servos are not
    /// the model's); `None`: the model's.
    pub body_servos: Option<PathBuf>,
}

/// One stretch of a live drive, in seconds after the policy takes over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    pub from_s: f64,
    pub until_s: f64,
    /// Forward m/s, lateral m/s, yaw rad/s.
    pub velocity: [f64; 3],
}

impl Segment {
    /// Whether it asks the robot to move (a zero segment asks it to stand).
    pub fn moves(&self) -> bool {
        self.velocity.iter().any(|v| *v != 0.0)
    }

    /// Where its tracking is measured, in body time: from [`SETTLE_S`] after its start (the
    /// command ramps, the gait changes) to its end.
    pub fn window(&self, policy_from_s: f64) -> (f64, f64) {
        (
            policy_from_s + self.from_s + SETTLE_S,
            policy_from_s + self.until_s,
        )
    }
}

/// The command guard the teleop scenario runs with: no datagram for 0.3 s and the command
/// ramps to zero, standing 1 s more and the stop; commands change at most 1 m/s and 2 rad/s
/// per second, inside the task's ranges.
pub const TELEOP_TIMEOUT_S: f64 = 0.3;
pub const TELEOP_STOP_AFTER_S: f64 = 1.0;

/// A fixed floor: its tilt, its friction and which way the robot faces on it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Floor {
    pub degrees: f64,
    pub friction: f64,
    pub heading: Heading,
}

impl Floor {
    /// The runtime's heading hold on this floor (`control.heading_gain`): the slope task's
    /// heading command, with which the slope teacher and its student were trained. An operator
    /// walking a robot up a slope steers back when it veers; a fixed yaw rate of 0 lets it turn
    /// off the fall line (BENCHMARKS.md, "The heading drifts under a fixed command").
    pub const HEADING_GAIN: f64 = 0.5;

    /// The claws' angle while the runtime stands the robot up on this floor: shut.
    pub const STAND_GRIP: f64 = clawrl_robot::quadruped::CLAW_LIMITS[1];

    /// `task` on this floor, every episode (the rest of the seed's draws unchanged).
    pub fn apply(&self, task: &TaskConfig) -> TaskConfig {
        let mut t = task.clone();
        t.terrain.slope_probability = 1.0;
        t.terrain.slope_degrees = [self.degrees; 2];
        t.terrain.heading = self.heading;
        t.terrain.curriculum_levels = 0;
        t.randomization.friction = [self.friction; 2];
        // A settled start is the body as the runtime's stand-up leaves it, and on a slope
        // that stand shuts the claws: settled with them open, the body slid down the floor
        // for the whole settle, before the runtime had it (seed 4 of slope-up tipped over at
        // the takeover, in the loop and the pure simulation alike).
        t.randomization.settle_grip = Self::STAND_GRIP;
        t
    }
}

impl Scenario {
    /// A turn in place (no forward command): its task figure is the yaw rate, not the
    /// distance walked.
    pub fn turns_in_place(&self) -> bool {
        self.command[0] == 0.0
    }

    pub fn new(
        kind: Kind,
        name: &'static str,
        about: &'static str,
        command: [f64; 3],
        seconds: f64,
    ) -> Self {
        Self {
            kind,
            name,
            about,
            command,
            seconds,
            faults: Vec::new(),
            events: Vec::new(),
            bad_install_at: None,
            floor: None,
            teleop: Vec::new(),
            listen: None,
            body_servos: None,
        }
    }

    /// When the teleop stream is cut (s after the takeover), if the scenario drives live.
    pub fn cut_s(&self) -> Option<f64> {
        self.teleop.last().map(|s| s.until_s)
    }

    /// The task this scenario's body runs: the setup's, on the scenario's floor if it has one.
    pub fn task(&self, task: &TaskConfig) -> TaskConfig {
        match &self.floor {
            Some(f) => f.apply(task),
            None => task.clone(),
        }
    }
}

/// Every scenario, by name.
pub fn scenarios() -> Vec<Scenario> {
    let walk = [0.3, 0.0, 0.0];
    let mut v = vec![
        Scenario::new(
            Kind::Walk,
            "walk",
            "walk forward at 0.3 m/s for 10 s",
            walk,
            10.0,
        ),
        Scenario::new(
            Kind::Turn,
            "turn",
            "turn in place at 0.5 rad/s for 6 s",
            [0.0, 0.0, 0.5],
            6.0,
        ),
    ];
    let mut push = Scenario::new(
        Kind::Push,
        "push",
        "walk, shoved sideways at 0.5 m/s after 3 s",
        walk,
        6.0,
    );
    push.events.push((3.0, Event::Push([0.0, 0.5])));
    v.push(push);
    let mut loss = Scenario::new(
        Kind::LinkLoss,
        "link-loss",
        "the cable pulled after 3 s of walking: the board's watchdog acts",
        walk,
        5.0,
    );
    loss.faults.push(FaultWindow::new(Fault::Unplug, 3.0, 1e9));
    v.push(loss);
    let mut noisy = Scenario::new(
        Kind::NoisyLink,
        "noisy-link",
        "0.1 % of bytes corrupted and 1 % of packets lost, both ways, for 8 s of walking",
        walk,
        8.0,
    );
    noisy
        .faults
        .push(FaultWindow::new(Fault::Garbage { p: 0.001 }, 0.0, 1e9));
    noisy
        .faults
        .push(FaultWindow::new(Fault::Drop { p: 0.01 }, 0.0, 1e9));
    v.push(noisy.clone());
    // At 1 % of bytes a 219-byte robot-state answer arrives intact 0.99^219 = 11 % of the
    // time: the runtime must stop safely (stale fault), not keep walking.
    let mut noisier = Scenario::new(
        Kind::NoisyLinkStops,
        "noisy-link-1pct",
        "1 % of bytes corrupted and 1 % of packets lost: the runtime stops safely",
        walk,
        8.0,
    );
    noisier.faults = noisy.faults.clone();
    noisier.faults[0].fault = Fault::Garbage { p: 0.01 };
    v.push(noisier);
    let mut stall = Scenario::new(
        Kind::Stall,
        "stall",
        "the link stalls for 50 ms after 3 s",
        walk,
        6.0,
    );
    stall.faults.push(FaultWindow::new(Fault::Stall, 3.0, 3.05));
    v.push(stall);
    let mut estop = Scenario::new(
        Kind::EStop,
        "estop",
        "the board's e-stop pressed after 3 s",
        walk,
        5.0,
    );
    estop.events.push((3.0, Event::EStop));
    v.push(estop);
    let mut install = Scenario::new(
        Kind::BadInstall,
        "bad-install",
        "a corrupt bundle installed after 2 s: refused, the running one carries on",
        walk,
        5.0,
    );
    install.bad_install_at = Some(2.0);
    v.push(install);
    v
}

/// Driven live (issue 42): not in [`scenarios`], as the claw-foot student does not walk
/// backwards or sideways from a stand in the loop (BENCHMARKS.md, "The teleop scenario");
/// pup12's does. Run by name.
pub fn driven_scenarios() -> Vec<Scenario> {
    vec![teleop()]
}

/// A person drives (`clawrl hil --teleop PORT`): the runtime listens on `port` for `seconds` of
/// policy control, no script; start `clawrl teleop --to 127.0.0.1:PORT` first, as the guard
/// stops a robot that hears nothing.
pub fn live_drive(port: u16, seconds: f64) -> Scenario {
    let mut s = Scenario::new(
        Kind::Teleop,
        "drive",
        "driven by a person over UDP (clawrl teleop)",
        [0.0; 3],
        seconds,
    );
    s.listen = Some(port);
    s
}

/// Issue 42's scripted drive: forward, a turn in place, a stand, backwards, sideways, then the
/// stream cut (zero from the runtime's start until the takeover, as an operator's stream is).
fn teleop() -> Scenario {
    let mut s = Scenario::new(
        Kind::Teleop,
        "teleop",
        "driven over UDP: 0.3 m/s, turn 0.5 rad/s, stand, -0.2 m/s, 0.15 m/s sideways, then the stream cut",
        [0.0; 3],
        23.0,
    );
    let script = [
        (-100.0, 0.0, [0.0; 3]),
        (0.0, 4.0, [0.3, 0.0, 0.0]),
        (4.0, 8.0, [0.0, 0.0, 0.5]),
        (8.0, 11.0, [0.0; 3]),
        (11.0, 15.0, [-0.2, 0.0, 0.0]),
        (15.0, 19.0, [0.0, 0.15, 0.0]),
    ];
    s.teleop = (script.iter())
        .map(|&(from_s, until_s, velocity)| Segment {
            from_s,
            until_s,
            velocity,
        })
        .collect();
    s
}

/// The teleop stream as bridge events: one datagram per control period while a segment lasts,
/// sequence numbers rising.
fn teleop_events(
    s: &Scenario,
    to: SocketAddr,
    policy_from_s: f64,
    period_s: f64,
) -> Vec<(f64, Event)> {
    let Some(cut) = s.cut_s() else {
        return Vec::new();
    };
    let mut events = Vec::new();
    let mut k = 0u32;
    loop {
        let t = f64::from(k) * period_s;
        let rel = t - policy_from_s;
        if rel >= cut {
            return events;
        }
        if let Some(seg) = s.teleop.iter().find(|g| g.from_s <= rel && rel < g.until_s) {
            let velocity = seg.velocity;
            events.push((
                t,
                Event::Command {
                    to,
                    seq: k + 1,
                    velocity,
                },
            ));
        }
        k += 1;
    }
}

/// The slope student's scenarios (issue 31): walking at 0.3 m/s up and down a 20 degree floor
/// at friction 0.4, the slipperiest the task draws, where open claws slide. Not in
/// [`scenarios`]: the flat student is not made for them; run them by name with a slope
/// student's bundle.
pub fn slope_scenarios() -> Vec<Scenario> {
    let walk = |name, about, heading| {
        let mut s = Scenario::new(Kind::Slope, name, about, [0.3, 0.0, 0.0], 8.0);
        s.floor = Some(Floor {
            degrees: 20.0,
            friction: 0.4,
            heading,
        });
        s
    };
    vec![
        walk(
            "slope-up",
            "climb a 20 degree floor at friction 0.4, 0.3 m/s for 8 s",
            Heading::Uphill,
        ),
        walk(
            "slope-down",
            "walk down a 20 degree floor at friction 0.4, 0.3 m/s for 8 s",
            Heading::Downhill,
        ),
    ]
}

pub fn by_name(name: &str) -> Result<Scenario> {
    let all: Vec<Scenario> = (scenarios().into_iter())
        .chain(slope_scenarios())
        .chain(driven_scenarios())
        .collect();
    match all.iter().find(|s| s.name == name) {
        Some(s) => Ok(s.clone()),
        None => bail!(
            "no scenario {name:?}; there are: {}",
            all.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// What a scenario runs with.
#[derive(Debug, Clone)]
pub struct Setup {
    pub bundle: PathBuf,
    pub seed: u64,
    pub clocking: Clocking,
    pub task: TaskConfig,
    /// The runtime's config file (its HIL keys are overridden).
    pub runtime_config: PathBuf,
    /// Scratch directory (port link, install slots, telemetry).
    pub dir: PathBuf,
    /// A real board in HIL mode on this serial port instead of the virtual board (real time
    /// only, see [`crate::real_board`]).
    pub board: Option<BoardPort>,
    /// The body wired other than its description says (empty: as described).
    pub miswiring: Vec<Miswiring>,
}

impl Setup {
    /// The usual set-up of a test or a user's run: `bundle` on the runtime config
    /// `runtime_config`, the shipped flat task, seed 1, lockstep with the virtual board, the
    /// body wired as described, scratch files in `dir`. Change a field with `..`.
    pub fn lockstep(bundle: PathBuf, runtime_config: PathBuf, dir: &Path) -> Result<Self> {
        Ok(Self {
            bundle,
            seed: 1,
            clocking: Clocking::Lockstep,
            task: TaskConfig::flat()?,
            runtime_config,
            dir: dir.to_path_buf(),
            board: None,
            miswiring: Vec::new(),
        })
    }
}

/// A robot wired other than its description says: what a wiring check must name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miswiring {
    /// The servos of two joints (servo order) on each other's outputs.
    Swapped(usize, usize),
    /// A joint's servo mounted turning the other way.
    Reversed(usize),
}

/// The board's table and the body's true wiring for the robot `cfg` drives: from the robot
/// description its `robot.description` names (IDs, channels, directions and offsets), or
/// the shipped board's table without one; `miswiring` applied to the body only.
pub fn wiring(cfg: &RuntimeConfig, miswiring: &[Miswiring]) -> Result<(FirmwareConfig, Wiring)> {
    let names = cfg.servo_names();
    let (firmware, described) = match &cfg.robot.description {
        Some(path) => {
            let robot = clawrl_sim::description::load(path)?;
            let firmware = FirmwareConfig::from_description(&robot.description)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let wiring = Wiring::described(&robot.description, &names)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            (firmware, wiring)
        }
        None => {
            let firmware = FirmwareConfig::claw_foot();
            let wiring = Wiring::of_board(&firmware);
            (firmware, wiring)
        }
    };
    let body = miswiring.iter().fold(described, |w, m| match *m {
        Miswiring::Swapped(a, b) => w.swapped(a, b),
        Miswiring::Reversed(j) => w.reversed(j),
    });
    Ok((firmware, body))
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub scenario: Scenario,
    /// The body's episode seed (the pure simulation's too).
    pub seed: u64,
    pub summary: Summary,
    pub trace: Trace,
    /// Simulated time the policy took over, s.
    pub policy_from_s: f64,
    pub wall: Duration,
    /// What the mid-run install said (it must refuse).
    pub install: Option<Result<String, String>>,
    /// Which bundle the slots pointed at after the run, and the one installed before it.
    pub current_bundle: Option<PathBuf>,
    pub bundle_installed: PathBuf,
}

/// The runtime config for the bridge's port, with `clock` and the command; a teleop scenario's
/// runtime listens for command datagrams on `command_port` (the config's own `[command]`
/// section, written here: an override cannot add a section the file lacks).
pub(crate) fn runtime_config(
    setup: &Setup,
    port: &Path,
    s: &Scenario,
    command_port: Option<u16>,
) -> Result<RuntimeConfig> {
    let command = s.command;
    let clock = match setup.clocking {
        Clocking::Lockstep => "lockstep",
        Clocking::RealTime => "wall",
    };
    // In lockstep the answer timeout is not used: the runtime gives an answer up when the
    // shared counters say the line is quiet (clawrl_runtime::lockstep), so a loaded machine
    // only makes a run slower. Real time keeps the robot's 20 ms.
    let answer_timeout_ms = match setup.clocking {
        Clocking::Lockstep => 50,
        Clocking::RealTime => 20,
    };
    let mut sets = vec![
        format!("serial.port={:?}", port.display().to_string()),
        format!("serial.answer_timeout_ms={answer_timeout_ms}"),
        "serial.reconnect_ms=50".into(),
        "control.realtime_priority=0".into(),
        // The report says what a status line would, once per scenario.
        "control.status_every_s=0".into(),
        "control.cpu=-1".into(),
        format!("control.clock={clock:?}"),
        format!(
            "control.command=[{}, {}, {}]",
            command[0], command[1], command[2]
        ),
        format!(
            "install.root={:?}",
            setup.dir.join("slots").display().to_string()
        ),
        format!(
            "telemetry.dir={:?}",
            setup.dir.join("telemetry").display().to_string()
        ),
    ];
    // On a slope the runtime stands with its claws shut: open, the body slides down a 20
    // degree floor at friction 0.4 during the 2 s stand-up, up to a metre before the policy
    // has it (BENCHMARKS.md, "The slope student in the loop").
    if s.floor.is_some() {
        sets.push(format!("safety.stand_grip={}", Floor::STAND_GRIP));
        sets.push(format!("control.heading_gain={}", Floor::HEADING_GAIN));
    }
    let mut cfg = RuntimeConfig::load(&setup.runtime_config, &sets)?;
    if let Some(p) = command_port {
        let section = serde_json::json!({
            "source": "network",
            "listen": format!("127.0.0.1:{p}"),
            "timeout_s": TELEOP_TIMEOUT_S,
            "stop_after_s": TELEOP_STOP_AFTER_S,
            "max_rate": [1.0, 1.0, 2.0],
            "ranges": [[-0.2, 0.4], [-0.2, 0.2], [-0.8, 0.8]],
        });
        let section: clawrl_runtime::config::CommandSection = serde_json::from_value(section)?;
        section
            .validate()
            .map_err(|e| anyhow::anyhow!("[command]: {e:?}"))?;
        cfg.command = Some(section);
    }
    Ok(cfg)
}

/// A free UDP port on loopback for a teleop scenario's runtime to listen on.
fn free_udp_port() -> Result<u16> {
    Ok(std::net::UdpSocket::bind(("127.0.0.1", 0))?
        .local_addr()?
        .port())
}

/// Installs `bundle` into the config's slots, checked against the config's robot as
/// `clawrl-runtime install` checks it, and returns the path the runtime will run.
pub(crate) fn install(cfg: &RuntimeConfig, bundle: &Path) -> Result<PathBuf> {
    let root = &cfg.install.root;
    let trust = clawrl_bundle::Trust::default();
    clawrl_runtime::install::install(root, bundle, &trust, &cfg.robot_spec())?;
    Ok(clawrl_runtime::install::current_bundle(root)?)
}

/// A copy of `bundle` with one byte flipped in the middle.
fn corrupt_copy(bundle: &Path, dir: &Path) -> Result<PathBuf> {
    let mut bytes = std::fs::read(bundle)?;
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5A;
    let path = dir.join("corrupt.clawrl");
    std::fs::write(&path, bytes)?;
    Ok(path)
}

/// Runs one scenario end to end.
pub fn run(s: &Scenario, setup: &Setup) -> Result<Outcome> {
    std::fs::create_dir_all(&setup.dir)?;
    // The runtime reads paths relative to its config file: hand it absolute ones.
    let setup = &Setup {
        dir: std::fs::canonicalize(&setup.dir)?,
        ..setup.clone()
    };
    // Before anything moves: a bundle that is unreadable or for another robot stops here.
    let b = clawrl_bundle::read(&setup.bundle, &clawrl_bundle::Trust::default())
        .with_context(|| format!("bundle {}", setup.bundle.display()))?;
    let command_port = match s.listen {
        Some(p) => Some(p),
        None if !s.teleop.is_empty() => Some(free_udp_port()?),
        None => None,
    };
    let probe = runtime_config(setup, &setup.dir.join("board.tty"), s, command_port)?;
    let (firmware, body_wiring) = wiring(&probe, &setup.miswiring)?;
    let believed = Wiring::of_board(&firmware);
    clawrl_runtime::install::check_bundle(&b, &probe.robot_spec())?;
    let policy_from_s = probe.safety.stand_s + probe.safety.fade_s;
    let shift = |w: &FaultWindow| FaultWindow {
        from_s: w.from_s + policy_from_s,
        until_s: w.until_s + policy_from_s,
        ..w.clone()
    };
    let lockstep = Arc::new(Lockstep::new());
    let mut events: Vec<(f64, Event)> = (s.events.iter())
        .map(|(t, e)| (t + policy_from_s, e.clone()))
        .collect();
    if let Some(p) = command_port {
        let to = SocketAddr::from(([127, 0, 0, 1], p));
        let period_s = 1.0 / probe.control.rate_hz;
        events.extend(teleop_events(s, to, policy_from_s, period_s));
    }
    let bridge_cfg = BridgeConfig {
        clocking: setup.clocking,
        period_us: (1e6 / probe.control.rate_hz).round() as u64,
        faults: s.faults.iter().map(shift).collect(),
        fault_seed: setup.seed,
        events,
        lockstep: lockstep.clone(),
    };
    let (task, seed) = (s.task(&setup.task), setup.seed);
    let servos = s.body_servos.clone();
    let body = move || {
        let body = MujocoBody::new(&task, seed, body_wiring, believed)?;
        Ok(match &servos {
            Some(path) => body.with_servos(path)?,
            None => body,
        })
    };
    let bridge = match &setup.board {
        None => Bridge::spawn(&setup.dir, firmware, body, bridge_cfg)?,
        Some(b) => {
            if setup.clocking != Clocking::RealTime {
                anyhow::bail!("a real board keeps its own clock: it runs in real time only");
            }
            Bridge::spawn_real(&setup.dir, b, body, bridge_cfg)?
        }
    };
    let cfg = runtime_config(setup, bridge.port(), s, command_port)?;
    let bundle = install(&cfg, &setup.bundle).context("installing the bundle")?;
    let opts = RunOptions {
        bundle: bundle.clone(),
        duration: Some(Duration::from_secs_f64(policy_from_s + s.seconds)),
        stop: Arc::new(AtomicBool::new(false)),
        // A board a scenario left in e-stop stops the next one with the e-stop's message:
        // the harness never clears an e-stop on its own.
        clear_estop: false,
        lockstep: Some(lockstep),
    };
    let start = Instant::now();
    let runtime_cfg = cfg.clone();
    let runtime = std::thread::Builder::new()
        .name("runtime".into())
        .spawn(move || clawrl_runtime::run::run(&runtime_cfg, &opts))?;
    let install = match s.bad_install_at {
        Some(at) => Some(install_during_run(
            &cfg,
            setup,
            &bridge,
            policy_from_s + at,
        )?),
        None => None,
    };
    let summary = runtime
        .join()
        .map_err(|_| anyhow::anyhow!("the runtime panicked"))?
        .with_context(|| format!("scenario {}: the runtime stopped with an error", s.name))?;
    let wall = start.elapsed();
    let trace = bridge.finish()?;
    Ok(Outcome {
        scenario: s.clone(),
        seed: setup.seed,
        summary,
        trace,
        policy_from_s,
        wall,
        install,
        current_bundle: clawrl_runtime::install::current_bundle(&cfg.install.root).ok(),
        bundle_installed: bundle,
    })
}

/// `clawrl-runtime check-wiring --pose stand` against the body as a scenario starts it
/// (scenario `s`'s episode for `setup.seed`: standing near its default pose), wired as
/// `setup.miswiring` says, behind the virtual board (lockstep). Returns the check's table and
/// whether every servo fits.
pub fn check_wiring(s: &Scenario, setup: &Setup) -> Result<(String, bool)> {
    std::fs::create_dir_all(&setup.dir)?;
    let setup = &Setup {
        dir: std::fs::canonicalize(&setup.dir)?,
        ..setup.clone()
    };
    let probe = runtime_config(setup, &setup.dir.join("board.tty"), s, None)?;
    let (firmware, body_wiring) = wiring(&probe, &setup.miswiring)?;
    let believed = Wiring::of_board(&firmware);
    let lockstep = Arc::new(Lockstep::new());
    let bridge_cfg = BridgeConfig {
        clocking: Clocking::Lockstep,
        period_us: (1e6 / probe.control.rate_hz).round() as u64,
        faults: Vec::new(),
        fault_seed: setup.seed,
        events: Vec::new(),
        lockstep: lockstep.clone(),
    };
    let (task, seed) = (s.task(&setup.task), setup.seed);
    let body = move || Ok(MujocoBody::new(&task, seed, body_wiring, believed)?);
    let bridge = Bridge::spawn(&setup.dir, firmware, body, bridge_cfg)?;
    let cfg = runtime_config(setup, bridge.port(), s, None)?;
    let pose = clawrl_runtime::wiring::Pose::Stand;
    let checked = clawrl_runtime::run::check_wiring(&cfg, pose, Some(lockstep));
    bridge.finish()?;
    checked
}

/// Waits until the body's time reaches `at`, then installs a corrupt copy of the bundle into
/// the running runtime's slots.
fn install_during_run(
    cfg: &RuntimeConfig,
    setup: &Setup,
    bridge: &Bridge,
    at: f64,
) -> Result<Result<String, String>> {
    let bad = corrupt_copy(&setup.bundle, &setup.dir)?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while (bridge.now_us() as f64) < at * 1e6 {
        if Instant::now() > deadline {
            bail!("the body never reached {at} s");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(install(cfg, &bad)
        .map(|p| p.display().to_string())
        .map_err(|e| format!("{e:#}")))
}

/// One condition and how the run did against it.
#[derive(Debug, Clone)]
pub struct Check {
    pub what: String,
    /// Whether the condition held.
    pub held: bool,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.held
    }
}

/// Whether every check held.
pub fn verdict(checks: &[Check]) -> bool {
    checks.iter().all(Check::passed)
}

fn check(what: impl Into<String>, held: bool) -> Check {
    Check {
        what: what.into(),
        held,
    }
}

/// The walking figures of a run's policy stretch (its first second, the hand-over, left out),
/// and those of the same bundle and seed in the pure simulation.
#[derive(Debug, Clone, Copy)]
pub struct Comparison {
    pub hil: Walk,
    pub sim: Walk,
}

impl Comparison {
    pub fn distance_gap(&self) -> f64 {
        relative_gap(self.hil.distance, self.sim.distance)
    }

    pub fn velocity_error_gap(&self) -> f64 {
        relative_gap(self.hil.velocity_error, self.sim.velocity_error)
    }
}

/// The pure simulation of a scenario: its bundle, seed, command and pushes under the
/// runtime's own controller, without board or wire (see `reference`). Times as the HIL run's:
/// the policy takes over at `policy_from_s`.
pub fn reference(s: &Scenario, setup: &Setup) -> Result<(Vec<Pose>, f64)> {
    let bundle = clawrl_bundle::read(&setup.bundle, &clawrl_bundle::Trust::default())?;
    let cfg = runtime_config(setup, &setup.dir.join("board.tty"), s, None)?;
    let policy_from_s = cfg.safety.stand_s + cfg.safety.fade_s;
    let events: Vec<(f64, Event)> = s
        .events
        .iter()
        .map(|(t, e)| (t + policy_from_s, e.clone()))
        .collect();
    let poses = simulate(
        &bundle,
        &s.task(&setup.task),
        setup.seed,
        &cfg,
        policy_from_s + s.seconds,
        &events,
        &[],
    )?;
    Ok((poses, policy_from_s))
}

/// A driven run's operator inputs per cycle, from its telemetry log.
fn logged_operator(log: &Path) -> Result<Vec<crate::reference::OperatorInput>> {
    let mut r = clawrl_runtime::telemetry::LogReader::open(log).map_err(anyhow::Error::msg)?;
    let mut v = Vec::new();
    while let Some(rec) = r.next_record().map_err(anyhow::Error::msg)? {
        v.push((rec.input.stop, rec.input.command));
    }
    Ok(v)
}

/// A moving segment's mean tracking error over its window (from [`SETTLE_S`] after its start):
/// planar speed error (m/s) where it commands a velocity, yaw rate error (rad/s) where it only
/// turns.
fn segment_error(g: &Segment, poses: &[Pose], policy_from_s: f64) -> f64 {
    let (from, until) = g.window(policy_from_s);
    let c = g.velocity;
    let errors: Vec<f64> = (poses.iter())
        .filter(|p| p.t >= from && p.t <= until)
        .map(|p| {
            if c[0] != 0.0 || c[1] != 0.0 {
                (p.base_lin_vel[0] - c[0]).hypot(p.base_lin_vel[1] - c[1])
            } else {
                (p.yaw_rate - c[2]).abs()
            }
        })
        .collect();
    errors.iter().sum::<f64>() / errors.len().max(1) as f64
}

/// The teleop run against the pure simulation of the same drive (the runtime's controller on
/// the simulator, fed the commands and the stop the run's log recorded): each moving segment's
/// tracking error in the loop within the walk's allowance of the simulation's
/// ([`TRACKING_ALLOWANCE`] or [`TRACKING_GAP`] of it, whichever is larger).
pub fn teleop_gap_checks(o: &Outcome, setup: &Setup) -> Result<Vec<Check>> {
    let s = &o.scenario;
    let log = o
        .summary
        .log
        .as_ref()
        .context("the driven run wrote no log")?;
    let operator = logged_operator(log)?;
    let bundle = clawrl_bundle::read(&setup.bundle, &clawrl_bundle::Trust::default())?;
    let cfg = runtime_config(setup, &setup.dir.join("board.tty"), s, None)?;
    let until = o.policy_from_s + s.seconds;
    let task = s.task(&setup.task);
    let sim = simulate(&bundle, &task, setup.seed, &cfg, until, &[], &operator)?;
    let hil: Vec<Pose> = o.trace.samples.iter().map(Pose::from).collect();
    let mut v = Vec::new();
    for g in s.teleop.iter().filter(|g| g.moves() && g.until_s > 0.0) {
        let (h, m) = (
            segment_error(g, &hil, o.policy_from_s),
            segment_error(g, &sim, o.policy_from_s),
        );
        let allowed = m + TRACKING_ALLOWANCE.max(TRACKING_GAP * m);
        v.push(check(
            format!(
                "{:.0}-{:.0} s against the pure simulation of the same drive: tracking error {h:.3} in the loop, {m:.3} in the simulation (at most {allowed:.3})",
                g.from_s, g.until_s
            ),
            h <= allowed,
        ));
    }
    Ok(v)
}

/// Compares a run with the pure simulation of its scenario.
pub fn compare(o: &Outcome, setup: &Setup) -> Result<Comparison> {
    let s = &o.scenario;
    let hil_poses: Vec<Pose> = o.trace.samples.iter().map(Pose::from).collect();
    let hil = policy_stretch(s, &hil_poses, o.policy_from_s)
        .context("the HIL run has no samples of the policy's stretch")?;
    Ok(Comparison {
        hil,
        sim: reference_walk(s, setup)?,
    })
}

/// The pure simulation's walking figures over the scenario's policy stretch.
pub fn reference_walk(s: &Scenario, setup: &Setup) -> Result<Walk> {
    let (poses, from) = reference(s, setup)?;
    policy_stretch(s, &poses, from).context("the simulation has no samples of the policy's stretch")
}

/// The walking figures of the policy's stretch, its first second (the hand-over) left out.
fn policy_stretch(s: &Scenario, poses: &[Pose], policy_from_s: f64) -> Option<Walk> {
    Walk::of(poses, policy_from_s + 1.0, s.seconds - 1.0, s.command)
}

/// How much worse the loop may track the command than the pure simulation, where both set
/// off (over seeds, see [`gap_checks`]): the mean velocity error in the loop at most this many
/// m/s above the simulation's, or [`TRACKING_GAP`] of it, whichever is larger (issue 29: a
/// relative gap between two small errors says little). One-sided: the loop tracking better is
/// no failure.
pub const TRACKING_ALLOWANCE: f64 = 0.02;
pub const TRACKING_GAP: f64 = 0.1;
/// The mean task figure where both set off, distance walked or yaw rate turning in place, in
/// the loop within this share of the pure simulation's, either way (issue 29). Measurable
/// since the reference runs in the conditions the student trained in, the episode's latency
/// and sensor noise ([`crate::reference::simulate`]): without them it walked 10 % slower than
/// the loop and stood on 2 of the turn's 4 seeds (BENCHMARKS.md, "The reference's conditions").
pub const DISTANCE_GAP: f64 = 0.1;
pub const TURN_GAP: f64 = 0.2;
/// The loop may set off on this many seeds fewer than the pure simulation: from a standing
/// start the student sits close to a standing fixed point, so whether it sets off turns on
/// small differences, in the loop as between seeds. Setting off on more seeds than the pure
/// simulation is not a gap that fails: the board must not keep the student from walking.
pub const SET_OFF_SLACK: usize = 1;
/// Turning in place, the loop's mean yaw rate over the seeds must reach this share of the
/// command (issue 29: 0.4 rad/s at 0.5). A mean over the window, as the walk's bars: one
/// seed's rate turns on small differences between machines.
pub const TURN_SHARE: f64 = 0.8;

/// Whether a run did the scenario's task at all: at least 30 % of the commanded forward speed
/// (or yaw rate, for a turn in place).
pub fn set_off(s: &Scenario, w: &Walk) -> bool {
    if s.turns_in_place() {
        w.yaw_rate / s.command[2] >= 0.3
    } else {
        w.velocity[0] / s.command[0] >= 0.3
    }
}

/// The mean of `f` over comparisons (NaN over none).
pub fn mean_of<'a>(
    cmps: impl IntoIterator<Item = &'a Comparison>,
    f: impl Fn(&Comparison) -> f64,
) -> f64 {
    let (sum, n) = cmps
        .into_iter()
        .fold((0.0, 0usize), |(sum, n), c| (sum + f(c), n + 1));
    sum / n as f64
}

/// The figure a scenario's gap is measured on: distance walked, or yaw rate for a turn, with
/// its bar ([`DISTANCE_GAP`], [`TURN_GAP`]).
pub fn task_gap_bar(s: &Scenario) -> f64 {
    if s.turns_in_place() {
        TURN_GAP
    } else {
        DISTANCE_GAP
    }
}

/// The figure a scenario's gap is measured on: distance walked, or yaw rate for a turn.
pub fn task_figure(s: &Scenario, w: &Walk) -> f64 {
    if s.turns_in_place() {
        w.yaw_rate
    } else {
        w.distance
    }
}

/// The checks of a walking scenario over its seeds. The loop's own bars first:
/// [0] it did the task on every seed ([`set_off`]: walked or turned at 30 % of the command at
/// least); for a turn in place, its mean yaw rate reached [`TURN_SHARE`] of the command. Then
/// the sim-to-HIL gap: the robot sets off on about as many seeds in the loop as in the pure
/// simulation ([`SET_OFF_SLACK`]); where both set off, the mean velocity error in the loop is
/// within [`TRACKING_ALLOWANCE`] of the simulation's, and the mean task figure within
/// [`task_gap_bar`] of it. Before the runtime's fade-in was cut to 0.1 s, the fixture set off
/// on 11-14 of 16 and turned on 1-3 of 4 (BENCHMARKS.md, "The fade-in").
pub fn gap_checks(s: &Scenario, cmps: &[Comparison]) -> Vec<Check> {
    let n = cmps.len();
    let did = cmps.iter().filter(|c| set_off(s, &c.hil)).count();
    let task = if s.turns_in_place() {
        "turned"
    } else {
        "set off"
    };
    let mut v = vec![check(
        format!("the loop {task} on {did} of {n} seeds (all)"),
        n > 0 && did == n,
    )];
    if s.turns_in_place() && n > 0 {
        let mean = mean_of(cmps, |c| c.hil.yaw_rate);
        let bar = TURN_SHARE * s.command[2];
        v.push(check(
            format!("the loop's mean yaw rate over the seeds {mean:.3} rad/s (at least {bar:.2})"),
            mean >= bar,
        ));
    }
    v.extend(measured_gap(s, cmps));
    v
}

fn measured_gap(s: &Scenario, cmps: &[Comparison]) -> Vec<Check> {
    let n = cmps.len();
    let hil = cmps.iter().filter(|c| set_off(s, &c.hil)).count();
    let sim = cmps.iter().filter(|c| set_off(s, &c.sim)).count();
    let both: Vec<&Comparison> = cmps
        .iter()
        .filter(|c| set_off(s, &c.hil) && set_off(s, &c.sim))
        .collect();
    let mut v = vec![check(
        format!(
            "set off on {hil} of {n} seeds in the loop and {sim} in the pure simulation (the loop at most {SET_OFF_SLACK} fewer)"
        ),
        hil + SET_OFF_SLACK >= sim,
    )];
    if both.is_empty() {
        v.push(check(
            "no seed on which both set off: the gap is not measured",
            false,
        ));
        return v;
    }
    let mean = |f: &dyn Fn(&Comparison) -> f64| mean_of(both.iter().copied(), f);
    let (h, m) = (
        mean(&|c| task_figure(s, &c.hil)),
        mean(&|c| task_figure(s, &c.sim)),
    );
    let gap = relative_gap(h, m);
    let (he, me) = (
        mean(&|c| c.hil.velocity_error),
        mean(&|c| c.sim.velocity_error),
    );
    let what = if s.turns_in_place() {
        "yaw rate (rad/s)"
    } else {
        "distance (m)"
    };
    let allowed = me + TRACKING_ALLOWANCE.max(TRACKING_GAP * me);
    let bar = task_gap_bar(s);
    v.push(check(
        format!(
            "on the {} seed(s) where both set off: velocity error {he:.3} m/s in the loop, {me:.3} in the pure simulation (at most {allowed:.3})",
            both.len(),
        ),
        he <= allowed,
    ));
    v.push(check(
        format!(
            "mean {what} {h:.3} in the loop, {m:.3} in the pure simulation: gap {:.1} % (under {:.0} %)",
            gap * 100.0,
            bar * 100.0,
        ),
        gap < bar,
    ));
    v
}

/// The seeds a scenario runs on: `first` and the ones after it ([`Kind::seed_count`]).
pub fn seeds(kind: Kind, first: u64) -> Vec<u64> {
    (first..first + kind.seed_count()).collect()
}

/// Runs a walking scenario on each of `seeds` (scratch folders `seed-N` under the setup's)
/// and returns each run's outcome, comparison and own checks.
pub fn run_over_seeds(
    s: &Scenario,
    setup: &Setup,
    seeds: &[u64],
) -> Result<Vec<(Outcome, Comparison, Vec<Check>)>> {
    seeds
        .iter()
        .map(|&seed| {
            let one = Setup {
                seed,
                dir: setup.dir.join(format!("seed-{seed}")),
                ..setup.clone()
            };
            let (o, cmp, checks) = run_and_check(s, &one)?;
            let cmp = cmp.context("a walking scenario has a comparison")?;
            Ok((o, cmp, checks))
        })
        .collect()
}

/// Every pass condition of the run's scenario.
pub fn checks(o: &Outcome) -> Vec<Check> {
    let t = &o.trace;
    let s = &o.scenario;
    let phases = &o.summary.phases;
    let policy_end = o.policy_from_s + s.seconds;
    let fell = t
        .samples
        .iter()
        .any(|p| p.fallen && p.t >= o.policy_from_s && p.t <= policy_end);
    let mut v = vec![
        check(
            format!(
                "no servo output outside its joint limits ({} of {} checked)",
                t.out_of_limit, t.outputs_checked
            ),
            t.out_of_limit == 0 && t.outputs_checked > 0,
        ),
        check(
            format!(
                "the runtime ended switched off ({:?})",
                o.summary.final_phase
            ),
            o.summary.final_phase == Some(Phase::Off),
        ),
    ];
    if s.kind.walks() {
        v.push(check(
            "the policy took over (Running)",
            phases.contains(&Phase::Running),
        ));
        // A stall too (4 seeds, 50 ms frozen mid-walk): the student of 2026-12-06 did not
        // fall in 6 runs of 4 seeds (BENCHMARKS.md, "The reference's conditions").
        let mut push = |what: String, ok: bool| v.push(check(what, ok));
        push("the robot did not fall".into(), !fell);
        // While the policy ran, then the stop: the runtime halts the gait (zero command),
        // fades back to the default pose and only then lowers, so the stop must end with no
        // fault either (lowering straight out of a walk used to tip past the tilt limit).
        let halting = phases.iter().position(|p| *p == Phase::Halting);
        let (running, stop) = phases.split_at(halting.unwrap_or(phases.len()));
        let faulted = |ps: &[Phase]| {
            ps.iter()
                .any(|p| matches!(p, Phase::Fault(_) | Phase::EStop))
        };
        push(
            format!("no runtime fault while the policy ran ({running:?})"),
            !faulted(running),
        );
        push(
            format!("the stop halted, faded out and lowered with no fault ({stop:?})"),
            stop == [Phase::Halting, Phase::FadeOut, Phase::Lowering, Phase::Off],
        );
    }
    match s.kind {
        Kind::LinkLoss => {
            let cut = o.policy_from_s + s.faults[0].from_s;
            let watchdog_s = 0.1;
            let at = t.watchdog_at.unwrap_or(f64::INFINITY);
            v.push(check(
                format!(
                    "the board's watchdog latched {:.0} ms after the cable was pulled (timeout {:.0} ms, plus one period)",
                    (at - cut) * 1e3,
                    watchdog_s * 1e3
                ),
                at > cut && at <= cut + watchdog_s + 0.02 + 1e-9,
            ));
            v.push(check(
                format!(
                    "the runtime reported the link down ({} time(s))",
                    o.summary.link_downs
                ),
                o.summary.link_downs >= 1,
            ));
        }
        Kind::EStop => {
            let pressed = o.policy_from_s + s.events[0].0;
            let latched = t
                .samples
                .iter()
                .filter(|p| p.t > pressed + 0.02)
                .all(|p| p.state == SafetyState::EStop);
            v.push(check("the board stayed in e-stop once pressed", latched));
            v.push(check(
                format!("the runtime saw the board's fault and stopped ({phases:?})"),
                phases.contains(&Phase::Fault(RuntimeFault::Board)),
            ));
        }
        Kind::NoisyLink => v.push(check(
            format!(
                "the faults happened ({} bytes corrupted, {} packets lost)",
                t.faults.bytes_corrupted, t.faults.dropped
            ),
            t.faults.bytes_corrupted > 0 && t.faults.dropped > 0,
        )),
        Kind::NoisyLinkStops => v.push(check(
            format!(
                "with most readings lost the runtime stopped on its stale fault ({phases:?}; {} bytes corrupted)",
                t.faults.bytes_corrupted
            ),
            phases.contains(&Phase::Fault(RuntimeFault::Stale)),
        )),
        Kind::Stall => v.push(check(
            format!("the stall held {} unit(s) of traffic", t.faults.held),
            t.faults.held > 0,
        )),
        Kind::BadInstall => {
            let refused = matches!(&o.install, Some(Err(_)));
            v.push(check(
                format!("the corrupt bundle was refused ({:?})", o.install),
                refused,
            ));
            let kept = o
                .current_bundle
                .as_ref()
                .and_then(|p| std::fs::read(p).ok())
                == std::fs::read(&o.bundle_installed).ok();
            v.push(check("the installed bundle is still the good one", kept));
        }
        Kind::Slope => v.extend(s.floor.and_then(|f| slope_check(&f, o))),
        Kind::Teleop => v.extend(teleop_checks(o)),
        Kind::Walk | Kind::Turn | Kind::Push => {}
    }
    v
}

/// A slope scenario went the way it faced: over the policy's stretch the torso rose (uphill)
/// or fell (downhill) by at least half of what its distance along the floor would give on the
/// floor's tilt. Sliding back down fails a climb; a body on a level floor fails both. `None`
/// across the slope.
fn slope_check(f: &Floor, o: &Outcome) -> Option<Check> {
    let end = o.policy_from_s + o.scenario.seconds;
    let mut stretch = o
        .trace
        .samples
        .iter()
        .filter(|p| p.t >= o.policy_from_s && p.t <= end);
    let (Some(a), Some(b)) = (stretch.next(), stretch.next_back()) else {
        return Some(check("the policy's stretch has no samples", false));
    };
    let rise = b.base_pos[2] - a.base_pos[2];
    let along = (b.base_pos[0] - a.base_pos[0]).hypot(b.base_pos[1] - a.base_pos[1]);
    let due = 0.5 * along * f.degrees.to_radians().tan();
    let (what, ok) = match f.heading {
        Heading::Downhill => ("went down", -rise >= due && rise < 0.0),
        Heading::Uphill => ("climbed", rise >= due && rise > 0.0),
        Heading::Across | Heading::Random => return None,
    };
    Some(check(
        format!(
            "it {what} the {:.0} degree floor: {rise:+.2} m of height over {along:.2} m (at least {due:.2})",
            f.degrees
        ),
        ok,
    ))
}

/// Runs a scenario, compares a walking one with the pure simulation, and checks it.
pub fn run_and_check(
    s: &Scenario,
    setup: &Setup,
) -> Result<(Outcome, Option<Comparison>, Vec<Check>)> {
    let o = run(s, setup)?;
    let cmp = if s.kind.walks() {
        Some(compare(&o, setup)?)
    } else {
        None
    };
    let mut checks = checks(&o);
    if !s.teleop.is_empty() {
        checks.extend(teleop_gap_checks(&o, setup)?);
    }
    Ok((o, cmp, checks))
}

/// What a teleop run did, per segment and at the cut (BENCHMARKS.md's teleop table).
#[derive(Debug, Clone, PartialEq)]
pub struct TeleopFigures {
    /// Per segment after the takeover: its command, and the body's mean forward, lateral and
    /// yaw velocity over it from [`SETTLE_S`] after its start (the command ramps, the gait
    /// changes), and the distance the torso moved over that window (a stand's drift).
    pub segments: Vec<(Segment, [f64; 3], f64)>,
    /// From the cut to the first cycle whose command is zero on every axis (s).
    pub zero_after_cut_s: Option<f64>,
    /// From the cut to the stop sequence (Halting) (s).
    pub halt_after_cut_s: Option<f64>,
    /// From a segment's first datagram to the first cycle whose command moved toward it, in
    /// control periods: the largest over the segments.
    pub command_latency_periods: Option<u64>,
    /// Over the whole drive from the takeover: the torso's straight-line travel (m) and its
    /// mean forward, lateral and yaw velocity (what a person's drive reports).
    pub travelled_m: f64,
    pub mean_velocity: [f64; 3],
}

/// Seconds into a segment before its tracking is measured.
pub const SETTLE_S: f64 = 1.0;
/// The body's mean velocity over a moving segment within this of the command, per axis
/// (m/s; rad/s for yaw, [`TELEOP_YAW_ALLOWANCE`]).
pub const TELEOP_ALLOWANCE: f64 = 0.1;
pub const TELEOP_YAW_ALLOWANCE: f64 = 0.2;

/// A teleop run's figures from the body's samples and the runtime's telemetry log.
pub fn teleop_figures(o: &Outcome) -> TeleopFigures {
    let s = &o.scenario;
    let segments = (s.teleop.iter())
        .filter(|g| g.until_s > 0.0)
        .map(|g| {
            let (from, until) = g.window(o.policy_from_s);
            let (v, moved) = motion(&o.trace.samples, from, until);
            (*g, v, moved.unwrap_or(f64::NAN))
        })
        .collect();
    let (zero, halt, latency) = match (&o.summary.log, s.cut_s()) {
        (Some(log), Some(cut)) => {
            from_log(log, o.policy_from_s, cut, &s.teleop).unwrap_or((None, None, None))
        }
        _ => (None, None, None),
    };
    let (mean_velocity, travelled) = motion(&o.trace.samples, o.policy_from_s, f64::INFINITY);
    TeleopFigures {
        segments,
        zero_after_cut_s: zero,
        halt_after_cut_s: halt,
        command_latency_periods: latency,
        travelled_m: travelled.unwrap_or(0.0),
        mean_velocity,
    }
}

/// The body between `from` and `until` (s): its mean forward, lateral and yaw velocity, and the
/// torso's straight-line travel (`None` without samples).
fn motion(samples: &[crate::line::Sample], from: f64, until: f64) -> ([f64; 3], Option<f64>) {
    let window: Vec<_> = (samples.iter())
        .filter(|p| p.t >= from && p.t <= until)
        .collect();
    let n = window.len().max(1) as f64;
    let mean =
        |f: &dyn Fn(&crate::line::Sample) -> f64| window.iter().map(|p| f(p)).sum::<f64>() / n;
    let v = [
        mean(&|p| p.base_lin_vel[0]),
        mean(&|p| p.base_lin_vel[1]),
        mean(&|p| p.yaw_rate),
    ];
    let travel = match (window.first(), window.last()) {
        (Some(a), Some(b)) => {
            Some((b.base_pos[0] - a.base_pos[0]).hypot(b.base_pos[1] - a.base_pos[1]))
        }
        _ => None,
    };
    (v, travel)
}

/// From the runtime's telemetry: when the command reached zero and the stop began after the
/// cut, and how many periods each segment's command took to reach the policy.
fn from_log(
    log: &Path,
    policy_from_s: f64,
    cut: f64,
    segments: &[Segment],
) -> Result<(Option<f64>, Option<f64>, Option<u64>)> {
    let mut r = clawrl_runtime::telemetry::LogReader::open(log).map_err(anyhow::Error::msg)?;
    let rate = r.header.safety.rate_hz;
    let at = clawrl_robot::observation::Offsets::for_servos(r.header.safety.poses.count).command;
    let cut_t = policy_from_s + cut;
    let (mut zero, mut halt) = (None, None);
    let mut commands: Vec<(f64, [f64; 3])> = Vec::new();
    while let Some(rec) = r.next_record().map_err(anyhow::Error::msg)? {
        let t = rec.cycle as f64 / rate;
        if rec.output.policy_ran {
            let c = &rec.output.frame[at..at + 3];
            let c = [f64::from(c[0]), f64::from(c[1]), f64::from(c[2])];
            commands.push((t, c));
            if t >= cut_t && zero.is_none() && c == [0.0; 3] {
                zero = Some(t - cut_t);
            }
        }
        if t >= cut_t && halt.is_none() && rec.output.phase == Phase::Halting {
            halt = Some(t - cut_t);
        }
    }
    // A segment's command reaches the policy when the command first moves toward it.
    let mut latency: Option<u64> = None;
    for w in segments.windows(2) {
        let (prev, next) = (w[0].velocity, w[1].velocity);
        let start = policy_from_s + w[1].from_s;
        let toward = |c: &[f64; 3]| {
            (0..3).any(|i| next[i] != prev[i] && (c[i] - prev[i]) * (next[i] - prev[i]) > 0.0)
        };
        if let Some((t, _)) = commands
            .iter()
            .find(|(t, c)| *t > start - 1e-9 && toward(c))
        {
            let periods = ((t - start) * rate).round() as u64;
            latency = Some(latency.map_or(periods, |l| l.max(periods)));
        }
    }
    Ok((zero, halt, latency))
}

/// Each moving segment tracked, the cut stood the robot within 0.5 s and started the stop, the
/// policy ran without a fault and did not fall.
fn teleop_checks(o: &Outcome) -> Vec<Check> {
    let f = teleop_figures(o);
    let phases = &o.summary.phases;
    let mut v = vec![check(
        "the policy took over (Running)",
        phases.contains(&Phase::Running),
    )];
    // A person's drive has no script: what it did is in the report's figures and pictures.
    let Some(cut_s) = o.scenario.cut_s() else {
        return v;
    };
    let cut = o.policy_from_s + cut_s;
    let fell =
        (o.trace.samples.iter()).any(|p| p.fallen && p.t >= o.policy_from_s && p.t <= cut + 1.0);
    v.push(check("the robot did not fall", !fell));
    for (g, mean, _) in f.segments.iter().filter(|(g, _, _)| g.moves()) {
        let c = g.velocity;
        let held = (mean[0] - c[0]).abs() <= TELEOP_ALLOWANCE
            && (mean[1] - c[1]).abs() <= TELEOP_ALLOWANCE
            && (mean[2] - c[2]).abs() <= TELEOP_YAW_ALLOWANCE;
        v.push(check(
            format!(
                "{:.0}-{:.0} s, command ({:.2}, {:.2}, {:.2}): the body moved at ({:.2}, {:.2}, {:.2}) (within {TELEOP_ALLOWANCE} m/s, {TELEOP_YAW_ALLOWANCE} rad/s)",
                g.from_s, g.until_s, c[0], c[1], c[2], mean[0], mean[1], mean[2]
            ),
            held,
        ));
    }
    let zero = f.zero_after_cut_s;
    v.push(check(
        format!(
            "the cut stream stood the robot: command zero {zero:.2?} s after the cut (at most 0.5)"
        ),
        zero.is_some_and(|z| z <= 0.5),
    ));
    let halt = f.halt_after_cut_s;
    let due = TELEOP_TIMEOUT_S + TELEOP_STOP_AFTER_S + 0.5;
    let halting = phases.iter().position(|p| *p == Phase::Halting);
    let stop = &phases[halting.unwrap_or(phases.len())..];
    v.push(check(
        format!("then the stop sequence, {halt:.2?} s after the cut (at most {due:.1}), with no fault ({stop:?})"),
        halt.is_some_and(|h| h <= due) && stop == [Phase::Halting, Phase::FadeOut, Phase::Lowering, Phase::Off],
    ));
    v
}
