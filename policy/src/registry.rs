//! Policy kinds by name. A new network type is one [`Registry::register`] call: the trainer,
//! the distiller and the exporter only see [`Policy`] and build through the registry.
use std::collections::BTreeMap;
use std::path::Path;

use rand::SeedableRng;

use crate::io::{self, Metadata};
use crate::policy::{GaussianMlp, Policy, PolicyConfig};
use crate::{PolicyError, Result, Rng};

pub type Constructor = fn(&PolicyConfig, &mut Rng) -> Result<Box<dyn Policy>>;

/// Metadata keys of a saved policy.
pub const META_FORMAT: &str = "clawrl.format";
pub const META_CONFIG: &str = "clawrl.policy_config";
pub const FORMAT: &str = "clawrl-policy-1";
/// Tensor name prefix of the observation normaliser in a saved policy.
pub const NORMALIZER: &str = "obs_normalizer";

#[derive(Clone)]
pub struct Registry {
    kinds: BTreeMap<String, Constructor>,
}

impl Default for Registry {
    /// The built-in kinds: `gaussian_mlp` (state-independent log-std, PPO; with `history` > 0
    /// the compact student over stacked frames), `gaussian_mlp_state_std` (state-dependent
    /// log-std), `squashed_gaussian_mlp` (state-dependent, tanh; SAC) and `temporal_conv` (a 1-D
    /// convolution over the history, for students).
    fn default() -> Self {
        let mut r = Self {
            kinds: BTreeMap::new(),
        };
        r.register("gaussian_mlp", |c, rng| {
            Ok(Box::new(GaussianMlp::new(c, false, false, rng)?))
        });
        r.register("gaussian_mlp_state_std", |c, rng| {
            Ok(Box::new(GaussianMlp::new(c, true, false, rng)?))
        });
        r.register("squashed_gaussian_mlp", |c, rng| {
            Ok(Box::new(GaussianMlp::new(c, true, true, rng)?))
        });
        r.register("temporal_conv", |c, rng| {
            Ok(Box::new(crate::temporal::TemporalConv::new(c, rng)?))
        });
        r
    }
}

impl Registry {
    pub fn register(&mut self, kind: &str, constructor: Constructor) {
        self.kinds.insert(kind.to_string(), constructor);
    }

    pub fn kinds(&self) -> Vec<&str> {
        self.kinds.keys().map(String::as_str).collect()
    }

    /// Builds a fresh policy of `config.kind` with weights drawn from `rng`.
    pub fn build(&self, config: &PolicyConfig, rng: &mut Rng) -> Result<Box<dyn Policy>> {
        let ctor = self.kinds.get(&config.kind).ok_or_else(|| {
            PolicyError::UnknownKind(config.kind.clone(), self.kinds().join(", "))
        })?;
        ctor(config, rng)
    }

    /// Tensors (parameters, then the normaliser) and metadata of a policy.
    pub fn to_parts(policy: &dyn Policy) -> Result<(Vec<(String, candle_core::Tensor)>, Metadata)> {
        let mut tensors: Vec<(String, candle_core::Tensor)> = policy
            .params()
            .into_iter()
            .map(|(n, v)| (n, v.as_tensor().clone()))
            .collect();
        tensors.extend(policy.normalizer().to_tensors(NORMALIZER)?);
        let config =
            toml::to_string(policy.config()).map_err(|e| PolicyError::Config(e.to_string()))?;
        let meta: Metadata = [
            (META_FORMAT.to_string(), FORMAT.to_string()),
            (META_CONFIG.to_string(), config),
        ]
        .into();
        Ok((tensors, meta))
    }

    /// Saves a policy (weights, normaliser, config) to one safetensors file, atomically.
    pub fn save(policy: &dyn Policy, path: &Path) -> Result<()> {
        Self::save_with(policy, path, &Metadata::new())
    }

    /// As [`Registry::save`], with extra metadata entries (for example the run's configuration).
    pub fn save_with(policy: &dyn Policy, path: &Path, extra: &Metadata) -> Result<()> {
        let (tensors, mut meta) = Self::to_parts(policy)?;
        meta.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        io::save(path, &tensors, &meta)
    }

    /// Rebuilds a policy from tensors and metadata (as read from a policy file or a checkpoint).
    pub fn from_parts(
        &self,
        get: &dyn Fn(&str) -> Option<candle_core::Tensor>,
        meta: &Metadata,
        path: &Path,
    ) -> Result<Box<dyn Policy>> {
        let bad = |reason: String| PolicyError::BadFile {
            path: path.to_path_buf(),
            reason,
        };
        let text = meta
            .get(META_CONFIG)
            .ok_or_else(|| bad(format!("no `{META_CONFIG}` metadata")))?;
        let config: PolicyConfig =
            toml::from_str(text).map_err(|e| bad(format!("policy config: {e}")))?;
        let mut policy = self.build(&config, &mut Rng::seed_from_u64(0))?;
        for (name, var) in policy.params() {
            let t = get(&name).ok_or_else(|| bad(format!("missing tensor `{name}`")))?;
            if t.dims() != var.dims() {
                return Err(bad(format!(
                    "tensor `{name}` has shape {:?}, expected {:?}",
                    t.dims(),
                    var.dims()
                )));
            }
            var.set(&t)?;
        }
        policy
            .normalizer_mut()
            .load_tensors(NORMALIZER, get)
            .map_err(|e| bad(e.to_string()))?;
        Ok(policy)
    }

