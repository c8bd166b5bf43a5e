//! The description file as written (`robots/NAME/robot.toml`), its own checks, and its
//! resolution against the MJCF.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clawrl_config::{KeyError, Validate};
use serde::{Deserialize, Serialize};

use super::{
    DescriptionError, Foot, Imu, JointKind, MjcfFacts, Pwm, PwmModel, RobotDescription, Servo,
    ServoModel, Trunk,
};

/// Most servos a description may name: the firmware's compile-time table size.
pub const MAX_SERVOS: usize = 32;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotSection {
    /// Robot model name, as recorded in a bundle.
    pub name: String,
    /// The MJCF, relative to this file.
    pub mjcf: PathBuf,
    /// Keyframe whose joint values are the default pose (what a zero action commands).
    pub stand_keyframe: String,
    /// Keyframe whose joint values are the resting pose; when the MJCF has none, every servo
    /// gives its `rest`.
    pub rest_keyframe: String,
    /// What only the hardware can tell and `clawrl robot new` could not: `clawrl robot check`
    /// lists it until the list is empty.
    #[serde(default)]
    pub todo: Vec<String>,
}

/// One `[[servo]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServoSpec {
    pub name: String,
    pub id: u8,
    pub joint: String,
    pub kind: JointKind,
    pub direction: i8,
    pub offset_rad: f64,
    /// Narrower than the MJCF's joint range, or absent (the MJCF's range).
    #[serde(default)]
    pub limits: Option<[f64; 2]>,
    /// Only when the MJCF has no rest keyframe.
    #[serde(default)]
    pub rest: Option<f64>,
    pub model: String,
    #[serde(default)]
    pub pwm: Option<Pwm>,
}

/// `robots/NAME/robot.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DescriptionFile {
    pub robot: RobotSection,
    pub action_scale: BTreeMap<JointKind, f64>,
    pub servo_model: BTreeMap<String, ServoModel>,
    #[serde(default)]
    pub pwm_model: BTreeMap<String, PwmModel>,
    pub servo: Vec<ServoSpec>,
    /// A robot without feet (an arm on a bench) has none.
    #[serde(default)]
    pub foot: Vec<Foot>,
    pub imu: Imu,
    pub trunk: Trunk,
}

impl DescriptionFile {
    /// Reads and checks `path` (a `robot.toml`, or the folder holding one).
    pub fn load(path: &Path) -> Result<(Self, PathBuf), DescriptionError> {
        let file = if path.is_dir() {
            path.join("robot.toml")
        } else {
            path.to_path_buf()
        };
        let d: Self = clawrl_config::load(&file, &[])?;
        Ok((d, file))
    }

    /// The MJCF this description names, resolved against the description's folder.
    pub fn mjcf_path(&self, file: &Path) -> PathBuf {
        file.parent()
            .unwrap_or(Path::new("."))
            .join(&self.robot.mjcf)
    }

    /// Checks the description against the compiled MJCF and fills in what the MJCF holds.
    pub fn resolve(
        &self,
        file: &Path,
        m: &MjcfFacts,
    ) -> Result<RobotDescription, DescriptionError> {
        let mismatch = |what: String| DescriptionError::Mismatch {
            file: file.display().to_string(),
            mjcf: m.file.clone(),
            what,
        };
        check_actuators(self, m).map_err(mismatch)?;
        let servos = self
            .servo
            .iter()
            .map(|s| resolve_servo(self, s, m))
            .collect::<Result<Vec<_>, _>>()
            .map_err(mismatch)?;
        check_named_parts(self, m).map_err(mismatch)?;
        Ok(self.with_servos(servos))
    }

    /// The resolved description, given its servos resolved (one per `[[servo]]`, in order);
    /// everything else is the file's.
    pub fn with_servos(&self, servos: Vec<Servo>) -> RobotDescription {
        RobotDescription {
            name: self.robot.name.clone(),
            servos,
            servo_models: self.servo_model.clone(),
            pwm_models: self.pwm_model.clone(),
            feet: self.foot.clone(),
            imu: self.imu.clone(),
            trunk: self.trunk.clone(),
            action_scale: self.action_scale.clone(),
        }
    }
}

