//! The robot's body for the virtual board: the simulator's quadruped, driven by the pulses on
//! the board's outputs and read by its sensors, one MuJoCo step at a time.
use clawrl_firmware::FirmwareConfig;
use clawrl_firmware::controller::Pulses;
use clawrl_firmware::hal::ServoSample;
use clawrl_firmware::imu::ImuSample;
use clawrl_firmware::virtual_board::{Plant, PlantReading};
use clawrl_robot::description::RobotDescription;
use clawrl_sim::quadruped::{NUM_SERVOS, QuadrupedEnv, TaskConfig};
use clawrl_sim::{Env, SimError};

/// Current a servo draws holding no load, and per N m of torque (a 30 kg-cm hobby servo).
const IDLE_MA: f64 = 80.0;
const MA_PER_NM: f64 = 900.0;

/// How the body's servos hang on the board: for each joint (the simulator's servo order), the
/// output channel its pulses arrive on (and its feedback leaves by) and the pulse law that
/// turns a pulse into its angle. A robot wired other than described is a wiring with another
/// channel, direction or offset than the board's table.
#[derive(Debug, Clone, PartialEq)]
pub struct Wiring {
    joints: Vec<WiredServo>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct WiredServo {
    channel: usize,
    center_us: f64,
    us_per_rad: f64,
    direction: f64,
    offset_rad: f64,
}

impl Wiring {
    /// The robot as `description` says it is wired: each servo's channel, direction and
    /// offset, by the joint names of `servo_names` (the simulator's servo order). The pulse
    /// law is the description's own (`Servo::joint_angle`), not the firmware's calibration.
    pub fn described(
        description: &RobotDescription,
        servo_names: &[String],
    ) -> Result<Self, String> {
        let joints = servo_names
            .iter()
            .map(|name| {
                let s = description
                    .servo(name)
                    .ok_or_else(|| format!("the description has no servo {name:?}"))?;
                let pwm = s
                    .pwm
                    .as_ref()
                    .ok_or_else(|| format!("servo {name:?} has no pwm"))?;
                let law = description
                    .pwm_models
                    .get(&pwm.model)
                    .ok_or_else(|| format!("servo {name:?}: no [pwm_model.{}]", pwm.model))?;
                Ok(WiredServo {
                    channel: usize::from(pwm.channel),
                    center_us: law.center_us,
                    us_per_rad: law.us_per_rad,
                    direction: f64::from(s.direction),
                    offset_rad: s.offset_rad,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        if joints.iter().any(|j| j.channel >= NUM_SERVOS) {
            return Err(format!("a channel beyond the board's {NUM_SERVOS}"));
        }
        Ok(Self { joints })
    }

    /// The robot wired as the board's own table says: servo `i` on its channel, with its
    /// calibration.
    pub fn of_board(firmware: &FirmwareConfig) -> Self {
        let joints = firmware
            .servos
            .iter()
            .map(|s| {
                let c = s.calibration;
                WiredServo {
                    channel: usize::from(s.channel),
                    center_us: f64::from(c.center_us),
                    us_per_rad: f64::from(c.us_per_rad),
                    direction: if c.reversed { -1.0 } else { 1.0 },
                    offset_rad: f64::from(c.trim_rad),
                }
            })
            .collect();
        Self { joints }
    }

    /// This wiring with the servos of joints `a` and `b` on each other's channels: two
    /// plugs swapped on the board.
    pub fn swapped(mut self, a: usize, b: usize) -> Self {
        let (ca, cb) = (self.joints[a].channel, self.joints[b].channel);
        self.joints[a].channel = cb;
        self.joints[b].channel = ca;
        self
    }

    /// This wiring with joint `j`'s servo mounted turning the other way.
    pub fn reversed(mut self, j: usize) -> Self {
        self.joints[j].direction = -self.joints[j].direction;
        self
    }

    /// The joint a pulse on `channel` moves, and the angle it commands.
    pub fn target(&self, channel: usize, pulse_us: f32) -> Option<(usize, f64)> {
        let j = self.joints.iter().position(|w| w.channel == channel)?;
        let w = &self.joints[j];
        let servo_rad = (f64::from(pulse_us) - w.center_us) / w.us_per_rad;
        Some((j, w.joint_angle(servo_rad)))
    }
}

impl WiredServo {
    /// The servo's own angle (what its potentiometer reads) at joint angle `joint_rad`.
    fn servo_angle(&self, joint_rad: f64) -> f64 {
        self.direction * (joint_rad + self.offset_rad)
    }

    /// The joint angle a board that believes this wiring makes of a servo angle.
    fn joint_angle(&self, servo_rad: f64) -> f64 {
        self.direction * servo_rad - self.offset_rad
    }
}

pub struct MujocoBody {
    env: QuadrupedEnv,
    /// How the servos really hang on the board.
    wiring: Wiring,
    /// How the board's table says they hang: what it makes of the feedback it reads.
    believed: Wiring,
    /// Simulated time the board has run that physics has not yet stepped.
    owed_s: f64,
    steps: u64,
    /// Each servo's target from the board's last pulses (scratch, one per servo: the board
    /// ticks every millisecond, so it is reused rather than allocated each tick).
    targets: Vec<Option<f64>>,
    /// The IMU answers (an `imu` fault in a scenario switches it off).
    pub imu_answers: bool,
    /// On a stand ([`on_stand`](Self::on_stand)): the torso held, the legs free.
    stand: bool,
    /// Targets waiting out the servos' own delay (physics steps), oldest first.
    delayed: std::collections::VecDeque<Vec<Option<f64>>>,
}

impl MujocoBody {
    /// The task's robot, reset with `seed` (the same episode parameters the pure simulation
    /// draws for that seed), its servos on the board's outputs as `wiring` says.
    /// `believed` is the board's table: feedback on a channel reads as the joint the board
    /// thinks is there, through the pulse law it thinks that servo has.
    pub fn new(
        task: &TaskConfig,
        seed: u64,
        wiring: Wiring,
        believed: Wiring,
    ) -> Result<Self, SimError> {
        // The firmware behind the bridge is the board here: the task's model of its sensor
        // path (what a policy is trained on) would only cost time each MuJoCo step.
        let mut task = task.clone();
        task.noise.board_sensor_path = false;
        let mut env = QuadrupedEnv::new(&task)?;
        env.reset_in_place(seed);
        let targets = vec![None; env.spec().action_dim];
        Ok(Self {
            env,
            targets,
            wiring,
            believed,
            owed_s: 0.0,
            steps: 0,
            imu_answers: true,
            stand: false,
            delayed: Default::default(),
        })
    }

    /// This body with the servos `path` describes (a `servo_model.toml`: each named servo's
    /// dynamics, and `latency_s` as the servos' own delay, whole physics steps): servos that
    /// differ from the model by amounts only the body knows.
    pub fn with_servos(mut self, path: &std::path::Path) -> Result<Self, SimError> {
        use clawrl_sim::quadruped::servo_model::ServoModelFile;
        let file = ServoModelFile::load(path)?;
        self.env.apply_servo_model(&file, path)?;
        let steps = (file.latency_s / self.env.physics_dt()).round() as usize;
        self.delayed = (0..steps).map(|_| self.targets.clone()).collect();
        Ok(self)
    }

    /// This body on a stand at its default pose: the torso held, the legs free.
    pub fn on_stand(mut self) -> Self {
        let pose = self.env.robot().default_pose.clone();
        self.env.put_on_stand(&pose);
        self.stand = true;
        self
    }

    pub fn env(&self) -> &QuadrupedEnv {
        &self.env
    }

    pub fn env_mut(&mut self) -> &mut QuadrupedEnv {
        &mut self.env
    }

    /// MuJoCo steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The joint a pulse on `channel` moves and the angle it commands, as the servo turns it.
    pub fn target(&self, channel: usize, pulse_us: f32) -> Option<(usize, f64)> {
        self.wiring.target(channel, pulse_us)
    }

    /// The joint limits (rad) in the simulator's servo order.
    pub fn joint_limits(&self) -> &[[f64; 2]] {
        &self.env.robot().layout.servo_range
    }

    /// What the board makes of joint `j`'s feedback at angle `joint_rad`: the joint itself
    /// where the wiring is as believed (bit for bit), else the servo's own angle read through
    /// the law the board believes for that channel.
    fn feedback(&self, j: usize, joint_rad: f64) -> f64 {
        let real = &self.wiring.joints[j];
        if self.believed.joints.get(j) == Some(real) {
            return joint_rad;
        }
        let believed = self
            .believed
            .joints
            .iter()
            .find(|b| b.channel == real.channel);
        believed.map_or(joint_rad, |b| b.joint_angle(real.servo_angle(joint_rad)))
    }

    /// The sensors, each servo's on the input of its channel.
    fn reading(&self) -> PlantReading {
        let s = self.env.read_sensors();
        let torque = self.env.servo_torques();
        let mut servos = [ServoSample::default(); NUM_SERVOS];
        for (j, w) in self.wiring.joints.iter().enumerate() {
            servos[w.channel] = ServoSample {
                position_rad: self.feedback(j, s.joint_pos[j]) as f32,
                current_ma: (IDLE_MA + MA_PER_NM * torque[j].abs()) as f32,
                temperature_c: 35.0,
            };
        }
        let imu = self.imu_answers.then(|| ImuSample {
            gyro_rad_s: s.gyro.map(|g| g as f32),
            accel_m_s2: s.acc.map(|a| a as f32),
        });
        PlantReading {
            servos,
            imu,
            supply_mv: 7400,
        }
    }
}

impl MujocoBody {
    /// One physics step, the targets through the servos' delay line (empty unless the body's
    /// servos have a delay of their own), on the stand or not.
    fn step_physics(&mut self) {
        let popped;
        let due = if self.delayed.is_empty() {
            &self.targets
        } else {
            self.delayed.push_back(self.targets.clone());
            popped = self
                .delayed
                .pop_front()
                .expect("the delay line holds its length");
            &popped
        };
        if self.stand {
            self.env.step_on_stand(due);
        } else {
            self.env.step_servos(due);
        }
    }
}

impl Plant for MujocoBody {
    fn step(&mut self, dt_s: f32, pulses_us: &Pulses) -> PlantReading {
        self.targets.fill(None);
        for (channel, pulse) in pulses_us.iter().enumerate() {
            if let Some((j, angle)) = pulse.and_then(|p| self.wiring.target(channel, p)) {
                self.targets[j] = Some(angle);
            }
        }
        self.owed_s += f64::from(dt_s);
        let dt = self.env.physics_dt();
        // Physics steps whole MuJoCo steps (2 ms) under the board's 1 ms ticks.
        while self.owed_s >= dt * (1.0 - 1e-6) {
            self.step_physics();
            self.owed_s -= dt;
            self.steps += 1;
        }
        self.reading()
    }
}