    /// Loads a policy saved by [`Registry::save`]; its normaliser is frozen.
    pub fn load(&self, path: &Path) -> Result<Box<dyn Policy>> {
        let (tensors, meta) = io::load(path)?;
        let mut p = self.from_parts(&|k| tensors.get(k).cloned(), &meta, path)?;
        p.normalizer_mut().training = false;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ObsSource;
    use crate::{Activation, GaussianOut};
    use candle_core::{Device, Tensor, Var};

    fn cfg(kind: &str) -> PolicyConfig {
        PolicyConfig {
            kind: kind.into(),
            obs_dim: 3,
            action_dim: 2,
            obs_source: ObsSource::Privileged,
            hidden: vec![8, 8],
            activation: Activation::Elu,
            init_std: 0.5,
            obs_clip: 10.0,
            history: 0,
            conv_channels: 4,
        }
    }

    #[test]
    fn lookup_builds_each_kind_and_refuses_unknown() {
        let r = Registry::default();
        let mut rng = Rng::seed_from_u64(1);
        let x = Tensor::zeros((4, 3), candle_core::DType::F32, &Device::Cpu).unwrap();
        for kind in [
            "gaussian_mlp",
            "gaussian_mlp_state_std",
            "squashed_gaussian_mlp",
            "temporal_conv",
        ] {
            let p = r.build(&cfg(kind), &mut rng).unwrap();
            let d = p.distribution(&x).unwrap();
            assert_eq!(d.mean.dims(), &[4, 2]);
            assert_eq!(d.log_std.dims(), &[4, 2]);
            // Every kind starts at the configured noise level.
            let ls: Vec<Vec<f32>> = d.log_std.to_vec2().unwrap();
            assert!((ls[0][0] - 0.5f32.ln()).abs() < 1e-5, "{kind}: {ls:?}");
            assert_eq!(p.squashed(), kind.starts_with("squashed"));
        }
        let e = r
            .build(&cfg("transformer"), &mut rng)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("transformer") && e.contains("gaussian_mlp"),
            "{e}"
        );
    }

    /// A new network type is one registration away.
    struct Constant(PolicyConfig, Var, crate::Normalizer);
    impl Policy for Constant {
        fn config(&self) -> &PolicyConfig {
            &self.0
        }
        fn params(&self) -> Vec<(String, Var)> {
            vec![("c".into(), self.1.clone())]
        }
        fn normalizer(&self) -> &crate::Normalizer {
            &self.2
        }
        fn normalizer_mut(&mut self) -> &mut crate::Normalizer {
            &mut self.2
        }
        fn distribution(&self, obs: &Tensor) -> Result<GaussianOut> {
            let b = obs.dim(0)?;
            let mean = self
                .1
                .as_tensor()
                .unsqueeze(0)?
                .broadcast_as((b, self.0.action_dim))?;
            Ok(GaussianOut {
                log_std: mean.zeros_like()?,
                mean,
            })
        }
        fn distribution_detached(&self, obs: &Tensor) -> Result<GaussianOut> {
            self.distribution(obs)
        }
    }

    #[test]
    fn registered_kind_round_trips_through_a_file() {
        let mut r = Registry::default();
        r.register("constant", |c, _| {
            let v = Var::from_tensor(&Tensor::new(&[0.25f32, -0.75], &Device::Cpu)?)?;
            Ok(Box::new(Constant(
                c.clone(),
                v,
                crate::Normalizer::new(c.obs_dim, c.obs_clip),
            )))
        });
        let p = r
            .build(&cfg("constant"), &mut Rng::seed_from_u64(0))
            .unwrap();
        assert_eq!(
            p.deterministic(&[1.0, 2.0, 3.0]).unwrap(),
            vec![0.25, -0.75]
        );
        let dir = std::env::temp_dir().join(format!("clawrl-reg-{}", std::process::id()));
        let path = dir.join("p.safetensors");
        p.params()[0]
            .1
            .set(&Tensor::new(&[1.5f32, 2.5], &Device::Cpu).unwrap())
            .unwrap();
        Registry::save(p.as_ref(), &path).unwrap();
        let q = r.load(&path).unwrap();
        assert_eq!(q.deterministic(&[0.0, 0.0, 0.0]).unwrap(), vec![1.5, 2.5]);
        // Without the registration the file is refused by kind name.
        let e = Registry::default().load(&path).err().unwrap().to_string();
        assert!(e.contains("constant"), "{e}");
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn saved_gaussian_policy_acts_identically_after_load() {
        let r = Registry::default();
        let mut p = r
            .build(&cfg("squashed_gaussian_mlp"), &mut Rng::seed_from_u64(3))
            .unwrap();
        p.normalizer_mut().update(&[1.0, 2.0, 3.0, 4.0, -5.0, 6.0]);
        let obs = [0.5, -1.0, 2.0, 1.0, 1.0, 1.0];
        let before = p.deterministic(&obs).unwrap();
        let dir = std::env::temp_dir().join(format!("clawrl-reg2-{}", std::process::id()));
        let path = dir.join("p.safetensors");
        Registry::save(p.as_ref(), &path).unwrap();
        let q = r.load(&path).unwrap();
        assert_eq!(q.deterministic(&obs).unwrap(), before);
        assert!(!q.normalizer().training);
        assert!(before.iter().all(|a| a.abs() < 1.0));
        std::fs::remove_dir_all(dir).ok();
    }
}
