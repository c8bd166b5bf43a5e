//! `clawrl-runtime bench`: the runtime's timing figures on the machine it runs on.
//! - `--inference`: one student forward pass (normalised observation in, action out), p50,
//!   p99 and p99.9 over many calls.
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::inference::Student;

/// Percentiles of a set of durations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    pub n: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub p999: Duration,
    pub max: Duration,
}

impl Percentiles {
    /// Nearest-rank percentiles; `samples` is sorted in place.
    pub fn of(samples: &mut [Duration]) -> Self {
        samples.sort_unstable();
        let n = samples.len();
        let at = |q: f64| samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Self {
            n,
            p50: at(0.5),
            p99: at(0.99),
            p999: at(0.999),
            max: samples[n - 1],
        }
    }
}

impl std::fmt::Display for Percentiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        write!(
            f,
            "n {} p50 {:.2} us p99 {:.2} us p99.9 {:.2} us max {:.2} us",
            self.n,
            us(self.p50),
            us(self.p99),
            us(self.p999),
            us(self.max)
        )
    }
}

/// Times `iterations` forward passes after `iterations / 10` warm-up calls.
pub fn inference(student: &Student, iterations: usize) -> Result<Percentiles> {
    let obs = crate::synthetic::values(3, student.obs_dim(), 1.0);
    let mut out = vec![0f32; student.action_dim()];
    for _ in 0..iterations / 10 {
        student.act(&obs, &mut out)?;
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        student.act(&obs, &mut out)?;
        samples.push(t.elapsed());
    }
    std::hint::black_box(&out);
    Ok(Percentiles::of(&mut samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut s: Vec<Duration> = (1..=1000u64).rev().map(Duration::from_micros).collect();
        let p = Percentiles::of(&mut s);
        assert_eq!(p.p50, Duration::from_micros(500));
        assert_eq!(p.p99, Duration::from_micros(990));
        assert_eq!(p.p999, Duration::from_micros(999));
        assert_eq!(p.max, Duration::from_micros(1000));
    }
}
