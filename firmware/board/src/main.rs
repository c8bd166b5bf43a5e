//! clawrl servo firmware on an STM32F411 "Black Pill": the no_std core from `clawrl-firmware`
//! with the chip's peripherals plugged into its traits. Pin map in ../README.md.
#![no_std]
#![no_main]

mod pwm;
mod sensors;
mod uart;

/// The servo table build.rs generated from the robot description (`WIRING`).
mod wiring {
    include!(concat!(env!("OUT_DIR"), "/wiring.rs"));
}

use clawrl_firmware::imu::mpu6050::{self, Mpu6050};
use clawrl_firmware::imu::{Imu, ImuError, ImuSample};
use clawrl_firmware::pwm::ServoOutputs;
use clawrl_firmware::{Firmware, FirmwareConfig, Hardware};
use core::cell::RefCell;
use cortex_m_rt::entry;
use panic_halt as _;
use pwm::ServoPwm;
use sensors::{AnalogInputs, CycleClock, Iwdg, MuxFeedback, Supply};
use stm32f4xx_hal::adc::Adc;
use stm32f4xx_hal::adc::config::AdcConfig;
use stm32f4xx_hal::i2c::{DutyCycle, I2c, Mode};
use stm32f4xx_hal::pac;
use stm32f4xx_hal::prelude::*;
use stm32f4xx_hal::rcc::Config;
use stm32f4xx_hal::serial::config::Config as SerialConfig;
use stm32f4xx_hal::watchdog::IndependentWatchdog;
use uart::Uart;

/// Servo bus baud rate: 1 Mbaud, the X-series default for fast masters.
const BAUD: u32 = 1_000_000;
/// Servo PWM at 300 Hz (3333 us), for digital servos.
const PWM_HZ: u32 = 300;

/// The IMU, or a stand-in that always fails when it did not answer at boot (the firmware then
/// latches an IMU fault instead of running blind).
enum BoardImu<I: embedded_hal::i2c::I2c> {
    Present(Mpu6050<I>),
    Missing,
}

impl<I: embedded_hal::i2c::I2c> Imu for BoardImu<I> {
    fn read(&mut self) -> Result<ImuSample, ImuError> {
        match self {
            Self::Present(imu) => imu.read(),
            Self::Missing => Err(ImuError),
        }
    }
}

#[entry]
fn main() -> ! {
    let dp = pac::Peripherals::take().unwrap();
    let mut cp = cortex_m::Peripherals::take().unwrap();
    let mut rcc = dp.RCC.freeze(Config::hse(25.MHz()).sysclk(100.MHz()));
    cp.DCB.enable_trace();
    cp.DWT.enable_cycle_counter();

    let gpioa = dp.GPIOA.split(&mut rcc);
    let gpiob = dp.GPIOB.split(&mut rcc);

    // Watchdog first: from here on a hung loop resets the chip, and a reset boots torque-off.
    let mut iwdg = IndependentWatchdog::new(dp.IWDG);
    iwdg.start(50.millis());

    let (_, (t1c1, t1c2, t1c3, t1c4)) = dp.TIM1.pwm_hz(PWM_HZ.Hz(), &mut rcc);
    let (_, (t2c1, _, t2c3, _)) = dp.TIM2.pwm_hz(PWM_HZ.Hz(), &mut rcc);
    let (_, (t3c1, t3c2, t3c3, t3c4)) = dp.TIM3.pwm_hz(PWM_HZ.Hz(), &mut rcc);
    let (_, (t4c1, t4c2, ..)) = dp.TIM4.pwm_hz(PWM_HZ.Hz(), &mut rcc);
    let (_, (t5c1, t5c2, t5c3, t5c4)) = dp.TIM5.pwm_hz(PWM_HZ.Hz(), &mut rcc);
    macro_rules! out {
        ($variant:ident, $ch:expr, $pin:expr) => {{
            let mut ch = $ch.with($pin);
            ch.enable();
            ServoPwm::$variant(ch.erase())
        }};
    }
    // Servo order: FL, FR, RL, RR legs x (hip abduction, hip pitch, knee), then 4 claws.
    let channels = [
        out!(T1, t1c1, gpioa.pa8),
        out!(T1, t1c2, gpioa.pa9),
        out!(T1, t1c3, gpioa.pa10),
        out!(T1, t1c4, gpioa.pa11),
        out!(T3, t3c1, gpiob.pb4.into_floating_input()),
        out!(T3, t3c2, gpiob.pb5),
        out!(T3, t3c3, gpiob.pb0),
        out!(T3, t3c4, gpiob.pb1),
        out!(T5, t5c1, gpioa.pa0),
        out!(T5, t5c2, gpioa.pa1),
        out!(T5, t5c3, gpioa.pa2),
        out!(T5, t5c4, gpioa.pa3),
        out!(T4, t4c1, gpiob.pb6),
        out!(T4, t4c2, gpiob.pb7),
        out!(T2, t2c1, gpioa.pa5),
        out!(T2, t2c3, gpiob.pb10),
    ];

    let serial = dp
        .USART1
        .serial(
            (
                gpioa.pa15.into_floating_input(),
                gpiob.pb3.into_floating_input(),
            ),
            SerialConfig::default().baudrate(BAUD.bps()),
            &mut rcc,
        )
        .unwrap();

    let i2c = I2c::new(
        dp.I2C1,
        (gpiob.pb8, gpiob.pb9),
        Mode::fast(400.kHz(), DutyCycle::Ratio2to1),
        &mut rcc,
    );
    let imu = match Mpu6050::new(i2c, mpu6050::DEFAULT_ADDRESS) {
        Ok(imu) => BoardImu::Present(imu),
        Err(_) => BoardImu::Missing,
    };

    let analog = RefCell::new(AnalogInputs {
        adc: Adc::new(dp.ADC1, true, AdcConfig::default(), &mut rcc),
        mux_s0: gpiob.pb12.into_push_pull_output(),
        mux_s1: gpiob.pb13.into_push_pull_output(),
        mux_s2: gpiob.pb14.into_push_pull_output(),
        mux_s3: gpiob.pb15.into_push_pull_output(),
        mux_out: gpioa.pa6.into_analog(),
        supply: gpioa.pa4.into_analog(),
    });

    // The description's wiring on the shipped board's figures; build.rs has already refused a
    // table with a repeated ID or channel, so this cannot fail on a built image.
    let config = FirmwareConfig::claw_foot()
        .with_wiring(&wiring::WIRING)
        .unwrap();
    // Feedback arrives per channel: each input's servo, turned into its joint's angle.
    let mut law = [(false, 0.0f32); 16];
    for s in &config.servos {
        law[usize::from(s.channel)] = (s.calibration.reversed, s.calibration.trim_rad);
    }
    let hw = Hardware {
        serial: Uart::new(serial),
        outputs: ServoOutputs::new(channels, config.pwm_period_us),
        feedback: MuxFeedback {
            inputs: &analog,
            law,
        },
        imu,
        supply: Supply { inputs: &analog },
        clock: CycleClock::new(rcc.clocks.sysclk().to_MHz()),
        watchdog: Iwdg(iwdg),
    };
    Firmware::new(hw, config).run()
}
