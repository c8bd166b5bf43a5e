//! The board's own hardware behind the core's small traits: servo potentiometers through a
//! 16:1 analog multiplexer (CD74HC4067) into one ADC pin, the supply through a divider, the
//! cycle counter as clock, the independent watchdog.

use clawrl_firmware::hal::{Clock, HardwareWatchdog, ServoFeedback, ServoSample, SupplyMonitor};
use core::cell::Cell;
use stm32f4xx_hal::adc::Adc;
use stm32f4xx_hal::adc::config::SampleTime;
use stm32f4xx_hal::gpio::{Analog, Output, Pin};
use stm32f4xx_hal::pac::ADC1;
use stm32f4xx_hal::watchdog::IndependentWatchdog;

/// Potentiometer calibration: ADC millivolts at -135 and +135 degrees of a 270-degree servo.
const POT_MV_MIN: f32 = 330.0;
const POT_MV_MAX: f32 = 2970.0;
/// Supply divider: 47k over 10k.
const SUPPLY_DIVIDER: f32 = 5.7;

pub struct AnalogInputs {
    pub adc: Adc<ADC1>,
    pub mux_s0: Pin<'B', 12, Output>,
    pub mux_s1: Pin<'B', 13, Output>,
    pub mux_s2: Pin<'B', 14, Output>,
    pub mux_s3: Pin<'B', 15, Output>,
    pub mux_out: Pin<'A', 6, Analog>,
    pub supply: Pin<'A', 4, Analog>,
}

impl AnalogInputs {
    fn select(&mut self, channel: usize) {
        self.mux_s0.set_state((channel & 1 != 0).into());
        self.mux_s1.set_state((channel & 2 != 0).into());
        self.mux_s2.set_state((channel & 4 != 0).into());
        self.mux_s3.set_state((channel & 8 != 0).into());
    }

    fn millivolts(&mut self, supply: bool) -> f32 {
        let sample = if supply {
            self.adc.convert(&self.supply, SampleTime::Cycles_84)
        } else {
            self.adc.convert(&self.mux_out, SampleTime::Cycles_84)
        };
        self.adc.sample_to_millivolts(sample) as f32
    }
}

/// Feedback through the multiplexer, one input per channel; `law[channel]` (reversed, trim)
/// turns that servo's angle into its joint's (`PulseCalibration::angle_rad`'s law).
pub struct MuxFeedback<'a> {
    pub inputs: &'a core::cell::RefCell<AnalogInputs>,
    pub law: [(bool, f32); 16],
}

impl ServoFeedback for MuxFeedback<'_> {
    fn sample(&mut self, servo: usize) -> ServoSample {
        let mut inputs = self.inputs.borrow_mut();
        inputs.select(servo);
        let mv = inputs.millivolts(false);
        let half_range = 135f32.to_radians();
        let unit = (mv - POT_MV_MIN) / (POT_MV_MAX - POT_MV_MIN) * 2.0 - 1.0;
        let angle = unit * half_range;
        // No current shunts or thermistors on this board revision: report nominal values.
        ServoSample {
            position_rad: {
                let (reversed, trim) = self.law[servo];
                if reversed {
                    -angle - trim
                } else {
                    angle - trim
                }
            },
            current_ma: 0.0,
            temperature_c: 30.0,
        }
    }
}

pub struct Supply<'a> {
    pub inputs: &'a core::cell::RefCell<AnalogInputs>,
}

impl SupplyMonitor for Supply<'_> {
    fn supply_mv(&mut self) -> u16 {
        (self.inputs.borrow_mut().millivolts(true) * SUPPLY_DIVIDER) as u16
    }
}

/// Microseconds from the DWT cycle counter, widened to 64 bits across its 43 s wrap.
pub struct CycleClock {
    pub cycles_per_us: u32,
    last: Cell<u32>,
    high: Cell<u64>,
}

impl CycleClock {
    pub fn new(cycles_per_us: u32) -> Self {
        Self {
            cycles_per_us,
            last: Cell::new(0),
            high: Cell::new(0),
        }
    }
}

impl Clock for CycleClock {
    fn now_us(&self) -> u64 {
        let now = cortex_m::peripheral::DWT::cycle_count();
        if now < self.last.get() {
            self.high.set(self.high.get() + (1u64 << 32));
        }
        self.last.set(now);
        (self.high.get() + now as u64) / self.cycles_per_us as u64
    }
}

pub struct Iwdg(pub IndependentWatchdog);

impl HardwareWatchdog for Iwdg {
    fn feed(&mut self) {
        self.0.feed();
    }
}
