//! Live velocity commands and the rules that keep them safe (issue 42): `run` drives a
//! [`Live`] source once per control cycle when the config's `[command]` says so.
//!
//! A source (the network's [`udp::UdpSource`], a gamepad's [`gamepad::GamepadSource`]) yields [`Input`]s; the
//! [`CommandGuard`] turns them, once per control period, into the command the policy sees and
//! the requests the safety machine must act on:
//! - no fresh command for `timeout` -> zero command (the robot stands), and `stop_after` later
//!   the stop sequence;
//! - every command clipped to the ranges the policy was trained on;
//! - the command moves toward its target at most `max_rate` per second on each axis;
//! - a source that disappears (a gamepad unplugged) -> the stop sequence at once;
//! - an e-stop latches, as the board's does, until [`CommandGuard::clear_estop`].
//!
//! The guard counts control periods, not the wall clock, so a run in lockstep gives the same
//! answer at any load.
pub mod datagram;
pub mod gamepad;
pub mod udp;

/// What a command source says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Input {
    /// Forward m/s, lateral m/s, yaw rate rad/s.
    Velocity([f64; 3]),
    /// Stop: the robot stands, then the stop sequence.
    Stop,
    /// The e-stop button: latched.
    EStop,
    /// The source is gone (a gamepad unplugged, a socket closed).
    Lost,
}

/// What the safety machine must do this period, besides using the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Run the stop sequence (halt, fade out, lower, torque off).
    Stop,
    /// The e-stop is latched.
    EStop,
}

/// The guard's rules, from the runtime config and the bundle's command ranges.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandLimits {
    /// `[low, high]` per axis: the ranges the policy was trained on.
    pub ranges: [[f64; 2]; 3],
    /// Largest change of each axis per second.
    pub max_rate: [f64; 3],
    /// Without a fresh command this long (s), the command becomes zero.
    pub timeout_s: f64,
    /// Standing at zero this much longer (s) without a fresh command, the stop is requested.
    pub stop_after_s: f64,
    /// Control rate (Hz): the guard counts periods.
    pub rate_hz: f64,
}

/// The command the policy sees, and the requests to the safety machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Guarded {
    pub command: [f64; 3],
    pub request: Option<Request>,
}

#[derive(Debug, Clone)]
pub struct CommandGuard {
    limits: CommandLimits,
    /// Where the command is heading (clipped), and where it is.
    target: [f64; 3],
    command: [f64; 3],
    /// Periods since the last fresh command.
    quiet: u64,
    estop: bool,
    stop: bool,
    /// Commands refused (not finite).
    refused: u64,
}

impl CommandGuard {
    /// Starts at zero: nothing moves until a command arrives.
    pub fn new(limits: CommandLimits) -> Self {
        Self {
            limits,
            target: [0.0; 3],
            command: [0.0; 3],
            quiet: 0,
            estop: false,
            stop: false,
            refused: 0,
        }
    }

    /// Takes one input from a source (any number per period; the last velocity wins).
    pub fn push(&mut self, input: Input) {
        match input {
            Input::Velocity(v) if v.iter().all(|x| x.is_finite()) => {
                self.target = std::array::from_fn(|i| {
                    let [lo, hi] = self.limits.ranges[i];
                    v[i].clamp(lo, hi)
                });
                self.quiet = 0;
            }
            // A NaN or infinite command is refused; it does not count as fresh.
            Input::Velocity(_) => self.refused += 1,
            Input::Stop | Input::Lost => self.stop = true,
            Input::EStop => self.estop = true,
        }
    }

    /// One control period: the command the policy sees now, and what the safety machine must do.
    pub fn step(&mut self) -> Guarded {
        self.quiet = self.quiet.saturating_add(1);
        let periods = |s: f64| (s * self.limits.rate_hz).round() as u64;
        let timeout = periods(self.limits.timeout_s);
        if self.quiet > timeout || self.stop || self.estop {
            self.target = [0.0; 3];
        }
        if self.quiet > timeout + periods(self.limits.stop_after_s) {
            self.stop = true;
        }
        let dt = 1.0 / self.limits.rate_hz;
        for i in 0..3 {
            let step = self.limits.max_rate[i] * dt;
            let c = self.command[i];
            self.command[i] = self.target[i].clamp(c - step, c + step);
        }
        let request = if self.estop {
            Some(Request::EStop)
        } else if self.stop {
            Some(Request::Stop)
        } else {
            None
        };
        Guarded {
            command: self.command,
            request,
        }
    }

    /// Clears a latched e-stop: a deliberate act (a button held, a command typed), never a
    /// command arriving. The command restarts from zero.
    pub fn clear_estop(&mut self) {
        self.estop = false;
        self.stop = false;
        self.target = [0.0; 3];
        self.command = [0.0; 3];
    }

    pub fn refused(&self) -> u64 {
        self.refused
    }
}

/// Where [`Live`]'s inputs come from.
pub enum Source {
    Network(udp::UdpSource),
    Gamepad(gamepad::GamepadSource),
}

/// A command source and its guard, as `run` drives them once per control cycle.
pub struct Live {
    source: Source,
    guard: CommandGuard,
    inputs: Vec<Input>,
}

impl Live {
    /// Listens on `listen`; the guard starts at zero (nothing moves until a command comes).
    pub fn start(listen: std::net::SocketAddr, limits: CommandLimits) -> std::io::Result<Self> {
        Ok(Self::with_source(
            Source::Network(udp::UdpSource::bind(listen)?),
            limits,
        ))
    }

    /// Opens the joystick device `path` (non-blocking); the guard starts at zero.
    pub fn open_gamepad(
        path: &std::path::Path,
        map: gamepad::GamepadMap,
        limits: CommandLimits,
    ) -> std::io::Result<Self> {
        Ok(Self::with_source(
            Source::Gamepad(gamepad::GamepadSource::open(path, map)?),
            limits,
        ))
    }

    fn with_source(source: Source, limits: CommandLimits) -> Self {
        Self {
            source,
            guard: CommandGuard::new(limits),
            inputs: Vec::with_capacity(16),
        }
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    /// The network source's address (an error for a gamepad).
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        match &self.source {
            Source::Network(s) => s.local_addr(),
            Source::Gamepad(_) => Err(std::io::Error::other("a gamepad has no address")),
        }
    }

    /// Drains the source (never blocks) and steps the guard: this cycle's command and what it
    /// asks of the safety machine. A socket that fails, or a gamepad unplugged, is a lost
    /// source: the stop.
    pub fn cycle(&mut self) -> Guarded {
        self.inputs.clear();
        match &mut self.source {
            Source::Network(s) => {
                if s.poll(&mut self.inputs).is_err() {
                    self.inputs.push(Input::Lost);
                }
            }
            Source::Gamepad(g) => g.poll(&mut self.inputs),
        }
        for &i in &self.inputs {
            self.guard.push(i);
        }
        self.guard.step()
    }
}

#[cfg(test)]
mod tests;
