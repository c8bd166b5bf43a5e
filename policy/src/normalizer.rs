//! Running observation normalisation (Welford / Chan parallel update), saved with the policy so
//! the exported network sees what it saw in training.
use candle_core::{Device, Tensor};

use crate::{PolicyError, Result};

#[derive(Debug, Clone, PartialEq)]
pub struct Normalizer {
    pub mean: Vec<f64>,
    pub var: Vec<f64>,
    /// Samples seen (starts at a tiny value so the first update dominates).
    pub count: f64,
    /// Normalised values are clamped to `±clip`.
    pub clip: f32,
    /// When false, [`Normalizer::update`] is a no-op (evaluation, deployment).
    pub training: bool,
}

/// Added to the variance before the square root (recorded in a policy bundle).
pub const EPS: f64 = 1e-8;

impl Normalizer {
    pub fn new(dim: usize, clip: f32) -> Self {
        Self {
            mean: vec![0.0; dim],
            var: vec![1.0; dim],
            count: 1e-4,
            clip,
            training: true,
        }
    }

    pub fn dim(&self) -> usize {
        self.mean.len()
    }

    /// Folds a row-major `[n, dim]` batch into the running statistics.
    pub fn update(&mut self, batch: &[f32]) {
        let d = self.dim();
        if !self.training || d == 0 || batch.is_empty() {
            return;
        }
        let n = (batch.len() / d) as f64;
        let mut bmean = vec![0.0f64; d];
        for row in batch.chunks_exact(d) {
            for (m, &x) in bmean.iter_mut().zip(row) {
                *m += f64::from(x);
            }
        }
        bmean.iter_mut().for_each(|m| *m /= n);
        let mut bvar = vec![0.0f64; d];
        for row in batch.chunks_exact(d) {
            for ((v, &x), m) in bvar.iter_mut().zip(row).zip(&bmean) {
                let e = f64::from(x) - m;
                *v += e * e;
            }
        }
        bvar.iter_mut().for_each(|v| *v /= n);
        let total = self.count + n;
        for i in 0..d {
            let delta = bmean[i] - self.mean[i];
            let m2 =
                self.var[i] * self.count + bvar[i] * n + delta * delta * self.count * n / total;
            self.mean[i] += delta * n / total;
            self.var[i] = m2 / total;
        }
        self.count = total;
    }

    /// Normalises a row-major batch into `out` (resized to fit).
    pub fn normalize_into(&self, batch: &[f32], out: &mut Vec<f32>) {
        let d = self.dim();
        out.clear();
        out.reserve(batch.len());
        let scale: Vec<f64> = self.var.iter().map(|v| 1.0 / (v + EPS).sqrt()).collect();
        for row in batch.chunks_exact(d) {
            for i in 0..d {
                let z = ((f64::from(row[i]) - self.mean[i]) * scale[i]) as f32;
                out.push(z.clamp(-self.clip, self.clip));
            }
        }
    }

    pub fn normalize(&self, batch: &[f32]) -> Vec<f32> {
        let mut out = Vec::new();
        self.normalize_into(batch, &mut out);
        out
    }

    /// Tensors `{prefix}.mean`, `{prefix}.var`, `{prefix}.count` (f64) and `{prefix}.clip` (f32).
    pub fn to_tensors(&self, prefix: &str) -> Result<Vec<(String, Tensor)>> {
        let dev = &Device::Cpu;
        Ok(vec![
            (
                format!("{prefix}.mean"),
                Tensor::from_slice(&self.mean, self.dim(), dev)?,
            ),
            (
                format!("{prefix}.var"),
                Tensor::from_slice(&self.var, self.dim(), dev)?,
            ),
            (
                format!("{prefix}.count"),
                Tensor::from_slice(&[self.count], 1, dev)?,
            ),
            (
                format!("{prefix}.clip"),
                Tensor::from_slice(&[self.clip], 1, dev)?,
            ),
        ])
    }