impl ServoSpec {
    /// This servo with the numbers the MJCF holds (or the file narrowed) filled in.
    pub fn resolved(&self, limits: [f64; 2], stand: f64, rest: f64) -> Servo {
        Servo {
            name: self.name.clone(),
            id: self.id,
            joint: self.joint.clone(),
            kind: self.kind,
            direction: self.direction,
            offset_rad: self.offset_rad,
            limits,
            stand,
            rest,
            model: self.model.clone(),
            pwm: self.pwm.clone(),
        }
    }
}

/// Every servo's joint is driven by exactly one actuator, and every actuator on a joint
/// belongs to a servo: the actuators and the servos are one to one.
fn check_actuators(d: &DescriptionFile, m: &MjcfFacts) -> Result<(), String> {
    for s in &d.servo {
        let Some(j) = m.joints.get(&s.joint) else {
            return Err(format!(
                "servo {} drives joint `{}`, and the MJCF has no joint of that name",
                s.name, s.joint
            ));
        };
        if !j.one_dof {
            return Err(format!(
                "servo {} drives joint `{}`, which is not a hinge or slide joint",
                s.name, s.joint
            ));
        }
        match m.actuators_on(&s.joint).as_slice() {
            [_] => {}
            [] => {
                return Err(format!(
                    "servo {}: no actuator of the MJCF drives joint `{}`",
                    s.name, s.joint
                ));
            }
            many => {
                return Err(format!(
                    "servo {}: {} actuators drive joint `{}` ({}); a servo is one actuator",
                    s.name,
                    many.len(),
                    s.joint,
                    many.join(", ")
                ));
            }
        }
    }
    let driven: BTreeSet<&str> = d.servo.iter().map(|s| s.joint.as_str()).collect();
    for a in &m.actuators {
        if let Some(j) = &a.joint
            && !driven.contains(j.as_str())
        {
            return Err(format!(
                "actuator `{}` drives joint `{j}`, which no servo of the description drives",
                a.name
            ));
        }
    }
    Ok(())
}

fn resolve_servo(d: &DescriptionFile, s: &ServoSpec, m: &MjcfFacts) -> Result<Servo, String> {
    let joint = &m.joints[&s.joint];
    let limits = match (joint.range, s.limits) {
        (Some(r), None) => r,
        (Some([lo, hi]), Some([a, b])) if a >= lo - 1e-9 && b <= hi + 1e-9 => [a, b],
        (Some(r), Some(l)) => {
            return Err(format!(
                "servo {}: limits {} reach outside joint `{}`'s range in the MJCF, {}",
                s.name,
                pair(l),
                s.joint,
                pair(r)
            ));
        }
        (None, Some(l)) => l,
        (None, None) => {
            return Err(format!(
                "servo {}: joint `{}` has no range in the MJCF and the description gives no limits",
                s.name, s.joint
            ));
        }
    };
    let inside = |what: &str, v: f64| -> Result<f64, String> {
        if v >= limits[0] - 1e-9 && v <= limits[1] + 1e-9 {
            Ok(v)
        } else {
            Err(format!(
                "servo {}: the {what} pose puts it at {v}, outside its limits {}",
                s.name,
                pair(limits)
            ))
        }
    };
    let stand_key = &d.robot.stand_keyframe;
    let stand = m.key_value(stand_key, &s.joint).ok_or_else(|| {
        format!("the MJCF has no keyframe `{stand_key}` (robot.stand_keyframe): the default pose")
    })?;
    let rest_key = &d.robot.rest_keyframe;
    let rest = match (m.key_value(rest_key, &s.joint), s.rest) {
        (Some(k), None) => k,
        (Some(k), Some(r)) if (k - r).abs() <= 1e-9 => k,
        (Some(k), Some(r)) => {
            return Err(format!(
                "servo {}: rest is {r} in the description and {k} in the MJCF's keyframe `{rest_key}`",
                s.name
            ));
        }
        (None, Some(r)) => r,
        (None, None) => {
            return Err(format!(
                "servo {}: no `rest`, and the MJCF has no keyframe `{rest_key}` to take it from",
                s.name
            ));
        }
    };
    Ok(s.resolved(limits, inside("stand", stand)?, inside("rest", rest)?))
}

