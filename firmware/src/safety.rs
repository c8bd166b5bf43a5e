//! The safety state machine: boot -> idle (torque off) -> enabled -> fault / e-stop. It moves only
//! on explicit commands or on faults, and faults latch until an explicit CLEAR, which returns to
//! idle, never straight to enabled. Neither traffic nor REBOOT clears a latched fault. The rules
//! as a table: PROTOCOL.md, "Safety rules"; `tests/safety_rules.rs` walks every row.

use crate::config::{FirmwareConfig, SafeBehaviour};
use clawrl_protocol::table::board::{command, fault, state};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SafetyState {
    Boot,
    Idle,
    Enabled,
    Fault,
    EStop,
}

impl SafetyState {
    pub fn register(self) -> u8 {
        match self {
            Self::Boot => state::BOOT,
            Self::Idle => state::IDLE,
            Self::Enabled => state::ENABLED,
            Self::Fault => state::FAULT,
            Self::EStop => state::ESTOP,
        }
    }
}

/// How the outputs are driven in the current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// Follow the goals (slew-limited, clamped).
    Track,
    Safe(SafeBehaviour),
}

/// A command the state machine refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused;

/// What a tick's sensor readings say about the robot's health.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Health {
    /// The first servo (index) above its temperature limit.
    pub over_temperature: Option<usize>,
    pub supply_mv: u16,
    pub imu_ok: bool,
    /// The first servo (index) whose position feedback is implausible this tick.
    pub bad_feedback: Option<usize>,
}

/// A fault that just latched: which flag, and which servo if one is to blame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tripped {
    pub flag: u16,
    pub servo: Option<usize>,
}

pub struct Safety {
    state: SafetyState,
    /// Latched causes (bits of `fault`).
    faults: u16,
    watchdog_timeout_us: u64,
    watchdog_behaviour: SafeBehaviour,
    last_command_us: u64,
    undervoltage_ticks: u16,
    imu_fail_ticks: u16,
    feedback_fail_ticks: u16,
}

impl Safety {
    pub fn new(config: &FirmwareConfig) -> Self {
        Self {
            state: SafetyState::Boot,
            faults: 0,
            watchdog_timeout_us: config.watchdog_ms as u64 * 1000,
            watchdog_behaviour: config.watchdog_behaviour,
            last_command_us: 0,
            undervoltage_ticks: 0,
            imu_fail_ticks: 0,
            feedback_fail_ticks: 0,
        }
    }

    pub fn state(&self) -> SafetyState {
        self.state
    }

    pub fn faults(&self) -> u16 {
        self.faults
    }

    pub fn watchdog_ms(&self) -> u16 {
        (self.watchdog_timeout_us / 1000) as u16
    }

    pub fn watchdog_behaviour(&self) -> SafeBehaviour {
        self.watchdog_behaviour
    }

    /// Sets the watchdog timeout, refusing values outside the configured range (0 included:
    /// the watchdog cannot be switched off).
    pub fn set_watchdog_ms(&mut self, ms: u16, config: &FirmwareConfig) -> Result<(), Refused> {
        if !(config.watchdog_min_ms..=config.watchdog_max_ms).contains(&ms) {
            return Err(Refused);
        }
        self.watchdog_timeout_us = ms as u64 * 1000;
        Ok(())
    }

    pub fn set_watchdog_behaviour(&mut self, behaviour: SafeBehaviour) {
        self.watchdog_behaviour = behaviour;
    }

    /// Boot self-check passed.
    pub fn boot_done(&mut self) {
        if self.state == SafetyState::Boot {
            self.state = SafetyState::Idle;
        }
    }

    /// Any valid packet for this board counts as the master being alive. It never clears a
    /// tripped watchdog.
    pub fn feed(&mut self, now_us: u64) {
        self.last_command_us = now_us;
    }

    /// Carries out a Safety Command register write.
    pub fn command(&mut self, cmd: u8, now_us: u64) -> Result<(), Refused> {
        use SafetyState::*;
        match (cmd, self.state) {
            (command::ESTOP, _) => self.latch(fault::ESTOP),
            (command::ENABLE, Idle) => {
                self.state = Enabled;
                // The watchdog counts from the moment of enabling, not from an older packet.
                self.last_command_us = now_us;
            }
            (command::ENABLE, Enabled) => {}
            (command::DISABLE, Enabled | Idle) => self.state = Idle,
            (command::CLEAR, Fault | EStop) => {
                self.faults = 0;
                self.state = Idle;
            }
            (command::CLEAR, Idle | Enabled) => {}
            _ => return Err(Refused),
        }
        Ok(())
    }