    /// Reads back what [`Normalizer::to_tensors`] wrote.
    pub fn load_tensors(
        &mut self,
        prefix: &str,
        get: &dyn Fn(&str) -> Option<Tensor>,
    ) -> Result<()> {
        let fetch = |k: &str| {
            get(&format!("{prefix}.{k}"))
                .ok_or_else(|| PolicyError::Config(format!("missing {prefix}.{k}")))
        };
        let mean: Vec<f64> = fetch("mean")?.to_vec1()?;
        let var: Vec<f64> = fetch("var")?.to_vec1()?;
        if mean.len() != self.dim() || var.len() != self.dim() {
            return Err(PolicyError::Config(format!(
                "normaliser {prefix} has {} means and {} variances, the policy takes {}",
                mean.len(),
                var.len(),
                self.dim()
            )));
        }
        self.mean = mean;
        self.var = var;
        self.count = fetch("count")?.to_vec1::<f64>()?[0];
        self.clip = fetch("clip")?.to_vec1::<f32>()?[0];
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_batch_statistics() {
        let mut n = Normalizer::new(2, 10.0);
        n.count = 0.0;
        // Two updates of [x, 2x+1] rows; the total is rows x = 1..=6.
        n.update(&[1.0, 3.0, 2.0, 5.0, 3.0, 7.0]);
        n.update(&[4.0, 9.0, 5.0, 11.0, 6.0, 13.0]);
        // mean x = 3.5, var x = 35/12 (population); column 2 is 2x+1: mean 8, var 4*35/12.
        assert!((n.mean[0] - 3.5).abs() < 1e-12 && (n.mean[1] - 8.0).abs() < 1e-12);
        assert!((n.var[0] - 35.0 / 12.0).abs() < 1e-12);
        assert!((n.var[1] - 35.0 / 3.0).abs() < 1e-12);
        let z = n.normalize(&[3.5, 8.0 + (35.0f64 / 3.0).sqrt() as f32]);
        assert!(z[0].abs() < 1e-6 && (z[1] - 1.0).abs() < 1e-4, "{z:?}");
    }

    #[test]
    fn clips_and_freezes() {
        let mut n = Normalizer::new(1, 5.0);
        n.update(&[0.0, 0.0, 0.0, 0.0]);
        assert_eq!(n.normalize(&[1.0e3]), vec![5.0]);
        n.training = false;
        let before = n.clone();
        n.update(&[100.0]);
        assert_eq!(n, before);
    }

    #[test]
    fn save_load_round_trip() {
        let mut n = Normalizer::new(3, 7.0);
        n.update(&[1.0, 2.0, 3.0, -1.0, 0.5, 9.0]);
        let tensors = n.to_tensors("obs_norm").unwrap();
        let dir = std::env::temp_dir().join(format!("clawrl-norm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("n.safetensors");
        crate::io::save(&path, &tensors, &Default::default()).unwrap();
        let (loaded, _) = crate::io::load(&path).unwrap();
        let mut m = Normalizer::new(3, 1.0);
        m.load_tensors("obs_norm", &|k| loaded.get(k).cloned())
            .unwrap();
        assert_eq!(m.mean, n.mean);
        assert_eq!(m.var, n.var);
        assert_eq!((m.count, m.clip), (n.count, n.clip));
        let mut wrong = Normalizer::new(2, 1.0);
        assert!(
            wrong
                .load_tensors("obs_norm", &|k| loaded.get(k).cloned())
                .is_err()
        );
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn an_empty_batch_changes_nothing() {
        let mut n = Normalizer::new(2, 10.0);
        n.update(&[1.0, 3.0, 2.0, 5.0]);
        let before = n.clone();
        n.update(&[]);
        assert_eq!(n, before);
    }

    #[test]
    fn a_constant_input_normalises_to_finite_values() {
        // Zero variance (a value that never changed): EPS keeps the scale finite.
        let mut n = Normalizer::new(1, 5.0);
        n.mean = vec![2.0];
        n.var = vec![0.0];
        assert_eq!(n.normalize(&[2.0, 3.0, 1.0]), vec![0.0, 5.0, -5.0]);
    }

    #[test]
    fn a_saved_normaliser_of_another_size_is_refused_by_either_vector() {
        let n = Normalizer::new(2, 7.0);
        let t: std::collections::HashMap<String, Tensor> =
            n.to_tensors("n").unwrap().into_iter().collect();
        for bad in ["n.mean", "n.var"] {
            let mut t = t.clone();
            t.insert(
                bad.into(),
                Tensor::from_slice(&[0.0f64; 3], 3, &Device::Cpu).unwrap(),
            );
            let mut m = Normalizer::new(2, 7.0);
            let e = m.load_tensors("n", &|k| t.get(k).cloned()).unwrap_err();
            let e = e.to_string();
            assert!(
                e.contains(" 3 ") && e.contains("the policy takes 2"),
                "{bad}: {e}"
            );
        }
    }
}
