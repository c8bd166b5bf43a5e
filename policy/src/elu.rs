//! ELU as one fused candle op with a one-pass backward.
//!
//! candle's own `Tensor::elu` differentiates through about ten element-wise tensors (zeros, two
//! comparisons, two casts, a shift, two products, two sums), each a pass over memory and an
//! allocation; in PPO's update that costs more than the matmuls of a 128-128 network. This op's
//! backward is one pass, `grad * (1 if y > 0 else y + alpha)`, from the output `y` alone: the
//! same numbers as candle's (for alpha > 0, `y > 0` exactly where `x > 0`, and candle's mask is
//! `1 + 0 * (y + alpha)` or `0 + 1 * (y + alpha)`), so switching changes no training run.
use candle_core::{CpuStorage, CustomOp1, CustomOp2, DType, Layout, Shape, Tensor};

use crate::Result;

/// `x` where `x >= 0`, else `alpha (e^x - 1)`, on f32 CPU tensors by the fused op; other dtypes
/// and devices fall back to candle's `elu`.
pub fn elu(x: &Tensor, alpha: f32) -> Result<Tensor> {
    if x.dtype() != DType::F32 || !x.device().is_cpu() || alpha <= 0.0 {
        return Ok(x.elu(f64::from(alpha))?);
    }
    Ok(x.contiguous()?.apply_op1(Elu { alpha })?)
}

struct Elu {
    alpha: f32,
}

/// The values of a contiguous f32 storage.
fn values<'a>(s: &'a CpuStorage, l: &Layout) -> candle_core::Result<&'a [f32]> {
    let data = s.as_slice::<f32>()?;
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&data[a..b]),
        None => candle_core::bail!("fused elu: the input is not contiguous"),
    }
}

impl CustomOp1 for Elu {
    fn name(&self) -> &'static str {
        "clawrl-elu"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let a = self.alpha;
        // candle's formula, so the forward pass is bit for bit the same.
        let y = values(s, l)?
            .iter()
            .map(|&v| {
                if v.is_sign_positive() {
                    v
                } else {
                    (v.exp() - 1.0) * a
                }
            })
            .collect();
        Ok((CpuStorage::F32(y), l.shape().clone()))
    }

    fn bwd(&self, _x: &Tensor, y: &Tensor, grad: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let grad = grad.contiguous()?;
        Ok(Some(
            y.apply_op2_no_bwd(&grad, &EluGrad { alpha: self.alpha })?,
        ))
    }
}

/// `grad * elu'(x)`, with the derivative read from the output `y`.
struct EluGrad {
    alpha: f32,
}

impl CustomOp2 for EluGrad {
    fn name(&self) -> &'static str {
        "clawrl-elu-grad"
    }

    fn cpu_fwd(
        &self,
        sy: &CpuStorage,
        ly: &Layout,
        sg: &CpuStorage,
        lg: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (y, g) = (values(sy, ly)?, values(sg, lg)?);
        if y.len() != g.len() {
            candle_core::bail!("fused elu: {} outputs, {} gradients", y.len(), g.len());
        }
        let a = self.alpha;
        let out = y
            .iter()
            .zip(g)
            .map(|(&y, &g)| g * if y > 0.0 { 1.0 } else { y + a })
            .collect();
        Ok((CpuStorage::F32(out), ly.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    /// Values and gradients of `sum(w * elu(x))` by candle's op and by the fused one.
    fn both(xs: &[f32]) -> [(Vec<f32>, Vec<f32>); 2] {
        let w: Vec<f32> = (0..xs.len()).map(|i| 0.5 + i as f32 * 0.37).collect();
        let w = Tensor::from_slice(&w, xs.len(), &Device::Cpu).unwrap();
        [true, false].map(|fused| {
            let x = Var::from_slice(xs, xs.len(), &Device::Cpu).unwrap();
            let y = if fused {
                elu(x.as_tensor(), 1.0).unwrap()
            } else {
                x.as_tensor().elu(1.0).unwrap()
            };
            let g = (&y * &w).unwrap().sum_all().unwrap().backward().unwrap();
            let gx = g.get(x.as_tensor()).unwrap().to_vec1().unwrap();
            (y.to_vec1().unwrap(), gx)
        })
    }

    #[test]
    fn values_and_gradients_are_candles_bit_for_bit() {
        let xs = [-30.0, -2.5, -1.0, -1e-7, -0.0, 0.0, 1e-7, 0.3, 1.0, 4.0];
        let [fused, candle] = both(&xs);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fused.0), bits(&candle.0), "forward");
        assert_eq!(bits(&fused.1), bits(&candle.1), "backward");
        // And they are ELU's: slope 1 above zero, e^x below.
        assert_eq!(fused.1[9] / (0.5 + 9.0 * 0.37), 1.0);
        assert!((fused.1[1] / (0.5 + 0.37) - (-2.5f32).exp()).abs() < 1e-6);
    }

    #[test]
    fn a_non_contiguous_input_is_made_contiguous() {
        let x = Tensor::from_slice(&[-1.0f32, 2.0, -3.0, 4.0], (2, 2), &Device::Cpu).unwrap();
        let t = x.t().unwrap();
        let fused: Vec<Vec<f32>> = elu(&t, 1.0).unwrap().to_vec2().unwrap();
        let candle: Vec<Vec<f32>> = t.elu(1.0).unwrap().to_vec2().unwrap();
        assert_eq!(fused, candle);
    }
}
