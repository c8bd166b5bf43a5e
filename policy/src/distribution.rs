//! Diagonal Gaussian: log-prob, entropy and KL on tensors (for losses) and on slices (for the
//! rollout, where a few floats per environment are cheaper than a tensor op).
//!
//! Shapes: `mean` and `log_std` are `[batch, dim]` (a state-independent `log_std` is broadcast
//! to that shape by the policy); results are `[batch]`.
use candle_core::{D, Tensor};

use crate::Result;

/// ln(2π)/2
pub const HALF_LN_2PI: f64 = 0.918_938_533_204_672_7;

/// log N(x; mean, exp(log_std)²), summed over the action dimension.
pub fn log_prob(mean: &Tensor, log_std: &Tensor, x: &Tensor) -> Result<Tensor> {
    let z = ((x - mean)? * log_std.neg()?.exp()?)?;
    let per = ((z.sqr()? * -0.5)? - log_std)?;
    Ok((per.sum(D::Minus1)? - HALF_LN_2PI * mean.dim(D::Minus1)? as f64)?)
}

/// Entropy of the Gaussian, summed over the action dimension: Σ (1/2 + ln(2π)/2 + log_std).
pub fn entropy(log_std: &Tensor) -> Result<Tensor> {
    let n = log_std.dim(D::Minus1)? as f64;
    Ok((log_std.sum(D::Minus1)? + n * (0.5 + HALF_LN_2PI))?)
}

/// KL(p || q) = Σ log σq/σp + (σp² + (μp − μq)²) / (2σq²) − 1/2.
pub fn kl(
    mean_p: &Tensor,
    log_std_p: &Tensor,
    mean_q: &Tensor,
    log_std_q: &Tensor,
) -> Result<Tensor> {
    let var_p = (log_std_p * 2.0)?.exp()?;
    let var_q = (log_std_q * 2.0)?.exp()?;
    let dm2 = (mean_p - mean_q)?.sqr()?;
    let ratio = ((var_p + dm2)? / (var_q * 2.0)?)?;
    let per = (((log_std_q - log_std_p)? + ratio)? - 0.5)?;
    Ok(per.sum(D::Minus1)?)
}

/// Log-density of the squashed action `a = tanh(u)` of `u ~ N(mean, exp(log_std)²)`, given the
/// pre-squash sample `u`, summed over the action dimension (SAC's actor):
/// `log p(a) = log N(u) − Σ log(1 − tanh(u)²)` (change of variables, `da/du = 1 − tanh(u)²`;
/// `1e-6` keeps the log finite where `tanh` saturates).
pub fn squashed_log_prob(mean: &Tensor, log_std: &Tensor, u: &Tensor) -> Result<Tensor> {
    let a = u.tanh()?;
    let correction = ((a.sqr()?.neg()? + (1.0 + 1e-6))?.log()?).sum(D::Minus1)?;
    Ok((log_prob(mean, log_std, u)? - correction)?)
}

/// Slice version of [`log_prob`] for one row.
pub fn log_prob_row(mean: &[f32], log_std: &[f32], x: &[f32]) -> f32 {
    let mut s = 0.0f64;
    for ((&m, &ls), &a) in mean.iter().zip(log_std).zip(x) {
        let z = (f64::from(a) - f64::from(m)) * (-f64::from(ls)).exp();
        s += -0.5 * z * z - f64::from(ls) - HALF_LN_2PI;
    }
    s as f32
}

