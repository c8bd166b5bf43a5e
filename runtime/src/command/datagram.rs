//! The velocity-command datagram (UDP), little-endian, 24 bytes:
//!
//! | bytes | field |
//! |---|---|
//! | 0-3 | magic `CLWC` |
//! | 4 | version, 1 |
//! | 5 | flags: bit 0 e-stop, bit 1 stop; other bits 0 |
//! | 6-7 | reserved, 0 |
//! | 8-11 | sequence number (u32); a datagram not newer than the last one taken is dropped |
//! | 12-15, 16-19, 20-23 | forward m/s, lateral m/s, yaw rate rad/s (f32) |
//!
//! From a script: `struct.pack("<4sBBHIfff", b"CLWC", 1, 0, 0, seq, vx, vy, wz)`.
use super::Input;

pub const MAGIC: &[u8; 4] = b"CLWC";
pub const VERSION: u8 = 1;
pub const LEN: usize = 24;
pub const FLAG_ESTOP: u8 = 1;
pub const FLAG_STOP: u8 = 2;

/// One datagram's content.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Datagram {
    pub seq: u32,
    pub flags: u8,
    pub velocity: [f32; 3],
}

/// Why a datagram was dropped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DatagramError {
    #[error("{0} bytes, a command datagram has {LEN}")]
    Length(usize),
    #[error("no CLWC magic")]
    Magic,
    #[error("version {0}, this runtime reads {VERSION}")]
    Version(u8),
    #[error("unknown flags {0:#04x}")]
    Flags(u8),
}

impl Datagram {
    pub fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[..4].copy_from_slice(MAGIC);
        b[4] = VERSION;
        b[5] = self.flags;
        b[8..12].copy_from_slice(&self.seq.to_le_bytes());
        for (i, v) in self.velocity.iter().enumerate() {
            b[12 + 4 * i..16 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    pub fn decode(b: &[u8]) -> Result<Self, DatagramError> {
        if b.len() != LEN {
            return Err(DatagramError::Length(b.len()));
        }
        if &b[..4] != MAGIC {
            return Err(DatagramError::Magic);
        }
        if b[4] != VERSION {
            return Err(DatagramError::Version(b[4]));
        }
        if b[5] & !(FLAG_ESTOP | FLAG_STOP) != 0 {
            return Err(DatagramError::Flags(b[5]));
        }
        let f = |i: usize| f32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Ok(Self {
            seq: u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")),
            flags: b[5],
            velocity: [f(12), f(16), f(20)],
        })
    }

    /// What the guard is told: an e-stop before a stop before the velocity.
    pub fn input(&self) -> Input {
        if self.flags & FLAG_ESTOP != 0 {
            Input::EStop
        } else if self.flags & FLAG_STOP != 0 {
            Input::Stop
        } else {
            Input::Velocity(self.velocity.map(f64::from))
        }
    }
}
