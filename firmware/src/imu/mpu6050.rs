//! Driver for the InvenSense MPU-6050 (and register-compatible MPU-6500/9250) over embedded-hal
//! `I2c`: +-8 g and +-1000 deg/s, one 14-byte burst read per sample.

use super::{Imu, ImuError, ImuSample};
use embedded_hal::i2c::I2c;

pub const DEFAULT_ADDRESS: u8 = 0x68;

mod reg {
    pub const SMPLRT_DIV: u8 = 0x19;
    pub const CONFIG: u8 = 0x1A;
    pub const GYRO_CONFIG: u8 = 0x1B;
    pub const ACCEL_CONFIG: u8 = 0x1C;
    pub const ACCEL_XOUT_H: u8 = 0x3B;
    pub const PWR_MGMT_1: u8 = 0x6B;
    pub const WHO_AM_I: u8 = 0x75;
}

/// WHO_AM_I answers of the chips this driver speaks to.
const KNOWN_CHIPS: [u8; 3] = [0x68, 0x70, 0x71];
/// +-8 g: 4096 LSB per g.
const ACCEL_SCALE: f32 = 9.80665 / 4096.0;
/// +-1000 deg/s: 32.8 LSB per deg/s.
const GYRO_SCALE: f32 = core::f32::consts::PI / 180.0 / 32.8;

pub struct Mpu6050<I> {
    i2c: I,
    address: u8,
}

impl<I: I2c> Mpu6050<I> {
    /// Checks the chip's identity, wakes it on the gyro clock and sets ranges and a 44 Hz
    /// low-pass (the legs' impacts alias badly without one).
    pub fn new(mut i2c: I, address: u8) -> Result<Self, ImuError> {
        let mut who = [0u8];
        i2c.write_read(address, &[reg::WHO_AM_I], &mut who)
            .map_err(|_| ImuError)?;
        if !KNOWN_CHIPS.contains(&who[0]) {
            return Err(ImuError);
        }
        let setup: [[u8; 2]; 5] = [
            [reg::PWR_MGMT_1, 0x01],
            [reg::SMPLRT_DIV, 0x00],
            [reg::CONFIG, 0x03],
            [reg::GYRO_CONFIG, 0x10],
            [reg::ACCEL_CONFIG, 0x10],
        ];
        for write in setup {
            i2c.write(address, &write).map_err(|_| ImuError)?;
        }
        Ok(Self { i2c, address })
    }

    pub fn release(self) -> I {
        self.i2c
    }
}

impl<I: I2c> Imu for Mpu6050<I> {
    fn read(&mut self) -> Result<ImuSample, ImuError> {
        let mut raw = [0u8; 14];
        self.i2c
            .write_read(self.address, &[reg::ACCEL_XOUT_H], &mut raw)
            .map_err(|_| ImuError)?;
        let word = |i: usize| i16::from_be_bytes([raw[2 * i], raw[2 * i + 1]]) as f32;
        // Words: accel x y z, temperature, gyro x y z.
        Ok(ImuSample {
            accel_m_s2: [
                word(0) * ACCEL_SCALE,
                word(1) * ACCEL_SCALE,
                word(2) * ACCEL_SCALE,
            ],
            gyro_rad_s: [
                word(4) * GYRO_SCALE,
                word(5) * GYRO_SCALE,
                word(6) * GYRO_SCALE,
            ],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use embedded_hal_mock::eh1::i2c::{Mock, Transaction};

    fn setup_transactions() -> Vec<Transaction> {
        vec![
            Transaction::write_read(0x68, vec![0x75], vec![0x68]),
            Transaction::write(0x68, vec![0x6B, 0x01]),
            Transaction::write(0x68, vec![0x19, 0x00]),
            Transaction::write(0x68, vec![0x1A, 0x03]),
            Transaction::write(0x68, vec![0x1B, 0x10]),
            Transaction::write(0x68, vec![0x1C, 0x10]),
        ]
    }

    #[test]
    fn configures_and_scales_a_burst_read() {
        let mut t = setup_transactions();
        // accel z = 4096 (1 g), gyro x = 328 (10 deg/s), gyro z = -328.
        let raw = vec![0, 0, 0, 0, 0x10, 0x00, 0, 0, 0x01, 0x48, 0, 0, 0xFE, 0xB8];
        t.push(Transaction::write_read(0x68, vec![0x3B], raw));
        let mut i2c = Mock::new(&t);
        let mut imu = Mpu6050::new(i2c.clone(), DEFAULT_ADDRESS).unwrap();
        let s = imu.read().unwrap();
        assert!((s.accel_m_s2[2] - 9.80665).abs() < 1e-4);
        assert!((s.gyro_rad_s[0] - 10f32.to_radians()).abs() < 1e-4);
        assert!((s.gyro_rad_s[2] + 10f32.to_radians()).abs() < 1e-4);
        i2c.done();
    }

    #[test]
    fn refuses_an_unknown_chip() {
        let t = [Transaction::write_read(0x68, vec![0x75], vec![0x12])];
        let mut i2c = Mock::new(&t);
        assert!(Mpu6050::new(i2c.clone(), DEFAULT_ADDRESS).is_err());
        i2c.done();
    }
}
