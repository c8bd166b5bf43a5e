//! CrossQ's Q network (Bhatt et al., ICLR 2024): batch normalisation on the input and after
//! every hidden layer (candle-nn's `BatchNorm`), so the critic can be trained on the current
//! and the next state-action pairs in one batch and needs no target network.
//!
//! In training mode a forward normalises with the batch's own statistics and moves the running
//! ones; in evaluation mode (the actor's loss, anything after training) it uses the running
//! statistics only, and is the same function of each row whatever else is in the batch.
use std::collections::HashMap;

use anyhow::{Context, Result};
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{BatchNorm, ModuleT};
use clawrl_policy::mlp::Activation;
use clawrl_policy::{Mlp, Rng};

use crate::optim::{load_params, param_tensors};

const EPS: f64 = 1e-5;

pub struct BnQ {
    name: String,
    /// One linear layer per entry (`[in, out]`), the last one to the Q value.
    linears: Vec<Mlp>,
    /// `norms[0]` on the input, `norms[i + 1]` after hidden layer `i`.
    norms: Vec<BatchNorm>,
    /// Each norm's learnt scale and shift (the optimiser's; the norms hold their tensors).
    affine: Vec<(Var, Var)>,
    activation: Activation,
    /// Weight of a new batch in the running statistics (candle's and PyTorch's convention).
    momentum: f64,
}

impl BnQ {
    /// `dims[0] -> dims[1] -> ... -> 1`: `dims[0]` is the critic observation plus the action.
    pub fn new(
        name: &str,
        dims: &[usize],
        activation: Activation,
        momentum: f64,
        rng: &mut Rng,
    ) -> Result<Self> {
        anyhow::ensure!(dims.len() >= 2, "a Q network needs an input and an output");
        let mut linears = Vec::new();
        for (i, w) in dims.windows(2).enumerate() {
            linears.push(Mlp::new(&format!("{name}.l{i}"), w, activation, 1.0, rng)?);
        }
        let mut q = Self {
            name: name.to_string(),
            linears,
            norms: Vec::new(),
            affine: Vec::new(),
            activation,
            momentum,
        };
        for &features in &dims[..dims.len() - 1] {
            let one = |v: f32| Tensor::full(v, features, &Device::Cpu);
            q.affine
                .push((Var::from_tensor(&one(1.0)?)?, Var::from_tensor(&one(0.0)?)?));
        }
        let stats: Vec<(Tensor, Tensor)> = dims[..dims.len() - 1]
            .iter()
            .map(|&f| {
                Ok((
                    Tensor::zeros(f, DType::F32, &Device::Cpu)?,
                    Tensor::ones(f, DType::F32, &Device::Cpu)?,
                ))
            })
            .collect::<Result<_>>()?;
        q.set_stats(stats)?;
        Ok(q)
    }

    /// Rebuilds the norms around the learnt scale and shift with these running statistics.
    fn set_stats(&mut self, stats: Vec<(Tensor, Tensor)>) -> Result<()> {
        self.norms = stats
            .into_iter()
            .zip(&self.affine)
            .map(|((mean, var), (w, b))| {
                BatchNorm::new_with_momentum(
                    mean.dim(0)?,
                    mean,
                    var,
                    w.as_tensor().clone(),
                    b.as_tensor().clone(),
                    EPS,
                    self.momentum,
                )
                .map_err(anyhow::Error::from)
            })
            .collect::<Result<_>>()?;
        Ok(())
    }

    /// Q values `[batch, 1]`; `train`: batch statistics (and the running ones move).
    pub fn forward(&self, x: &Tensor, train: bool) -> Result<Tensor> {
        let mut h = self.norms[0].forward_t(x, train)?;
        let last = self.linears.len() - 1;
        for (i, l) in self.linears.iter().enumerate() {
            h = l.forward(&h)?;
            if i < last {
                h = self
                    .activation
                    .apply(&self.norms[i + 1].forward_t(&h, train)?)?;
            }
        }
        Ok(h)
    }

