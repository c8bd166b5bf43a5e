//! `configs/runtime/*.toml`: everything the robot-side runtime is told, validated on load. Like
//! every clawrl config: no defaults, unknown keys refused, every error names the file and the
//! key (`clawrl-config`).
use std::path::{Path, PathBuf};

use clawrl_bundle::{Manifest, RobotSpec};
use clawrl_config::{ConfigError, KeyError, Validate, check_range};
use clawrl_protocol::table::board::behaviour;
use clawrl_robot::OnboardLayout;
use clawrl_robot::quadruped::{self, JOINT_LIMITS};
use serde::{Deserialize, Serialize};

use crate::controller::{MAX_SERVOS, Poses, SafetyConfig};

/// The environment variable naming the runtime config when `--config` is not given.
pub const CONFIG_ENV: &str = "CLAWRL_RUNTIME_CONFIG";
/// Where the robot keeps its runtime config (looked for after [`CONFIG_ENV`]).
pub const SYSTEM_CONFIG: &str = "/etc/clawrl/robot.toml";
/// The repository's config, relative to the current directory: looked for last, so that the
/// repository's tests and scripts find it when run from its root.
pub const REPO_CONFIG: &str = "configs/runtime/robot.toml";

/// The runtime config file to load: `given` (`--config`) if any, else the file [`CONFIG_ENV`]
/// names (when set and not empty), else the first of [`SYSTEM_CONFIG`] and [`REPO_CONFIG`]
/// that exists. A path given by `--config` or [`CONFIG_ENV`] is used as given (a missing one
/// is an error when it is loaded, naming it), never passed over for another robot's config.
/// When neither default exists the error names every path tried, in order, and how to give
/// one.
pub fn find_config(given: Option<&Path>) -> Result<PathBuf, ConfigNotFound> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    if let Some(v) = std::env::var_os(CONFIG_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(v));
    }
    let mut tried = Vec::new();
    for p in [SYSTEM_CONFIG, REPO_CONFIG].map(PathBuf::from) {
        match std::fs::metadata(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => tried.push(p),
            // Anything else there (even unreadable) is the config: loading it says what is wrong.
            _ => return Ok(p),
        }
    }
    Err(ConfigNotFound { tried })
}

/// No `--config`, no [`CONFIG_ENV`], and none of the default paths exists.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "no runtime config found: --config not given, {CONFIG_ENV} not set, and no default exists (tried, in order: {}); give one with --config PATH or {CONFIG_ENV}=PATH",
    self.tried_list()
)]
pub struct ConfigNotFound {
    /// The default paths looked for, in order.
    pub tried: Vec<PathBuf>,
}

