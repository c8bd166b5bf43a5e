//! The 16 servo outputs come from five timers; each timer's channels have their own type, so
//! one enum makes them an array the firmware core can index.

use core::convert::Infallible;
use embedded_hal::pwm::{ErrorType, SetDutyCycle};
use stm32f4xx_hal::pac::{TIM1, TIM2, TIM3, TIM4, TIM5};
use stm32f4xx_hal::timer::ErasedChannel;

pub enum ServoPwm {
    T1(ErasedChannel<TIM1>),
    T2(ErasedChannel<TIM2>),
    T3(ErasedChannel<TIM3>),
    T4(ErasedChannel<TIM4>),
    T5(ErasedChannel<TIM5>),
}

impl ErrorType for ServoPwm {
    type Error = Infallible;
}

impl SetDutyCycle for ServoPwm {
    fn max_duty_cycle(&self) -> u16 {
        match self {
            Self::T1(c) => c.max_duty_cycle(),
            Self::T2(c) => c.max_duty_cycle(),
            Self::T3(c) => c.max_duty_cycle(),
            Self::T4(c) => c.max_duty_cycle(),
            Self::T5(c) => c.max_duty_cycle(),
        }
    }

    fn set_duty_cycle(&mut self, duty: u16) -> Result<(), Infallible> {
        match self {
            Self::T1(c) => c.set_duty_cycle(duty),
            Self::T2(c) => c.set_duty_cycle(duty),
            Self::T3(c) => c.set_duty_cycle(duty),
            Self::T4(c) => c.set_duty_cycle(duty),
            Self::T5(c) => c.set_duty_cycle(duty),
        }
    }
}
