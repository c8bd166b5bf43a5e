//! What crosses the serial link, in the runtime's units: the board's robot-state block
//! (PROTOCOL.md's recommended READ of 208 bytes at 80 from ID 100) decoded into SI sensor
//! values, and servo targets in radians encoded as Goal Position ticks that can never leave the
//! joint limits, not even by the half tick rounding could add.
use clawrl_protocol::table::board;
use clawrl_protocol::units::registers::{ACCEL_M_S2, GYRO_RAD_S, QUAT};
use clawrl_protocol::units::{self, ids};
use clawrl_robot::OnboardSensors;
use clawrl_robot::quadruped::NUM_SERVOS;

/// One reading of the whole robot.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BoardState {
    pub sensors: OnboardSensors,
    /// Servo currents, mA.
    pub current_ma: [i16; NUM_SERVOS],
    /// The board's control-loop tick counter and uptime.
    pub tick: u32,
    pub uptime_us: u32,
    /// The status packet's alert bit: the board is in fault or e-stop.
    pub alert: bool,
}

fn i16_at(d: &[u8], addr: u16) -> i16 {
    let i = usize::from(addr - board::ROBOT_STATE);
    i16::from_le_bytes([d[i], d[i + 1]])
}

fn u32_at(d: &[u8], addr: u16) -> u32 {
    let i = usize::from(addr - board::ROBOT_STATE);
    u32::from_le_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]])
}

/// Decodes the data of the robot-state READ; `None` when it has the wrong length.
pub fn decode_state(data: &[u8], alert: bool) -> Option<BoardState> {
    if data.len() != usize::from(board::ROBOT_STATE_LEN) {
        return None;
    }
    let xyz = |base: u16, scale: f64| {
        std::array::from_fn(|k| f64::from(i16_at(data, base + 2 * k as u16)) * scale)
    };
    let servo = |i: usize, field: u16| {
        i16_at(
            data,
            board::SERVO_MIRROR + i as u16 * board::SERVO_MIRROR_ENTRY_LEN + field,
        )
    };
    let sensors = OnboardSensors {
        gyro: xyz(board::GYRO, GYRO_RAD_S),
        acc: xyz(board::ACCEL, ACCEL_M_S2),
        quat: std::array::from_fn(|k| {
            f64::from(i16_at(data, board::QUATERNION + 2 * k as u16)) * QUAT
        }),
        joint_pos: std::array::from_fn(|i| f64::from(units::ticks_to_rad(i32::from(servo(i, 0))))),
        joint_vel: std::array::from_fn(|i| {
            f64::from(units::velocity_units_to_rad_per_s(i32::from(servo(i, 2))))
        }),
    };
    Some(BoardState {
        sensors,
        current_ma: std::array::from_fn(|i| servo(i, 4)),
        tick: u32_at(data, board::TICK_COUNT),
        uptime_us: u32_at(data, board::UPTIME_US),
        alert,
    })
}

/// The inverse of [`decode_state`] for the fields the runtime reads (tests and the replay tool
/// build state blocks with it).
pub fn encode_state(s: &BoardState) -> [u8; board::ROBOT_STATE_LEN as usize] {
    let mut d = [0u8; board::ROBOT_STATE_LEN as usize];
    let mut put = |addr: u16, v: i16| {
        let i = usize::from(addr - board::ROBOT_STATE);
        d[i..i + 2].copy_from_slice(&v.to_le_bytes());
    };
    let q = |x: f64, scale: f64| (x / scale).round().clamp(-32768.0, 32767.0) as i16;
    for k in 0..3 {
        put(board::GYRO + 2 * k as u16, q(s.sensors.gyro[k], GYRO_RAD_S));
        put(board::ACCEL + 2 * k as u16, q(s.sensors.acc[k], ACCEL_M_S2));
    }
    for k in 0..4 {
        put(board::QUATERNION + 2 * k as u16, q(s.sensors.quat[k], QUAT));
    }
    for i in 0..NUM_SERVOS {
        let base = board::SERVO_MIRROR + i as u16 * board::SERVO_MIRROR_ENTRY_LEN;
        put(
            base,
            units::rad_to_ticks(s.sensors.joint_pos[i] as f32) as i16,
        );
        put(
            base + 2,
            units::rad_per_s_to_velocity_units(s.sensors.joint_vel[i] as f32) as i16,
        );
        put(base + 4, s.current_ma[i]);
    }
    let mut put32 = |addr: u16, v: u32| {
        let i = usize::from(addr - board::ROBOT_STATE);
        d[i..i + 4].copy_from_slice(&v.to_le_bytes());
    };
    put32(board::TICK_COUNT, s.tick);
    put32(board::UPTIME_US, s.uptime_us);
    d
}