impl ConfigNotFound {
    /// `A, B (in DIR)`: a relative path with the directory it was looked for in.
    fn tried_list(&self) -> String {
        let cwd = std::env::current_dir().ok();
        self.tried
            .iter()
            .map(|p| match &cwd {
                Some(d) if p.is_relative() => format!("{} (in {})", p.display(), d.display()),
                _ => p.display().to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeConfig {
    pub robot: RobotSection,
    pub serial: SerialConfig,
    pub control: ControlConfig,
    pub safety: SafetySection,
    pub install: InstallConfig,
    pub telemetry: TelemetryConfig,
    /// Where the velocity command comes from; absent: `control.command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandSection>,
}

/// `[command]`: live velocity commands (runtime/README.md, "Live commands") and the rules
/// that keep them safe (`crate::command::CommandGuard`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSection {
    /// "fixed": `control.command`; "network": the command datagrams arriving on `listen`;
    /// "gamepad": the joystick device `device` (`crate::command::gamepad`).
    pub source: String,
    /// UDP address to listen on for "network", e.g. "0.0.0.0:9870".
    #[serde(default)]
    pub listen: String,
    /// The joystick device for "gamepad", e.g. "/dev/input/js0" (no default: a robot may have
    /// several).
    #[serde(default)]
    pub device: String,
    /// "gamepad": the axis numbers of forward, lateral and yaw (`jstest /dev/input/js0` shows
    /// them); default `[1, 0, 3]`: left stick up/down and left/right, right stick left/right
    /// on an Xbox-style pad (`xpad`, `hid-sony`).
    #[serde(default = "default_axes")]
    pub axes: [u8; 3],
    /// "gamepad": fraction of full scale around each stick's centre that reads 0; default 0.1.
    #[serde(default = "default_deadzone")]
    pub deadzone: f64,
    /// "gamepad": the button that starts the stop sequence; default 1 (B on an Xbox-style pad).
    #[serde(default = "default_stop_button")]
    pub stop_button: u8,
    /// "gamepad": the e-stop button (latched); default 0 (A on an Xbox-style pad).
    #[serde(default = "default_estop_button")]
    pub estop_button: u8,
    /// Without a fresh command this long, the command ramps to zero (the robot stands).
    pub timeout_s: f64,
    /// Standing at zero this much longer without one, the stop sequence.
    pub stop_after_s: f64,
    /// Largest change per second: forward, lateral (m/s per s), yaw (rad/s per s).
    pub max_rate: [f64; 3],
    /// `[low, high]` per axis: a command is clipped to them (the ranges the policy was trained
    /// on: the task config's `command.forward`, `lateral`, `yaw_rate`).
    pub ranges: [[f64; 2]; 3],
}

impl CommandSection {
    /// Whether commands come from a source rather than `control.command`.
    pub fn live(&self) -> bool {
        self.source != "fixed"
    }

    /// The guard's limits at control rate `rate_hz`.
    pub fn limits(&self, rate_hz: f64) -> crate::command::CommandLimits {
        crate::command::CommandLimits {
            ranges: self.ranges,
            max_rate: self.max_rate,
            timeout_s: self.timeout_s,
            stop_after_s: self.stop_after_s,
            rate_hz,
        }
    }

    /// The live source this section names, at control rate `rate_hz`, as `run` starts it: the
    /// error names the address or the device that could not be opened.
    pub fn open(&self, rate_hz: f64) -> anyhow::Result<crate::command::Live> {
        use crate::command::Live;
        use anyhow::Context;
        let limits = self.limits(rate_hz);
        match self.source.as_str() {
            "network" => {
                let listen: std::net::SocketAddr = self.listen.parse().context("command.listen")?;
                Live::start(listen, limits)
                    .with_context(|| format!("listening for commands on UDP {listen}"))
            }
            "gamepad" => {
                Live::open_gamepad(std::path::Path::new(&self.device), self.gamepad(), limits)
                    .with_context(|| {
                        format!("opening the gamepad {} (command.device)", self.device)
                    })
            }
            other => anyhow::bail!("command.source {other:?} is not a live source"),
        }
    }

    /// The gamepad's axes, buttons and dead zone, with the command ranges.
    pub fn gamepad(&self) -> crate::command::gamepad::GamepadMap {
        crate::command::gamepad::GamepadMap {
            axes: self.axes,
            deadzone: self.deadzone,
            stop_button: self.stop_button,
            estop_button: self.estop_button,
            ranges: self.ranges,
        }
    }

    pub fn validate(&self) -> Result<(), KeyError> {
        if !["fixed", "network", "gamepad"].contains(&self.source.as_str()) {
            return Err(KeyError::new(
                "command.source",
                format!("{:?} is not one of fixed, network, gamepad", self.source),
            ));
        }
        if self.source == "gamepad" {
            if self.device.is_empty() {
                return Err(KeyError::new(
                    "command.device",
                    "needs the joystick device for source = \"gamepad\", e.g. \"/dev/input/js0\"",
                ));
            }
            check_range("command.deadzone", self.deadzone, 0.0, 0.9)?;
            let [f, l, y] = self.axes;
            if f == l || f == y || l == y {
                return Err(KeyError::new(
                    "command.axes",
                    format!(
                        "{:?}: forward, lateral and yaw need three different axes",
                        self.axes
                    ),
                ));
            }
            if self.stop_button == self.estop_button {
                return Err(KeyError::new(
                    "command.stop_button",
                    format!(
                        "{} is also command.estop_button: the stop and the e-stop need two buttons",
                        self.stop_button
                    ),
                ));
            }
        }
        if self.source == "network" && self.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(KeyError::new(
                "command.listen",
                format!(
                    "{:?} is not an address and port, e.g. \"0.0.0.0:9870\"",
                    self.listen
                ),
            ));
        }
        check_range("command.timeout_s", self.timeout_s, 0.02, 10.0)?;
        check_range("command.stop_after_s", self.stop_after_s, 0.0, 60.0)?;
        for (i, axis) in ["forward", "lateral", "yaw"].iter().enumerate() {
            check_range(
                &format!("command.max_rate[{i}]"),
                self.max_rate[i],
                0.01,
                20.0,
            )?;
            let [lo, hi] = self.ranges[i];
            if !(lo.is_finite() && hi.is_finite() && lo <= 0.0 && 0.0 <= hi) {
                return Err(KeyError::new(
                    format!("command.ranges[{i}]"),
                    format!(
                        "[{lo}, {hi}] for {axis} must hold 0 (the robot must be able to stand)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn default_axes() -> [u8; 3] {
    [1, 0, 3]
}

fn default_deadzone() -> f64 {
    0.1
}

fn default_stop_button() -> u8 {
    1
}

fn default_estop_button() -> u8 {
    0
}

/// What this robot is: with `control.rate_hz` and the servo layout of the model, everything a
/// bundle is checked against ([`RuntimeConfig::robot_spec`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotSection {
    /// Robot model name: `claw_quadruped` (the shipped robot, known to this runtime), or
    /// another robot, which `description` must then describe.
    pub model: String,
    /// Lowercase hex SHA-256 of the MJCF file this robot was modelled by.
    pub mjcf_sha256: String,
    /// Largest action-map scale a bundle may use (rad per unit of action).
    pub max_action_scale: f64,
    /// This robot's description (`robots/NAME/robot.toml`; relative to this file): a bundle
    /// that carries one must agree with it servo by servo. Absent: bundles are checked by
    /// servo names, limits and default pose only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<PathBuf>,
    /// The description file, read at load.
    #[serde(skip)]
    pub description_file: Option<clawrl_robot::description::DescriptionFile>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SerialConfig {
    /// `/dev/ttyUSB0`, `/dev/ttyAMA0`, or a pseudo-terminal in tests.
    pub port: String,
    pub baud: u32,
    /// How long one transaction may wait for its answer, ms.
    pub answer_timeout_ms: u64,
    /// Between reconnection attempts after the port failed, ms.
    pub reconnect_ms: u64,
    /// Wall clock only: the robot state is read this long before the next control deadline,
    /// not straight after the goals, so the policy acts on a reading this old instead of a
    /// whole period old (µs; 0 reads straight after the goals).
    pub read_lead_us: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlConfig {
    /// Loop rate; must equal the bundle's control rate.
    pub rate_hz: f64,
    /// The last stretch before each deadline the timer busy-waits, µs.
    pub spin_us: u64,
    /// SCHED_FIFO priority for the control thread (1-99), 0 to stay SCHED_OTHER.
    pub realtime_priority: i32,
    /// CPU the control thread is pinned to, -1 for none.
    pub cpu: i32,
    /// Velocity command given to the policy: forward m/s, lateral m/s, yaw rate rad/s.
    pub command: [f64; 3],
    /// Above 0, the yaw command holds the heading the robot had when the policy took over:
    /// heading_gain x the heading error (rad, from the board's orientation), clipped to
    /// +-heading_yaw_limit, in place of `command[2]`. The slope task trains with this
    /// (legged_gym's heading command, gain 0.5); 0 (the default) keeps the fixed yaw rate.
    #[serde(default)]
    pub heading_gain: f64,
    /// rad/s; the slope task's yaw-rate range is +-0.8.
    #[serde(default = "default_heading_yaw_limit")]
    pub heading_yaw_limit: f64,
    /// What paces the loop: `wall` (the fixed-rate timer; the robot) or `lockstep` (each cycle
    /// starts when the previous cycle's reading arrives, or after `serial.answer_timeout_ms`
    /// without one: hardware-in-the-loop with a simulated body, whose time advances one
    /// control period per cycle).
    pub clock: String,
    /// One status line this often (s): phase, command, the IMU's yaw rate, late cycles, link
    /// drops. 0: none (HIL runs, where the report says it all). 1 in configs written before
    /// the key.
    #[serde(default = "default_status_every_s")]
    pub status_every_s: f64,
}

fn default_status_every_s() -> f64 {
    1.0
}

fn default_heading_yaw_limit() -> f64 {
    0.8
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SafetySection {
    pub stand_s: f64,
    pub fade_s: f64,
    /// On a stop from Running: the policy with a zero command, before the fade-out.
    pub halt_s: f64,
    pub lower_s: f64,
    /// Largest goal change per second, rad/s.
    pub max_joint_speed: f64,
    /// Tilt that latches the e-stop, degrees.
    pub tilt_limit_deg: f64,
    /// Cycles without a fresh reading before the stale fault.
    pub stale_cycles: u32,
    /// The board's own watchdog (it acts if the runtime goes silent), ms.
    pub board_watchdog_ms: u16,
    /// What the board does when its watchdog trips: `hold`, `damp` or `limp`.
    pub board_safe_behaviour: String,
    /// Claw angle (rad, 0 open to 1.2 shut) while standing before and after the policy; 0 in
    /// configs written before the key existed.
    #[serde(default)]
    pub stand_grip: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstallConfig {
    /// Root of the A/B slots (`clawrl-runtime install --root`).
    pub root: PathBuf,
    /// Public-key files whose signatures are accepted; naming any requires a signature by one
    /// of them.
    pub trusted_keys: Vec<PathBuf>,
    /// Refuse unsigned bundles (implied by a non-empty `trusted_keys`).
    pub require_signature: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// Directory for `run-<unix time>.log` files; empty for none.
    pub dir: PathBuf,
}

impl ControlConfig {
    pub fn lockstep(&self) -> bool {
        self.clock == "lockstep"
    }
}

impl SafetySection {
    pub fn behaviour_code(&self) -> u8 {
        match self.board_safe_behaviour.as_str() {
            "hold" => behaviour::HOLD,
            "damp" => behaviour::DAMP,
            _ => behaviour::LIMP,
        }
    }
}

impl Validate for RuntimeConfig {
    fn validate(&self) -> Result<(), KeyError> {
        self.robot.validate()?;
        let (s, c, f) = (&self.serial, &self.control, &self.safety);
        if s.port.is_empty() {
            return Err(KeyError::new("serial.port", "needs a device path"));
        }
        check_range("serial.baud", s.baud, 9_600, 4_500_000)?;
        check_range("serial.answer_timeout_ms", s.answer_timeout_ms, 1, 1000)?;
        check_range("serial.reconnect_ms", s.reconnect_ms, 1, 60_000)?;
        let period_us = (1e6 / c.rate_hz) as u64;
        if s.read_lead_us >= period_us {
            return Err(KeyError::new(
                "serial.read_lead_us",
                format!(
                    "{} us is not under the control period ({period_us} us at control.rate_hz)",
                    s.read_lead_us
                ),
            ));
        }
        check_range("control.rate_hz", c.rate_hz, 1.0, 1000.0)?;
        check_range("control.spin_us", c.spin_us, 0, 5000)?;
        check_range("control.realtime_priority", c.realtime_priority, 0, 99)?;
        check_range("control.cpu", c.cpu, -1, 1023)?;
        check_range("control.command[0]", c.command[0], -1.0, 1.0)?;
        check_range("control.command[1]", c.command[1], -0.5, 0.5)?;
        check_range("control.command[2]", c.command[2], -2.0, 2.0)?;
        check_range("control.heading_gain", c.heading_gain, 0.0, 5.0)?;
        check_range("control.heading_yaw_limit", c.heading_yaw_limit, 0.0, 2.0)?;
        if !["wall", "lockstep"].contains(&c.clock.as_str()) {
            return Err(KeyError::new(
                "control.clock",
                format!("{:?} is not one of wall, lockstep", c.clock),
            ));
        }
        check_range("control.status_every_s", c.status_every_s, 0.0, 3600.0)?;
        check_range("safety.stand_s", f.stand_s, 0.1, 30.0)?;
        check_range("safety.fade_s", f.fade_s, 0.0, 30.0)?;
        check_range("safety.halt_s", f.halt_s, 0.0, 30.0)?;
        check_range("safety.lower_s", f.lower_s, 0.1, 30.0)?;
        check_range("safety.max_joint_speed", f.max_joint_speed, 0.1, 50.0)?;
        check_range("safety.tilt_limit_deg", f.tilt_limit_deg, 5.0, 90.0)?;
        check_range("safety.stale_cycles", f.stale_cycles, 1, 1000)?;
        check_range(
            "safety.stand_grip",
            f.stand_grip,
            quadruped::CLAW_LIMITS[0],
            quadruped::CLAW_LIMITS[1],
        )?;
        check_range("safety.board_watchdog_ms", f.board_watchdog_ms, 10, 1000)?;
        if !["hold", "damp", "limp"].contains(&f.board_safe_behaviour.as_str()) {
            return Err(KeyError::new(
                "safety.board_safe_behaviour",
                format!(
                    "{:?} is not one of hold, damp, limp",
                    f.board_safe_behaviour
                ),
            ));
        }
        if let Some(c) = &self.command {
            c.validate()?;
        }
        if self.install.require_signature && self.install.trusted_keys.is_empty() {
            return Err(KeyError::new(
                "install.require_signature",
                "requires at least one key in install.trusted_keys",
            ));
        }
        Ok(())
    }
}

impl RobotSection {
    fn validate(&self) -> Result<(), KeyError> {
        if self.model != quadruped::MODEL_NAME && self.description.is_none() {
            return Err(KeyError::new(
                "robot.model",
                format!(
                    "{:?}: a robot other than the shipped {:?} is known by its description: \
                     set robot.description (robots/NAME/robot.toml)",
                    self.model,
                    quadruped::MODEL_NAME
                ),
            ));
        }
        let h = &self.mjcf_sha256;
        let hex = h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        // All zeros is what a bundle written without its MJCF file carries: never a robot's.
        if !hex || h.bytes().all(|b| b == b'0') {
            return Err(KeyError::new(
                "robot.mjcf_sha256",
                format!(
                    "{h:?} is not the SHA-256 of an MJCF file (64 lowercase hex digits, not all zero)"
                ),
            ));
        }
        check_range("robot.max_action_scale", self.max_action_scale, 0.01, 10.0)
    }
}

/// The description `robot.description` names, for robot `model`; errors name this config's
/// key and the description's own file and key.
fn load_description(
    config: &Path,
    file: &Path,
    model: &str,
) -> Result<clawrl_robot::description::DescriptionFile, ConfigError> {
    let key_error = |reason: String| ConfigError {
        file: config.to_path_buf(),
        key: "robot.description".into(),
        reason,
    };
    if !file.exists() {
        return Err(key_error(format!(
            "{} does not exist: copy the robot's description (robots/NAME/robot.toml) onto the \
             robot computer and name it here, relative to this file",
            file.display()
        )));
    }
    let (d, _) = clawrl_robot::description::DescriptionFile::load(file)
        .map_err(|e| key_error(e.to_string()))?;
    if d.robot.name != model {
        return Err(key_error(format!(
            "{} describes robot {:?}, robot.model is {model:?}",
            file.display(),
            d.robot.name
        )));
    }
    if d.servo.len() > MAX_SERVOS {
        return Err(key_error(format!(
            "{} has {} servos; one board drives at most {MAX_SERVOS}",
            file.display(),
            d.servo.len()
        )));
    }
    if model != quadruped::MODEL_NAME {
        return Ok(d);
    }
    // The runtime addresses the shipped robot's servos by these names (their bus IDs,
    // offsets): a name it drives that the description lacks would silently fall back to
    // another ID.
    let names = quadruped::servo_names();
    let described: Vec<&str> = d.servo.iter().map(|s| s.name.as_str()).collect();
    if let Some(missing) = names.iter().find(|n| !described.contains(&n.as_str())) {
        return Err(key_error(format!(
            "{} has no servo {missing:?}, which this runtime drives ({} servos: {})",
            file.display(),
            names.len(),
            names.join(", ")
        )));
    }
    if let Some(extra) = described.iter().find(|n| !names.iter().any(|m| m == *n)) {
        return Err(key_error(format!(
            "{} has servo {extra:?}, which this runtime does not drive",
            file.display()
        )));
    }
    Ok(d)
}

impl RuntimeConfig {
    /// What a bundle must fit to run here ([`clawrl_bundle::check_fits`]): this config's
    /// model, MJCF hash, control rate and action-scale bound, with the servo names, limits,
    /// default pose and observation of the model this runtime drives.
    /// Another robot's limits and default pose are the MJCF's, which the robot computer does
    /// not carry: they are left empty here and come from the bundle's resolved description
    /// once its MJCF hash and servo table have matched ([`RobotSpec::knows_mjcf_numbers`]).
    pub fn robot_spec(&self) -> RobotSpec {
        let names = self.servo_names();
        let (joint_limits, default_pose, layout) = if self.is_shipped_robot() {
            let pose = quadruped::DEFAULT_POSE.to_vec();
            (JOINT_LIMITS.to_vec(), pose, OnboardLayout::quadruped())
        } else {
            let unknown = OnboardLayout::legged(&self.robot.model, &names, &vec![0.0; names.len()]);
            (Vec::new(), Vec::new(), unknown)
        };
        RobotSpec {
            model: self.robot.model.clone(),
            mjcf_sha256: self.robot.mjcf_sha256.clone(),
            joint_names: names,
            joint_limits,
            default_pose,
            layout,
            control_rate_hz: self.control.rate_hz,
            max_action_scale: self.robot.max_action_scale,
            max_joint_speed: self.safety.max_joint_speed,
            description: self.robot.description_file.clone(),
            network_kinds: crate::inference::SUPPORTED_KINDS
                .iter()
                .map(|k| k.to_string())
                .collect(),
        }
    }

    /// Whether this config drives the shipped claw-foot quadruped (known by its constants).
    pub fn is_shipped_robot(&self) -> bool {
        self.robot.model == quadruped::MODEL_NAME
    }

    /// The servos' names in action order: the shipped robot's, or the description's.
    pub fn servo_names(&self) -> Vec<String> {
        match &self.robot.description_file {
            Some(d) if !self.is_shipped_robot() => d.servo.iter().map(|s| s.name.clone()).collect(),
            _ => quadruped::servo_names(),
        }
    }

    /// Each servo's bus ID in action order: the description's `id` of the servo of that name,
    /// or IDs 1-16 for the shipped robot without a description.
    pub fn servo_ids(&self) -> Vec<u8> {
        let names = self.servo_names();
        (0..names.len())
            .map(|i| {
                let described = self
                    .robot
                    .description_file
                    .as_ref()
                    .and_then(|d| d.servo.iter().find(|s| s.name == names[i]).map(|s| s.id));
                described.unwrap_or(clawrl_protocol::units::ids::servo_id(i))
            })
            .collect()
    }

    /// Finds the config ([`find_config`]: `--config`, [`CONFIG_ENV`], [`SYSTEM_CONFIG`],
    /// [`REPO_CONFIG`]) and loads it ([`RuntimeConfig::load`]).
    pub fn find_and_load(given: Option<&Path>, overrides: &[String]) -> anyhow::Result<Self> {
        let path = find_config(given)?;
        Self::load(&path, overrides).map_err(|e| {
            if given.is_none() && std::env::var_os(CONFIG_ENV).is_some_and(|v| !v.is_empty()) {
                anyhow::anyhow!("{e} (named by {CONFIG_ENV})")
            } else {
                anyhow::Error::new(e)
            }
        })
    }

    /// Loads and validates `path`; `overrides` are `KEY=VALUE` in TOML syntax.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Self, ConfigError> {
        let mut c: Self = clawrl_config::load(path, overrides)?;
        // Relative paths are relative to the config file.
        let base = path.parent().unwrap_or(Path::new("."));
        let rel = |p: &Path| {
            if p.as_os_str().is_empty() || p.is_absolute() {
                p.to_path_buf()
            } else {
                base.join(p)
            }
        };
        c.install.root = rel(&c.install.root);
        c.telemetry.dir = rel(&c.telemetry.dir);
        c.install.trusted_keys = c.install.trusted_keys.iter().map(|k| rel(k)).collect();
        if let Some(d) = c.robot.description.take() {
            let d = rel(&d);
            c.robot.description_file = Some(load_description(path, &d, &c.robot.model)?);
            c.robot.description = Some(d);
        }
        Ok(c)
    }

    /// The controller's view of this robot and `bundle`: the robot's poses and limits (the
    /// shipped robot's constants, or another robot's from the bundle's resolved description,
    /// which `check_fits` compared with `robot.description` and the MJCF hash first), the
    /// limits narrowed by the bundle's (never widened). Without a bundle, another robot's
    /// poses and limits are unknown here: refused.
    pub fn safety(&self, bundle: Option<&Manifest>) -> Result<SafetyConfig, String> {
        let described = bundle.and_then(|m| m.robot.description.as_ref());
        let (poses, mut limits) = match described {
            Some(d) => {
                let poses = Poses::from_description(d)?;
                let mut limits = [[0.0; 2]; MAX_SERVOS];
                limits[..poses.count].copy_from_slice(&d.limits());
                (poses, limits)
            }
            None if self.robot.model == quadruped::MODEL_NAME => (Poses::quadruped(), JOINT_LIMITS),
            None => {
                return Err(format!(
                    "robot {:?}: its poses and limits come from a bundle's description, and there is none",
                    self.robot.model
                ));
            }
        };
        let map = bundle.and_then(|m| m.action.map.as_ref());
        if let Some(b) = map
            .map(|m| &m.joint_limits)
            .filter(|b| b.len() == poses.count)
        {
            for (l, [lo, hi]) in limits.iter_mut().zip(b) {
                *l = [l[0].max(*lo), l[1].min(*hi)];
            }
        }
        let f = &self.safety;
        Ok(SafetyConfig {
            rate_hz: self.control.rate_hz,
            stand_s: f.stand_s,
            fade_s: f.fade_s,
            halt_s: f.halt_s,
            lower_s: f.lower_s,
            max_joint_speed: f.max_joint_speed,
            tilt_limit: f.tilt_limit_deg.to_radians(),
            stale_cycles: f.stale_cycles,
            joint_limits: limits,
            command: self.control.command,
            heading_gain: self.control.heading_gain,
            heading_yaw_limit: self.control.heading_yaw_limit,
            stand_grip: f.stand_grip,
            poses,
        })
    }
}