    /// What the optimiser trains: the linear layers and the norms' scales and shifts.
    pub fn params(&self) -> Vec<(String, Var)> {
        let mut p: Vec<(String, Var)> = self.linears.iter().flat_map(|l| l.params()).collect();
        for (i, (w, b)) in self.affine.iter().enumerate() {
            p.push((format!("{}.bn{i}.weight", self.name), w.clone()));
            p.push((format!("{}.bn{i}.bias", self.name), b.clone()));
        }
        p
    }

    /// Parameters and running statistics as named tensors (copies).
    pub fn save(&self) -> Result<Vec<(String, Tensor)>> {
        let mut t = param_tensors(&self.params());
        for (i, n) in self.norms.iter().enumerate() {
            t.push((self.stat_name(i, "mean"), n.running_mean().copy()?));
            t.push((self.stat_name(i, "var"), n.running_var().copy()?));
        }
        Ok(t)
    }

    /// Inverse of [`save`](Self::save).
    pub fn load(&mut self, t: &HashMap<String, Tensor>) -> Result<()> {
        load_params(&self.params(), t)?;
        let get = |k: String| {
            t.get(&k)
                .cloned()
                .with_context(|| format!("no tensor `{k}`"))
        };
        let stats = (0..self.norms.len())
            .map(|i| {
                Ok((
                    get(self.stat_name(i, "mean"))?,
                    get(self.stat_name(i, "var"))?,
                ))
            })
            .collect::<Result<_>>()?;
        self.set_stats(stats)
    }

    fn stat_name(&self, i: usize, which: &str) -> String {
        format!("{}.bn{i}.running_{which}", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn q() -> BnQ {
        let mut rng = Rng::seed_from_u64(1);
        BnQ::new("q", &[3, 8, 1], Activation::Relu, 0.5, &mut rng).unwrap()
    }

    fn batch(rows: &[[f32; 3]]) -> Tensor {
        Tensor::from_vec(rows.concat(), (rows.len(), 3), &Device::Cpu).unwrap()
    }

    fn values(t: &Tensor) -> Vec<f32> {
        t.flatten_all().unwrap().to_vec1().unwrap()
    }

    #[test]
    fn evaluation_uses_the_running_statistics_and_training_moves_them() {
        let q = q();
        let row = [0.3f32, -1.0, 2.0];
        let others = batch(&[row, [5.0, 5.0, 5.0], [-4.0, 1.0, 0.0]]);
        // Evaluation: a row's value does not depend on the rows beside it.
        let alone = values(&q.forward(&batch(&[row]), false).unwrap())[0];
        let beside = values(&q.forward(&others, false).unwrap())[0];
        assert_eq!(alone, beside);
        // Training: it does (batch statistics), and the running statistics move...
        let trained = values(&q.forward(&others, true).unwrap())[0];
        assert_ne!(trained, alone);
        // ...so the evaluation after it differs from the one before.
        let after = values(&q.forward(&batch(&[row]), false).unwrap())[0];
        assert_ne!(after, alone);
    }

    #[test]
    fn save_and_load_give_the_same_function() {
        let a = q();
        let x = batch(&[[1.0, 2.0, 3.0], [0.0, -1.0, 4.0], [2.0, 2.0, -2.0]]);
        a.forward(&x, true).unwrap();
        let t: HashMap<String, Tensor> = a.save().unwrap().into_iter().collect();
        let mut rng = Rng::seed_from_u64(9);
        let mut b = BnQ::new("q", &[3, 8, 1], Activation::Relu, 0.5, &mut rng).unwrap();
        assert_ne!(
            values(&a.forward(&x, false).unwrap()),
            values(&b.forward(&x, false).unwrap())
        );
        b.load(&t).unwrap();
        assert_eq!(
            values(&a.forward(&x, false).unwrap()),
            values(&b.forward(&x, false).unwrap())
        );
    }
}
