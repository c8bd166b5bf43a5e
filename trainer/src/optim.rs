//! Adam with its state in plain vectors (so checkpoints can save it; candle-nn's AdamW keeps its
//! moments private) and global gradient-norm clipping over candle's `GradStore`.
use std::collections::HashMap;

use anyhow::{Context, Result};
use candle_core::backprop::GradStore;
use candle_core::{Device, Tensor, Var};

/// Global L2 norm of the gradients of `params`; when it exceeds `max_norm` every gradient is
/// scaled by `max_norm / norm` in the store. Returns the norm before clipping.
pub fn clip_grad_norm(
    grads: &mut GradStore,
    params: &[(String, Var)],
    max_norm: f64,
) -> Result<f64> {
    let mut sq = 0.0f64;
    for (_, v) in params {
        if let Some(g) = grads.get(v.as_tensor()) {
            sq += f64::from(g.sqr()?.sum_all()?.to_scalar::<f32>()?);
        }
    }
    let norm = sq.sqrt();
    if norm > max_norm {
        let scale = max_norm / (norm + 1e-6);
        for (_, v) in params {
            if let Some(g) = grads.get(v.as_tensor()) {
                let scaled = (g * scale)?;
                grads.insert(v.as_tensor(), scaled);
            }
        }
    }
    Ok(norm)
}

/// Copies the gradients of `params` from `from` into `into`: the halves of a loss
/// differentiated apart (see `algorithms::join`) become one store, the same numbers as one
/// backward of the sum when no parameter is in both halves.
pub fn merge_grads(into: &mut GradStore, from: &GradStore, params: &[(String, Var)]) {
    for (_, v) in params {
        if let Some(g) = from.get(v.as_tensor()) {
            into.insert(v.as_tensor(), g.clone());
        }
    }
}

pub struct Adam {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub step: u64,
    params: Vec<(String, Var)>,
    m: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
}

impl Adam {
    pub fn new(params: Vec<(String, Var)>, lr: f64) -> Self {
        let m = params
            .iter()
            .map(|(_, p)| vec![0.0; p.elem_count()])
            .collect::<Vec<_>>();
        Self {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            step: 0,
            v: m.clone(),
            m,
            params,
        }
    }

    pub fn params(&self) -> &[(String, Var)] {
        &self.params
    }

    /// One step with the gradients in `grads` (parameters without a gradient are left alone).
    pub fn step(&mut self, grads: &GradStore) -> Result<()> {
        let mut gs = Vec::with_capacity(self.params.len());
        for (_, p) in &self.params {
            gs.push(match grads.get(p.as_tensor()) {
                Some(g) => Some(g.flatten_all()?.to_vec1::<f32>()?),
                None => None,
            });
        }
        self.step_with(&gs)
    }

    /// One step with gradients given as flat vectors, in parameter order.
    pub fn step_with(&mut self, grads: &[Option<Vec<f32>>]) -> Result<()> {
        self.step += 1;
        let t = self.step as i32;
        let c1 = 1.0 - self.beta1.powi(t);
        let c2 = 1.0 - self.beta2.powi(t);
        let step_size = (self.lr * c2.sqrt() / c1) as f32;
        let eps = (self.eps * c2.sqrt()) as f32;
        let (b1, b2) = (self.beta1 as f32, self.beta2 as f32);
        for (i, (_, p)) in self.params.iter().enumerate() {
            let Some(g) = &grads[i] else { continue };
            let mut w = p.as_tensor().flatten_all()?.to_vec1::<f32>()?;
            let (m, v) = (&mut self.m[i], &mut self.v[i]);
            for j in 0..w.len() {
                m[j] = b1 * m[j] + (1.0 - b1) * g[j];
                v[j] = b2 * v[j] + (1.0 - b2) * g[j] * g[j];
                // PyTorch's form: lr * m̂ / (sqrt(v̂) + eps), rearranged with the bias corrections.
                w[j] -= step_size * m[j] / (v[j].sqrt() + eps);
            }
            p.set(&Tensor::from_vec(w, p.shape(), &Device::Cpu)?)?;
        }
        Ok(())
    }

    /// Moments, step and learning rate as tensors named under `prefix`.
    pub fn state_tensors(&self, prefix: &str) -> Result<Vec<(String, Tensor)>> {
        let dev = &Device::Cpu;
        let mut out = vec![
            (
                format!("{prefix}.step"),
                Tensor::from_slice(&[self.step as f64], 1, dev)?,
            ),
            (
                format!("{prefix}.lr"),
                Tensor::from_slice(&[self.lr], 1, dev)?,
            ),
        ];
        for (i, (name, _)) in self.params.iter().enumerate() {
            out.push((
                format!("{prefix}.m.{name}"),
                Tensor::from_slice(&self.m[i], self.m[i].len(), dev)?,
            ));
            out.push((
                format!("{prefix}.v.{name}"),
                Tensor::from_slice(&self.v[i], self.v[i].len(), dev)?,
            ));
        }
        Ok(out)
    }