/// Feet, IMU and trunk: every body, geom, site, sensor and actuator they name exists.
fn check_named_parts(d: &DescriptionFile, m: &MjcfFacts) -> Result<(), String> {
    let find = |list: &[String], kind: &str, name: &str, owner: &str| {
        if list.iter().any(|n| n == name) {
            Ok(())
        } else {
            Err(format!("{owner}: the MJCF has no {kind} named `{name}`"))
        }
    };
    for f in &d.foot {
        let owner = format!("foot {}", f.name);
        find(&m.bodies, "body", &f.body, &owner)?;
        find(&m.geoms, "geom", &f.geom, &owner)?;
        find(&m.sensors, "sensor", &f.contact_sensor, &owner)?;
        if let Some(a) = &f.grip_actuator
            && !m.actuators.iter().any(|x| &x.name == a)
        {
            return Err(format!("{owner}: the MJCF has no actuator named `{a}`"));
        }
    }
    let i = &d.imu;
    find(&m.sites, "site", &i.site, "imu")?;
    for s in [&i.quat_sensor, &i.gyro_sensor, &i.acc_sensor] {
        find(&m.sensors, "sensor", s, "imu")?;
    }
    let t = &d.trunk;
    find(&m.bodies, "body", &t.body, "trunk")?;
    find(&m.geoms, "geom", &t.geom, "trunk")?;
    find(&m.sensors, "sensor", &t.contact_sensor, "trunk")?;
    find(&m.sensors, "sensor", &t.velocity_sensor, "trunk")
}

fn pair([a, b]: [f64; 2]) -> String {
    format!("[{a}, {b}]")
}

impl Validate for DescriptionFile {
    fn validate(&self) -> Result<(), KeyError> {
        let r = &self.robot;
        if r.name.is_empty() || r.name.contains(char::is_whitespace) {
            return Err(KeyError::new("robot.name", "wants a name without spaces"));
        }
        if self.servo.is_empty() || self.servo.len() > MAX_SERVOS {
            return Err(KeyError::new(
                "servo",
                format!("{} servos; a robot has 1 to {MAX_SERVOS}", self.servo.len()),
            ));
        }
        for m in self.servo_model.iter() {
            check_servo_model(m)?;
        }
        for s in &self.servo {
            self.check_servo(s)?;
        }
        self.check_unique()?;
        self.check_feet()?;
        for (kind, scale) in &self.action_scale {
            if !(scale.is_finite() && *scale > 0.0 && *scale <= 10.0) {
                let key = format!("action_scale.{}", kind.as_str());
                return Err(KeyError::new(
                    key,
                    format!("{scale} is not in (0, 10] rad per unit"),
                ));
            }
        }
        if self.imu.mount_rpy_deg.iter().any(|a| !a.is_finite()) {
            return Err(KeyError::new("imu.mount_rpy_deg", "is not finite"));
        }
        Ok(())
    }
}

fn check_servo_model((name, m): (&String, &ServoModel)) -> Result<(), KeyError> {
    let key = |k: &str| format!("servo_model.{name}.{k}");
    if m.ticks_per_turn == 0 || m.center_ticks >= m.ticks_per_turn {
        return Err(KeyError::new(
            key("center_ticks"),
            format!(
                "{} is not inside one turn of {} ticks",
                m.center_ticks, m.ticks_per_turn
            ),
        ));
    }
    if !(m.max_speed_rad_s.is_finite() && m.max_speed_rad_s > 0.0) {
        return Err(KeyError::new(
            key("max_speed_rad_s"),
            "wants a speed above 0",
        ));
    }
    Ok(())
}

