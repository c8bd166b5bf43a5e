//! The hardware the core needs beyond embedded-hal's traits: a clock, servo feedback (ADC on
//! the servo potentiometer, current shunt and thermistor), the supply monitor and the watchdog
//! peripheral. Boards implement them; tests use fakes; the virtual board backs them with a
//! servo model (later MuJoCo).

/// Monotonic microseconds since boot.
pub trait Clock {
    fn now_us(&self) -> u64;
}

/// What one servo's sensors read.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ServoSample {
    /// Joint angle in rad, already through the servo's calibration.
    pub position_rad: f32,
    pub current_ma: f32,
    pub temperature_c: f32,
}

/// Servo feedback, one call per servo per tick.
pub trait ServoFeedback {
    fn sample(&mut self, servo: usize) -> ServoSample;
}

/// Supply voltage of the servo rail.
pub trait SupplyMonitor {
    fn supply_mv(&mut self) -> u16;
}

/// The independent watchdog peripheral: fed once per tick, it resets the chip if the loop
/// hangs.
pub trait HardwareWatchdog {
    fn feed(&mut self);
}

/// A watchdog for targets without one (host builds).
pub struct NoWatchdog;

impl HardwareWatchdog for NoWatchdog {
    fn feed(&mut self) {}
}
