//! Multi-layer perceptrons with weights drawn from the project's seeded RNG.
use candle_core::{Device, Tensor, Var};
use rand::RngExt;

use crate::{Result, Rng};

/// Hidden-layer activation. ELU is rsl_rl's default; ReLU is the cheapest in candle; tanh costs
/// about 9 ns per element on CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    Elu,
    Relu,
    Tanh,
}

impl Activation {
    pub fn apply(self, x: &Tensor) -> Result<Tensor> {
        Ok(match self {
            // One fused op (see `elu`): the same numbers as candle's, a cheaper backward.
            Activation::Elu => crate::elu::elu(x, 1.0)?,
            Activation::Relu => x.relu()?,
            Activation::Tanh => x.tanh()?,
        })
    }
}

/// One affine layer; `weight` is stored `[in, out]` so the forward pass is `x @ w + b` without
/// a transpose.
pub struct Linear {
    pub weight: Var,
    pub bias: Var,
}

/// `dims[0] -> dims[1] -> ... -> dims[last]`, activation between layers, none on the output.
pub struct Mlp {
    name: String,
    layers: Vec<Linear>,
    activation: Activation,
}

impl Mlp {
    /// Weights uniform in `±gain/sqrt(fan_in)` (PyTorch's default bound), biases zero; the output
    /// layer's bound is further scaled by `out_gain` (small for policy heads).
    pub fn new(
        name: &str,
        dims: &[usize],
        activation: Activation,
        out_gain: f64,
        rng: &mut Rng,
    ) -> Result<Self> {
        assert!(dims.len() >= 2, "an MLP needs an input and an output size");
        let mut layers = Vec::with_capacity(dims.len() - 1);
        for (i, w) in dims.windows(2).enumerate() {
            let (fan_in, fan_out) = (w[0], w[1]);
            let last = i == dims.len() - 2;
            let bound = (1.0 / (fan_in as f64).sqrt()) * if last { out_gain } else { 1.0 };
            let values: Vec<f32> = (0..fan_in * fan_out)
                .map(|_| rng.random_range(-bound..=bound) as f32)
                .collect();
            let weight =
                Var::from_tensor(&Tensor::from_vec(values, (fan_in, fan_out), &Device::Cpu)?)?;
            let bias = Var::from_tensor(&Tensor::zeros(
                fan_out,
                candle_core::DType::F32,
                &Device::Cpu,
            )?)?;
            layers.push(Linear { weight, bias });
        }
        Ok(Self {
            name: name.to_string(),
            layers,
            activation,
        })
    }

    pub fn input_dim(&self) -> usize {
        self.layers[0].weight.dims()[0]
    }

    pub fn output_dim(&self) -> usize {
        self.layers.last().map(|l| l.weight.dims()[1]).unwrap_or(0)
    }

    /// Forward pass that records the graph for backprop.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_impl(x, false)
    }

    /// Forward pass on detached weights: no graph is built (rollouts, inference).
    pub fn forward_detached(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_impl(x, true)
    }

    fn forward_impl(&self, x: &Tensor, detach: bool) -> Result<Tensor> {
        let mut h = x.clone();
        for (i, l) in self.layers.iter().enumerate() {
            let (w, b) = if detach {
                (l.weight.as_tensor().detach(), l.bias.as_tensor().detach())
            } else {
                (l.weight.as_tensor().clone(), l.bias.as_tensor().clone())
            };
            h = h.matmul(&w)?.broadcast_add(&b)?;
            if i + 1 < self.layers.len() {
                h = self.activation.apply(&h)?;
            }
        }
        Ok(h)
    }

    /// Named parameters (`{name}.{i}.weight`, `{name}.{i}.bias`), in a fixed order.
    pub fn params(&self) -> Vec<(String, Var)> {
        let mut out = Vec::with_capacity(self.layers.len() * 2);
        for (i, l) in self.layers.iter().enumerate() {
            out.push((format!("{}.{i}.weight", self.name), l.weight.clone()));
            out.push((format!("{}.{i}.bias", self.name), l.bias.clone()));
        }
        out
    }
}