impl DescriptionFile {
    fn check_servo(&self, s: &ServoSpec) -> Result<(), KeyError> {
        let key = |k: &str| format!("servo.{}.{k}", s.name);
        if !(1..=252).contains(&s.id) {
            return Err(KeyError::new(
                key("id"),
                format!("{} is not a bus ID (1-252)", s.id),
            ));
        }
        if s.direction != 1 && s.direction != -1 {
            let why = format!(
                "{} is neither 1 nor -1 (-1: mounted the other way)",
                s.direction
            );
            return Err(KeyError::new(key("direction"), why));
        }
        if !(s.offset_rad.is_finite() && s.offset_rad.abs() <= std::f64::consts::PI) {
            let why = format!("{} is not an angle in [-pi, pi]", s.offset_rad);
            return Err(KeyError::new(key("offset_rad"), why));
        }
        if let Some(l) = s.limits {
            clawrl_config::check_interval(&key("limits"), l, -10.0, 10.0)?;
        }
        if !self.servo_model.contains_key(&s.model) {
            let why = format!("names no [servo_model.{}] table", s.model);
            return Err(KeyError::new(key("model"), why));
        }
        if let Some(p) = &s.pwm
            && !self.pwm_model.contains_key(&p.model)
        {
            let why = format!("names no [pwm_model.{}] table", p.model);
            return Err(KeyError::new(key("pwm.model"), why));
        }
        if !self.action_scale.contains_key(&s.kind) {
            let why = format!("is {}, and action_scale has no {0} entry", s.kind.as_str());
            return Err(KeyError::new(key("kind"), why));
        }
        Ok(())
    }

    /// Names, joints, bus IDs and PWM channels are each used once.
    fn check_unique(&self) -> Result<(), KeyError> {
        let mut names = BTreeMap::new();
        let mut joints = BTreeMap::new();
        let mut ids = BTreeMap::new();
        let mut channels = BTreeMap::new();
        for s in &self.servo {
            let key = |k: &str| format!("servo.{}.{k}", s.name);
            let twice = |what: &str, other: &str| format!("{what} is also servo {other}'s");
            if let Some(o) = names.insert(s.name.as_str(), s.name.as_str()) {
                return Err(KeyError::new(key("name"), twice("the name", o)));
            }
            if let Some(o) = joints.insert(s.joint.as_str(), s.name.as_str()) {
                return Err(KeyError::new(
                    key("joint"),
                    twice(&format!("joint `{}`", s.joint), o),
                ));
            }
            if let Some(o) = ids.insert(s.id, s.name.as_str()) {
                return Err(KeyError::new(
                    key("id"),
                    twice(&format!("bus ID {}", s.id), o),
                ));
            }
            if let Some(p) = &s.pwm
                && let Some(o) = channels.insert(p.channel, s.name.as_str())
            {
                let what = format!("PWM channel {}", p.channel);
                return Err(KeyError::new(key("pwm.channel"), twice(&what, o)));
            }
        }
        Ok(())
    }

    /// Feet have distinct names, and a foot's claw is a claw servo of the description.
    fn check_feet(&self) -> Result<(), KeyError> {
        let mut seen = BTreeSet::new();
        for f in &self.foot {
            if !seen.insert(f.name.as_str()) {
                return Err(KeyError::new(format!("foot.{}", f.name), "is named twice"));
            }
            if let Some(c) = &f.claw {
                let ok = self
                    .servo
                    .iter()
                    .any(|s| &s.name == c && s.kind == JointKind::Claw);
                if !ok {
                    let why = format!("{c:?} is no servo of kind claw");
                    return Err(KeyError::new(format!("foot.{}.claw", f.name), why));
                }
            }
        }
        Ok(())
    }
}