    /// Checks the watchdog and the sensors once per tick; returns the fault that latched now.
    pub fn check(
        &mut self,
        now_us: u64,
        health: &Health,
        config: &FirmwareConfig,
        inject: u16,
    ) -> Option<Tripped> {
        if self.state == SafetyState::Boot {
            return None;
        }
        let mut tripped = None;
        let mut trip = |flag: u16, servo: Option<usize>, this: &mut Self| {
            if this.faults & flag == 0 {
                this.latch(flag);
                tripped.get_or_insert(Tripped { flag, servo });
            }
        };
        if self.state == SafetyState::Enabled
            && now_us.saturating_sub(self.last_command_us) >= self.watchdog_timeout_us
        {
            trip(fault::WATCHDOG, None, self);
        }
        if health.over_temperature.is_some() || inject & fault::OVER_TEMPERATURE != 0 {
            trip(fault::OVER_TEMPERATURE, health.over_temperature, self);
        }
        self.undervoltage_ticks = if health.supply_mv < config.min_supply_mv {
            self.undervoltage_ticks.saturating_add(1)
        } else {
            0
        };
        if self.undervoltage_ticks >= config.undervoltage_ticks
            || inject & fault::UNDER_VOLTAGE != 0
        {
            trip(fault::UNDER_VOLTAGE, None, self);
        }
        self.imu_fail_ticks = if health.imu_ok {
            0
        } else {
            self.imu_fail_ticks.saturating_add(1)
        };
        if self.imu_fail_ticks >= config.imu_fail_ticks || inject & fault::IMU != 0 {
            trip(fault::IMU, None, self);
        }
        self.feedback_fail_ticks = match health.bad_feedback {
            Some(_) => self.feedback_fail_ticks.saturating_add(1),
            None => 0,
        };
        if self.feedback_fail_ticks >= config.feedback_fail_ticks || inject & fault::FEEDBACK != 0 {
            trip(fault::FEEDBACK, health.bad_feedback, self);
        }
        tripped
    }

    /// Latches the causes in `flags` (one or several bits of `fault`).
    fn latch(&mut self, flags: u16) {
        self.faults |= flags;
        if flags & fault::ESTOP != 0 {
            self.state = SafetyState::EStop;
        } else if self.state != SafetyState::EStop {
            self.state = SafetyState::Fault;
        }
    }

    /// Latches again, after a REBOOT, the causes that were latched before it: a reboot never
    /// clears a fault.
    pub fn relatch(&mut self, flags: u16) {
        if flags != 0 {
            self.latch(flags);
        }
    }

    /// How the outputs are driven now. With several causes latched (e-stop included), the most
    /// conservative behaviour wins (hold < damp < limp).
    pub fn output_mode(&self, config: &FirmwareConfig) -> OutputMode {
        match self.state {
            SafetyState::Enabled => OutputMode::Track,
            SafetyState::Boot | SafetyState::Idle => OutputMode::Safe(SafeBehaviour::Limp),
            SafetyState::Fault | SafetyState::EStop => {
                let mut behaviour = SafeBehaviour::Hold;
                if self.faults & fault::WATCHDOG != 0 {
                    behaviour = behaviour.max(self.watchdog_behaviour);
                }
                if self.faults & fault::ESTOP != 0 {
                    behaviour = behaviour.max(config.estop_behaviour);
                }
                if self.faults & !(fault::WATCHDOG | fault::ESTOP) != 0 {
                    behaviour = behaviour.max(config.fault_behaviour);
                }
                OutputMode::Safe(behaviour)
            }
        }
    }
}

/// The last faults, oldest overwritten, as the board's Fault Log registers show them.
#[derive(Debug, Clone, Copy, Default)]
pub struct FaultLog {
    entries: [(u8, u8, u32); 8],
    count: u8,
}

impl FaultLog {
    /// Records a fault; `servo_id` is the bus ID of the servo it names (0: none).
    pub fn record(&mut self, tripped: Tripped, servo_id: u8, now_us: u64) {
        let code = tripped.flag.trailing_zeros() as u8;
        let slot = self.count as usize % self.entries.len();
        self.entries[slot] = (code, servo_id, (now_us / 1000) as u32);
        self.count = self.count.wrapping_add(1);
    }

    pub fn count(&self) -> u8 {
        self.count
    }

    /// Entries in slot order (slot = count % 8 is the next to be overwritten).
    pub fn entries(&self) -> &[(u8, u8, u32); 8] {
        &self.entries
    }
}