/// Copies `src`'s values into `dst` (same shapes), e.g. for target networks.
pub fn copy_params(dst: &[(String, Var)], src: &[(String, Var)]) -> Result<()> {
    for ((_, d), (_, s)) in dst.iter().zip(src) {
        d.set(&s.as_tensor().copy()?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn same_seed_same_weights_and_shapes() {
        let a = Mlp::new(
            "a",
            &[3, 8, 2],
            Activation::Elu,
            1.0,
            &mut Rng::seed_from_u64(7),
        )
        .unwrap();
        let b = Mlp::new(
            "a",
            &[3, 8, 2],
            Activation::Elu,
            1.0,
            &mut Rng::seed_from_u64(7),
        )
        .unwrap();
        let c = Mlp::new(
            "a",
            &[3, 8, 2],
            Activation::Elu,
            1.0,
            &mut Rng::seed_from_u64(8),
        )
        .unwrap();
        let x = Tensor::from_vec(
            vec![0.1f32, -0.2, 0.3, 1.0, 2.0, -1.0],
            (2, 3),
            &Device::Cpu,
        )
        .unwrap();
        let ya: Vec<Vec<f32>> = a.forward(&x).unwrap().to_vec2().unwrap();
        let yb: Vec<Vec<f32>> = b.forward_detached(&x).unwrap().to_vec2().unwrap();
        let yc: Vec<Vec<f32>> = c.forward(&x).unwrap().to_vec2().unwrap();
        assert_eq!(ya, yb);
        assert_ne!(ya, yc);
        assert_eq!((ya.len(), ya[0].len()), (2, 2));
        assert_eq!(a.params().len(), 4);
        assert_eq!(a.params()[2].0, "a.1.weight");
    }

    #[test]
    fn relu_network_computes_by_hand() {
        let m = Mlp::new(
            "m",
            &[2, 2, 1],
            Activation::Relu,
            1.0,
            &mut Rng::seed_from_u64(0),
        )
        .unwrap();
        let p = m.params();
        p[0].1
            .set(&Tensor::new(&[[1.0f32, -1.0], [2.0, 0.5]], &Device::Cpu).unwrap())
            .unwrap();
        p[1].1
            .set(&Tensor::new(&[0.0f32, 1.0], &Device::Cpu).unwrap())
            .unwrap();
        p[2].1
            .set(&Tensor::new(&[[3.0f32], [-2.0]], &Device::Cpu).unwrap())
            .unwrap();
        p[3].1
            .set(&Tensor::new(&[0.5f32], &Device::Cpu).unwrap())
            .unwrap();
        // x = (1, 1): hidden = relu(1*1 + 1*2 + 0, 1*-1 + 1*0.5 + 1) = (3, 0.5); out = 9 - 1 + 0.5.
        let x = Tensor::new(&[[1.0f32, 1.0]], &Device::Cpu).unwrap();
        let y: Vec<Vec<f32>> = m.forward(&x).unwrap().to_vec2().unwrap();
        assert_eq!(y, vec![vec![8.5]]);
    }

    fn set(v: &Var, data: &[f32]) {
        v.set(&Tensor::from_slice(data, v.dims(), &Device::Cpu).unwrap())
            .unwrap();
    }

    #[test]
    fn the_activation_acts_between_layers_and_not_on_the_output() {
        // 1 -> 1 -> 1 with weights 1 then -3: y = -3 elu(x). ELU after the last layer would
        // keep y above -1.
        let m = Mlp::new(
            "m",
            &[1, 1, 1],
            Activation::Elu,
            1.0,
            &mut Rng::seed_from_u64(1),
        )
        .unwrap();
        assert_eq!((m.input_dim(), m.output_dim()), (1, 1));
        let p = m.params();
        for (v, x) in p.iter().zip([1.0f32, 0.0, -3.0, 0.0]) {
            set(&v.1, &[x]);
        }
        let x = Tensor::from_slice(&[1.0f32, -1.0], (2, 1), &Device::Cpu).unwrap();
        let y: Vec<f32> = m
            .forward(&x)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let elu_m1 = (-1.0f32).exp() - 1.0;
        assert!(
            (y[0] + 3.0).abs() < 1e-6 && (y[1] + 3.0 * elu_m1).abs() < 1e-6,
            "{y:?}"
        );
    }

    #[test]
    fn sizes_and_copies() {
        let mut rng = Rng::seed_from_u64(2);
        let a = Mlp::new("a", &[3, 5, 2], Activation::Tanh, 1.0, &mut rng).unwrap();
        let b = Mlp::new("b", &[3, 5, 2], Activation::Tanh, 1.0, &mut rng).unwrap();
        assert_eq!((a.input_dim(), a.output_dim()), (3, 2));
        copy_params(&b.params(), &a.params()).unwrap();
        for ((_, x), (_, y)) in a.params().iter().zip(b.params()) {
            let flat = |v: &Var| {
                v.as_tensor()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap()
            };
            assert_eq!(flat(x), flat(&y));
        }
    }
}
