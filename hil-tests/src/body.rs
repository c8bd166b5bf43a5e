//! The robot's body for the virtual board: the simulator's quadruped, driven by the pulses on
//! the board's outputs and read by its sensors, one MuJoCo step at a time.
use clawrl_firmware::FirmwareConfig;
use clawrl_firmware::controller::Pulses;
use clawrl_firmware::hal::ServoSample;
use clawrl_firmware::imu::ImuSample;
use clawrl_firmware::pwm::PulseCalibration;
use clawrl_firmware::virtual_board::{Plant, PlantReading};
use clawrl_sim::quadruped::{NUM_SERVOS, QuadrupedEnv, TaskConfig};
use clawrl_sim::{Env, SimError};

/// Current a servo draws holding no load, and per N m of torque (a 30 kg-cm hobby servo).
const IDLE_MA: f64 = 80.0;
const MA_PER_NM: f64 = 900.0;

pub struct MujocoBody {
    env: QuadrupedEnv,
    calibrations: [PulseCalibration; NUM_SERVOS],
    /// Simulated time the board has run that physics has not yet stepped.
    owed_s: f64,
    steps: u64,
    /// The IMU answers (an `imu` fault in a scenario switches it off).
    pub imu_answers: bool,
}

impl MujocoBody {
    /// The task's robot, reset with `seed` (the same episode parameters the pure simulation
    /// draws for that seed), behind a board configured by `firmware`.
    pub fn new(task: &TaskConfig, seed: u64, firmware: &FirmwareConfig) -> Result<Self, SimError> {
        // The firmware behind the bridge is the board here: the task's model of its sensor
        // path (what a policy is trained on) would only cost time each MuJoCo step.
        let mut task = task.clone();
        task.noise.board_sensor_path = false;
        let mut env = QuadrupedEnv::new(&task)?;
        env.reset_in_place(seed);
        Ok(Self {
            env,
            calibrations: firmware.servos.map(|s| s.calibration),
            owed_s: 0.0,
            steps: 0,
            imu_answers: true,
        })
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

    /// The joint angle a pulse commands (the servo's own frame), as a servo turns it.
    pub fn target(&self, servo: usize, pulse_us: f32) -> f64 {
        f64::from(self.calibrations[servo].angle_rad(pulse_us))
    }

    fn reading(&self) -> PlantReading {
        let s = self.env.read_sensors();
        let torque = self.env.servo_torques();
        let servos = std::array::from_fn(|i| ServoSample {
            position_rad: s.joint_pos[i] as f32,
            current_ma: (IDLE_MA + MA_PER_NM * torque[i].abs()) as f32,
            temperature_c: 35.0,
        });
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

impl Plant for MujocoBody {
    fn step(&mut self, dt_s: f32, pulses_us: &Pulses) -> PlantReading {
        let targets: [Option<f64>; NUM_SERVOS] =
            std::array::from_fn(|i| pulses_us[i].map(|p| self.target(i, p)));
        self.owed_s += f64::from(dt_s);
        let dt = self.env.physics_dt();
        // Physics steps whole MuJoCo steps (2 ms) under the board's 1 ms ticks.
        while self.owed_s >= dt * (1.0 - 1e-6) {
            self.env.step_servos(&targets);
            self.owed_s -= dt;
            self.steps += 1;
        }
        self.reading()
    }
}