/// Slice version of [`kl`] for one row.
pub fn kl_row(mean_p: &[f32], log_std_p: &[f32], mean_q: &[f32], log_std_q: &[f32]) -> f64 {
    let mut s = 0.0;
    for i in 0..mean_p.len() {
        let (mp, lp, mq, lq) = (
            f64::from(mean_p[i]),
            f64::from(log_std_p[i]),
            f64::from(mean_q[i]),
            f64::from(log_std_q[i]),
        );
        s += lq - lp + ((2.0 * lp).exp() + (mp - mq).powi(2)) / (2.0 * (2.0 * lq).exp()) - 0.5;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn t(rows: &[[f32; 2]]) -> Tensor {
        let flat: Vec<f32> = rows.iter().flatten().copied().collect();
        Tensor::from_vec(flat, (rows.len(), 2), &Device::Cpu).unwrap()
    }

    #[test]
    fn log_prob_matches_closed_form() {
        // 1-D standard normal at 0: -ln(2π)/2 = -0.918938...; at x = 1 with σ = e (log σ = 1),
        // μ = 0: -1/(2e²) - 1 - 0.918938 = -1.986605...
        let mean = t(&[[0.0, 0.0]]);
        let ls = t(&[[0.0, 1.0]]);
        let x = t(&[[0.0, 1.0]]);
        let got = log_prob(&mean, &ls, &x).unwrap().to_vec1::<f32>().unwrap()[0];
        let want = -HALF_LN_2PI + (-0.5 / std::f64::consts::E.powi(2) - 1.0 - HALF_LN_2PI);
        assert!((f64::from(got) - want).abs() < 1e-5, "{got} vs {want}");
        let row = log_prob_row(&[0.0, 0.0], &[0.0, 1.0], &[0.0, 1.0]);
        assert!((f64::from(row) - want).abs() < 1e-5);
        // Away from a zero mean, where x - μ and x + μ differ: μ = (0.5, -2), x = (1.5, -1),
        // log σ = (0, ln 2): -(1/2)·1 - 0.918939 and -(1/2)·(1/2)² - ln 2 - 0.918939, summed:
        // -3.155024.
        let want = -0.5 - HALF_LN_2PI - 0.125 - std::f64::consts::LN_2 - HALF_LN_2PI;
        let (m, ls, x) = (
            [0.5f32, -2.0],
            [0.0f32, std::f32::consts::LN_2],
            [1.5f32, -1.0],
        );
        let row = log_prob_row(&m, &ls, &x);
        assert!((f64::from(row) - want).abs() < 1e-5, "{row} vs {want}");
        let got = log_prob(&t(&[m]), &t(&[ls]), &t(&[x]))
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()[0];
        assert!((f64::from(got) - want).abs() < 1e-5, "{got} vs {want}");
    }

    /// `log N(atanh(y); μ, σ²) − log(1 − y²)` in f64, independently of the tensor code.
    fn squashed_density_f64(mu: f64, log_std: f64, y: f64) -> f64 {
        let u = y.atanh();
        let z = (u - mu) / log_std.exp();
        -0.5 * z * z - log_std - HALF_LN_2PI - (1.0 - y * y).ln()
    }

    #[test]
    fn squashed_log_prob_is_a_density_on_the_open_interval() {
        // 1-D, μ = 0.4, σ = e^-0.3 ≈ 0.74. The squashed action y = tanh(u) lives on (-1, 1);
        // its density must integrate to 1 there (midpoint rule on 20 000 cells; the density
        // vanishes at ±1 for this σ, so the ends contribute nothing). Without the change-of-
        // variables term the integral is E[1 − tanh²(u)] ≈ 0.66, with the term's sign flipped
        // ≈ 0.52.
        let (mu, ls) = (0.4f32, -0.3f32);
        let n = 20_000usize;
        let h = 2.0 / n as f64;
        let ys: Vec<f64> = (0..n).map(|i| -1.0 + (i as f64 + 0.5) * h).collect();
        let u: Vec<f32> = ys.iter().map(|y| y.atanh() as f32).collect();
        let dev = &Device::Cpu;
        let mean = Tensor::full(mu, (n, 1), dev).unwrap();
        let log_std = Tensor::full(ls, (n, 1), dev).unwrap();
        let u = Tensor::from_vec(u, (n, 1), dev).unwrap();
        let logp = squashed_log_prob(&mean, &log_std, &u)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let integral: f64 = logp.iter().map(|&l| f64::from(l).exp() * h).sum();
        assert!((integral - 1.0).abs() < 2e-3, "∫ p(y) dy = {integral}");
        // Point by point against the f64 formula, away from the saturated ends.
        for (i, &y) in ys.iter().enumerate().step_by(997) {
            if y.abs() > 0.99 {
                continue;
            }
            let want = squashed_density_f64(f64::from(mu), f64::from(ls), y);
            let got = f64::from(logp[i]);
            assert!((got - want).abs() < 1e-3, "y = {y}: {got} vs {want}");
        }
    }

    #[test]
    fn squashed_log_prob_stays_finite_where_tanh_saturates() {
        // u = 12: tanh(u) rounds to 1 in f32, so 1 - tanh² is 0 and only the 1e-6 keeps the
        // log finite: the correction is ln(1e-6), about -13.8, and the density is
        // log N(12; 0, 1) + 13.8 = -72 - 0.92 + 13.8.
        let got = squashed_log_prob(&t(&[[0.0, 0.0]]), &t(&[[0.0, 0.0]]), &t(&[[12.0, 0.0]]))
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()[0];
        let want = -72.0 - 2.0 * HALF_LN_2PI - (1e-6f64).ln();
        assert!(
            got.is_finite() && (f64::from(got) - want).abs() < 0.1,
            "{got} vs {want}"
        );
    }

    #[test]
    fn squashed_log_prob_sums_over_dimensions() {
        // Two dimensions are independent: the row's log-density is the sum of the 1-D ones.
        // y = (0.5, -0.9), μ = (0, 1), log σ = (0, -0.5).
        let (y, mu, ls) = ([0.5f64, -0.9], [0.0f64, 1.0], [0.0f64, -0.5]);
        let want: f64 = (0..2)
            .map(|j| squashed_density_f64(mu[j], ls[j], y[j]))
            .sum();
        // By hand for the first: atanh(0.5) = 0.549306, log N = -0.150869 - 0.918939,
        // -log(1 - 0.25) = +0.287682: -0.782125.
        assert!((squashed_density_f64(0.0, 0.0, 0.5) + 0.782_125).abs() < 1e-5);
        let u = t(&[[0.5f32.atanh(), (-0.9f32).atanh()]]);
        let got = squashed_log_prob(&t(&[[0.0, 1.0]]), &t(&[[0.0, -0.5]]), &u)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        assert_eq!(got.len(), 1);
        assert!((f64::from(got[0]) - want).abs() < 1e-4, "{got:?} vs {want}");
    }

    #[test]
    fn entropy_matches_closed_form() {
        // Entropy of N(μ, σ²) is ln(σ √(2πe)); σ = 1 gives 1.418939, σ = e^-0.5 gives 0.918939.
        let got = entropy(&t(&[[0.0, -0.5]]))
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()[0];
        assert!(
            (f64::from(got) - (1.418_938_533 + 0.918_938_533)).abs() < 1e-5,
            "{got}"
        );
    }

    #[test]
    fn kl_matches_closed_form() {
        // KL(N(1, 1) || N(0, 4)) = ln 2 + (1 + 1) / 8 - 1/2 = 0.443147; second dim identical: 0.
        let mp = t(&[[1.0, 0.3]]);
        let lp = t(&[[0.0, -0.2]]);
        let mq = t(&[[0.0, 0.3]]);
        let lq = t(&[[std::f32::consts::LN_2, -0.2]]);
        let got = kl(&mp, &lp, &mq, &lq).unwrap().to_vec1::<f32>().unwrap()[0];
        let want = std::f64::consts::LN_2 + 2.0 / 8.0 - 0.5;
        assert!((f64::from(got) - want).abs() < 1e-5, "{got} vs {want}");
        let row = kl_row(
            &[1.0, 0.3],
            &[0.0, -0.2],
            &[0.0, 0.3],
            &[std::f32::consts::LN_2, -0.2],
        );
        assert!((row - want).abs() < 1e-5);
        // KL of a distribution with itself is zero, and KL is not symmetric.
        let zero = kl(&mp, &lp, &mp, &lp).unwrap().to_vec1::<f32>().unwrap()[0];
        assert!(zero.abs() < 1e-7);
        let back = kl(&mq, &lq, &mp, &lp).unwrap().to_vec1::<f32>().unwrap()[0];
        assert!((got - back).abs() > 0.1);
    }
}
