//! Velocity commands from a gamepad on the robot, through the Linux joystick interface
//! (`/dev/input/jsN`, the `joydev` driver): no system library, just the device file.
//!
//! The device delivers 8-byte little-endian events, `struct js_event { u32 time_ms; i16 value;
//! u8 type; u8 number; }`: type 0x01 a button (value 1 pressed, 0 released), 0x02 an axis
//! (-32767..32767; a stick pushed up or left reads negative), either with the flag 0x80
//! (`JS_EVENT_INIT`) for the initial state the driver sends on open, taken like any event.
//!
//! Once the device has delivered an event, every poll yields the sticks' velocity (a gamepad
//! held still still means "this command"), so the guard's timeout guards only the device going
//! silent or away. The stop and e-stop buttons yield [`Input::Stop`] and [`Input::EStop`] when
//! pressed. A read that fails (`ENODEV`: unplugged), or an end of file after the device has
//! delivered an event (a pipe whose writer closed; a joystick device never ends while it is
//! plugged in), yields [`Input::Lost`], and so does every poll after it. An end of file before
//! any event (a pipe nobody writes to yet) is nothing new: no velocity is yielded, and the
//! guard's timeout applies.
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::Input;

/// Bytes in one `js_event`.
pub const EVENT_LEN: usize = 8;
pub const JS_EVENT_BUTTON: u8 = 0x01;
pub const JS_EVENT_AXIS: u8 = 0x02;
pub const JS_EVENT_INIT: u8 = 0x80;
/// Full scale of an axis.
pub const AXIS_MAX: f64 = 32767.0;

/// Which axes and buttons mean what, and how far the sticks command (the config's `[command]`).
#[derive(Debug, Clone, PartialEq)]
pub struct GamepadMap {
    /// Axis numbers of forward, lateral and yaw.
    pub axes: [u8; 3],
    /// Fraction of full scale around the centre that reads 0 (0 to 0.9).
    pub deadzone: f64,
    pub stop_button: u8,
    pub estop_button: u8,
    /// `[low, high]` per axis: a stick at full scale commands the high end (forward, left,
    /// turning left) or the low end (back, right, turning right).
    pub ranges: [[f64; 2]; 3],
}

/// One decoded `js_event`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub time_ms: u32,
    pub value: i16,
    /// Type with the init flag (0x80) cleared.
    pub kind: u8,
    pub number: u8,
}

impl Event {
    pub fn decode(b: &[u8; EVENT_LEN]) -> Self {
        Self {
            time_ms: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            value: i16::from_le_bytes([b[4], b[5]]),
            kind: b[6] & !JS_EVENT_INIT,
            number: b[7],
        }
    }

    /// The bytes the driver would send (tests, scripts).
    pub fn encode(&self) -> [u8; EVENT_LEN] {
        let mut b = [0u8; EVENT_LEN];
        b[..4].copy_from_slice(&self.time_ms.to_le_bytes());
        b[4..6].copy_from_slice(&self.value.to_le_bytes());
        b[6] = self.kind;
        b[7] = self.number;
        b
    }
}

/// The sticks and buttons as inputs: fed events, asked for the velocity.
#[derive(Debug, Clone)]
pub struct Decoder {
    map: GamepadMap,
    /// Raw values of the forward, lateral and yaw axes.
    sticks: [i16; 3],
}

impl Decoder {
    pub fn new(map: GamepadMap) -> Self {
        Self {
            map,
            sticks: [0; 3],
        }
    }

    /// Takes one event; a pressed stop or e-stop button is pushed to `out` at once.
    pub fn event(&mut self, e: Event, out: &mut Vec<Input>) {
        match e.kind {
            JS_EVENT_AXIS => {
                for (s, &a) in self.sticks.iter_mut().zip(&self.map.axes) {
                    if a == e.number {
                        *s = e.value;
                    }
                }
            }
            JS_EVENT_BUTTON if e.value == 1 => {
                if e.number == self.map.estop_button {
                    out.push(Input::EStop);
                } else if e.number == self.map.stop_button {
                    out.push(Input::Stop);
                }
            }
            _ => {}
        }
    }

    /// The sticks' command: each axis outside the dead zone, rescaled so that the edge of the
    /// dead zone is 0 and full scale 1, pushed up or left positive, toward that end of its range.
    pub fn velocity(&self) -> [f64; 3] {
        let dz = self.map.deadzone;
        std::array::from_fn(|i| {
            // Up and left read negative: forward, lateral left and yaw left are positive.
            let v = (-f64::from(self.sticks[i]) / AXIS_MAX).clamp(-1.0, 1.0);
            if v.abs() <= dz {
                return 0.0;
            }
            let s = v.signum() * (v.abs() - dz) / (1.0 - dz);
            let [lo, hi] = self.map.ranges[i];
            if s > 0.0 { s * hi } else { -s * lo }
        })
    }
}

/// The joystick device, read without blocking once per control period.
pub struct GamepadSource {
    file: File,
    path: PathBuf,
    decoder: Decoder,
    /// Bytes of an event not yet whole.
    partial: [u8; EVENT_LEN],
    partial_len: usize,
    /// The device has delivered an event: its state is known.
    seen: bool,
    /// The device failed or ended: every poll says [`Input::Lost`].
    gone: bool,
}

impl GamepadSource {
    /// Opens `path` read-only and non-blocking.
    pub fn open(path: &Path, map: GamepadMap) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        Ok(Self {
            file,
            path: path.to_path_buf(),
            decoder: Decoder::new(map),
            partial: [0; EVENT_LEN],
            partial_len: 0,
            seen: false,
            gone: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the device failed or ended ([`Input::Lost`] from now on).
    pub fn gone(&self) -> bool {
        self.gone
    }

    /// Every whole event waiting (a partial one's bytes are kept for the next poll), as inputs,
    /// then the sticks' velocity once the device has delivered an event; never blocks. A failed
    /// read, or an end of file after an event, is [`Input::Lost`], now and at every later poll.
    pub fn poll(&mut self, out: &mut Vec<Input>) {
        if self.gone {
            out.push(Input::Lost);
            return;
        }
        let mut buf = [0u8; EVENT_LEN * 32];
        loop {
            let have = self.partial_len;
            buf[..have].copy_from_slice(&self.partial[..have]);
            match self.file.read(&mut buf[have..]) {
                Ok(0) if self.seen => {
                    self.gone = true;
                    out.push(Input::Lost);
                    return;
                }
                // No writer yet (a pipe): nothing new.
                Ok(0) => break,
                Ok(n) => {
                    let end = have + n;
                    let whole = end - end % EVENT_LEN;
                    for chunk in buf[..whole].chunks_exact(EVENT_LEN) {
                        let e = Event::decode(chunk.try_into().expect("8 bytes"));
                        self.decoder.event(e, out);
                        self.seen = true;
                    }
                    self.partial_len = end - whole;
                    self.partial[..self.partial_len].copy_from_slice(&buf[whole..end]);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.gone = true;
                    out.push(Input::Lost);
                    return;
                }
            }
        }
        if self.seen {
            out.push(Input::Velocity(self.decoder.velocity()));
        }
    }
}