/// Goal Position ticks per servo, each inside its joint's limits after the firmware converts it
/// back to radians.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalEncoder {
    ticks: [[i32; 2]; NUM_SERVOS],
}

impl GoalEncoder {
    /// `limits` in radians, servo order.
    pub fn new(limits: &[[f64; 2]; NUM_SERVOS]) -> Self {
        let inside = |[lo, hi]: [f64; 2]| {
            let (lo, hi) = (lo as f32, hi as f32);
            // The nearest tick, then one step inwards if rounding put it outside.
            let mut a = units::rad_to_ticks(lo);
            if units::ticks_to_rad(a) < lo {
                a += 1;
            }
            let mut b = units::rad_to_ticks(hi);
            if units::ticks_to_rad(b) > hi {
                b -= 1;
            }
            [a, b.max(a)]
        };
        Self {
            ticks: std::array::from_fn(|i| inside(limits[i])),
        }
    }

    /// The tick range servo `i` may be sent.
    pub fn tick_range(&self, i: usize) -> [i32; 2] {
        self.ticks[i]
    }

    /// Ticks for `targets` (rad), clamped into each servo's range. The caller has already
    /// refused non-finite targets; a NaN here still lands on the lower limit, never outside.
    pub fn encode(&self, targets: &[f64; NUM_SERVOS], out: &mut [i32; NUM_SERVOS]) {
        for i in 0..NUM_SERVOS {
            let [lo, hi] = self.ticks[i];
            // Bounded first: ticks of a huge angle would overflow i32.
            let t = units::rad_to_ticks(targets[i].clamp(-10.0, 10.0) as f32);
            out[i] = if targets[i].is_nan() {
                lo
            } else {
                t.clamp(lo, hi)
            };
        }
    }
}

/// The Dynamixel ID of servo `i` (action order).
pub fn servo_id(i: usize) -> u8 {
    ids::servo_id(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawrl_robot::quadruped::JOINT_LIMITS;

    #[test]
    fn a_state_block_round_trips_within_one_wire_step() {
        let s = BoardState {
            sensors: OnboardSensors {
                gyro: [0.5, -1.25, 3.0],
                quat: [0.9, 0.1, -0.2, 0.3],
                acc: [0.1, -0.2, 9.81],
                joint_pos: std::array::from_fn(|i| i as f64 * 0.1 - 0.8),
                joint_vel: std::array::from_fn(|i| i as f64 * 0.3 - 2.0),
            },
            current_ma: std::array::from_fn(|i| i as i16 * 10 - 50),
            tick: 123_456,
            uptime_us: 7_654_321,
            alert: true,
        };
        let d = encode_state(&s);
        // Bytes: gyro x at offset 0 is 500 mrad/s, little-endian.
        assert_eq!(&d[0..2], &500i16.to_le_bytes());
        let back = decode_state(&d, true).unwrap();
        for k in 0..3 {
            assert!((back.sensors.gyro[k] - s.sensors.gyro[k]).abs() <= 0.5e-3);
            assert!((back.sensors.acc[k] - s.sensors.acc[k]).abs() <= 0.005);
        }
        let tick = std::f64::consts::TAU / 4096.0;
        for i in 0..NUM_SERVOS {
            assert!(
                (back.sensors.joint_pos[i] - s.sensors.joint_pos[i]).abs() <= tick / 2.0 + 1e-6
            );
        }
        assert_eq!(
            (back.tick, back.uptime_us, back.alert),
            (123_456, 7_654_321, true)
        );
        assert_eq!(back.current_ma, s.current_ma);
        assert!(decode_state(&d[1..], false).is_none());
    }

    #[test]
    fn no_encoded_goal_decodes_outside_its_limits() {
        let e = GoalEncoder::new(&JOINT_LIMITS);
        let mut out = [0; NUM_SERVOS];
        let probes = [
            -1e9,
            -10.0,
            -2.6,
            -1.2,
            -0.6,
            0.0,
            0.6,
            1.2,
            1.8,
            10.0,
            1e9,
            f64::NAN,
        ];
        for p in probes {
            for delta in [-1e-4, 0.0, 1e-4] {
                e.encode(&[p + delta; NUM_SERVOS], &mut out);
                for i in 0..NUM_SERVOS {
                    let rad = units::ticks_to_rad(out[i]);
                    let [lo, hi] = JOINT_LIMITS[i];
                    assert!(
                        rad >= lo as f32 && rad <= hi as f32,
                        "servo {i}: {p}+{delta} -> {} ticks = {rad} rad outside [{lo}, {hi}]",
                        out[i]
                    );
                }
            }
        }
        // A target inside the limits is sent as its nearest tick.
        e.encode(&[0.0; NUM_SERVOS], &mut out);
        assert_eq!(out[0], units::CENTER_TICKS);
    }
}