    pub fn load_state(&mut self, prefix: &str, t: &HashMap<String, Tensor>) -> Result<()> {
        let get = |k: String| {
            t.get(&k)
                .cloned()
                .with_context(|| format!("checkpoint lacks `{k}`"))
        };
        self.step = get(format!("{prefix}.step"))?.to_vec1::<f64>()?[0] as u64;
        self.lr = get(format!("{prefix}.lr"))?.to_vec1::<f64>()?[0];
        for (i, (name, _)) in self.params.iter().enumerate() {
            let m = get(format!("{prefix}.m.{name}"))?.to_vec1::<f32>()?;
            let v = get(format!("{prefix}.v.{name}"))?.to_vec1::<f32>()?;
            anyhow::ensure!(
                m.len() == self.m[i].len(),
                "optimiser state of `{name}` has the wrong size"
            );
            self.m[i] = m;
            self.v[i] = v;
        }
        Ok(())
    }
}

/// Sets each parameter to the matching tensor in `t`.
pub fn load_params(params: &[(String, Var)], t: &HashMap<String, Tensor>) -> Result<()> {
    for (name, var) in params {
        let src = t
            .get(name)
            .with_context(|| format!("checkpoint lacks `{name}`"))?;
        anyhow::ensure!(
            src.dims() == var.dims(),
            "`{name}` has shape {:?}, expected {:?}",
            src.dims(),
            var.dims()
        );
        var.set(src)?;
    }
    Ok(())
}

pub fn param_tensors(params: &[(String, Var)]) -> Vec<(String, Tensor)> {
    params
        .iter()
        .map(|(n, v)| (n.clone(), v.as_tensor().clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(values: &[f32]) -> Var {
        Var::from_tensor(&Tensor::from_slice(values, values.len(), &Device::Cpu).unwrap()).unwrap()
    }

    #[test]
    fn clips_global_norm_over_all_parameters() {
        // loss = 3a + 4b (a, b scalars): gradients (3, 4), global norm 5.
        let (a, b) = (var(&[1.0]), var(&[2.0]));
        let params = vec![("a".to_string(), a.clone()), ("b".to_string(), b.clone())];
        let loss = ((a.as_tensor() * 3.0).unwrap() + (b.as_tensor() * 4.0).unwrap())
            .unwrap()
            .sum_all()
            .unwrap();
        let mut grads = loss.backward().unwrap();
        let norm = clip_grad_norm(&mut grads, &params, 1.0).unwrap();
        assert!((norm - 5.0).abs() < 1e-6);
        let ga = grads.get(a.as_tensor()).unwrap().to_vec1::<f32>().unwrap()[0];
        let gb = grads.get(b.as_tensor()).unwrap().to_vec1::<f32>().unwrap()[0];
        // Scaled by 1/5: (0.6, 0.8), norm 1; direction kept.
        assert!(
            (ga - 0.6).abs() < 1e-5 && (gb - 0.8).abs() < 1e-5,
            "{ga} {gb}"
        );
        // Below the limit nothing changes.
        let mut grads = loss.backward().unwrap();
        assert!((clip_grad_norm(&mut grads, &params, 10.0).unwrap() - 5.0).abs() < 1e-6);
        assert_eq!(
            grads.get(b.as_tensor()).unwrap().to_vec1::<f32>().unwrap()[0],
            4.0
        );
    }

    #[test]
    fn adam_first_step_moves_by_lr_and_state_round_trips() {
        // Adam's first step is lr * g / |g| (bias-corrected m̂ = g, v̂ = g²), whatever the scale of g.
        let w = var(&[1.0, -1.0]);
        let mut opt = Adam::new(vec![("w".into(), w.clone())], 0.1);
        opt.step_with(&[Some(vec![100.0, -0.001])]).unwrap();
        let got = w.as_tensor().to_vec1::<f32>().unwrap();
        assert!(
            (got[0] - 0.9).abs() < 1e-5 && (got[1] + 0.9).abs() < 1e-4,
            "{got:?}"
        );
        let state: HashMap<_, _> = opt.state_tensors("opt").unwrap().into_iter().collect();
        let w2 = var(&w.as_tensor().to_vec1::<f32>().unwrap());
        let mut opt2 = Adam::new(vec![("w".into(), w2.clone())], 0.5);
        opt2.load_state("opt", &state).unwrap();
        assert_eq!((opt2.step, opt2.lr), (1, 0.1));
        opt.step_with(&[Some(vec![1.0, 1.0])]).unwrap();
        opt2.step_with(&[Some(vec![1.0, 1.0])]).unwrap();
        assert_eq!(
            w.as_tensor().to_vec1::<f32>().unwrap(),
            w2.as_tensor().to_vec1::<f32>().unwrap()
        );
    }
}
