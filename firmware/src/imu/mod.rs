//! Inertial measurement: a sample type, the trait every IMU source implements (a chip driver,
//! the virtual board's model, the HIL physics), and the orientation filter.

pub mod filter;
pub mod mpu6050;

pub use filter::OrientationFilter;

/// Body-frame rates and specific force.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ImuSample {
    pub gyro_rad_s: [f32; 3],
    pub accel_m_s2: [f32; 3],
}

/// The IMU could not be read (bus error, wrong chip, not ready).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImuError;

pub trait Imu {
    fn read(&mut self) -> Result<ImuSample, ImuError>;
}
