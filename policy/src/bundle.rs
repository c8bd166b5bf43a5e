//! A policy to and from the network part of a policy bundle (`clawrl-bundle`): weights,
//! config and normaliser. The rest of the manifest (robot, observation layout, action map,
//! provenance) is the exporter's.
use candle_core::{Device, Tensor};
use clawrl_bundle::{Bundle, NetworkSpec, NormalizerStats};

use crate::normalizer::EPS;
use crate::{Policy, PolicyConfig, PolicyError, Registry, Result};

/// What a bundle holds of a policy.
pub struct BundleParts {
    pub network: NetworkSpec,
    pub normalizer: NormalizerStats,
    pub tensors: Vec<clawrl_bundle::Tensor>,
}

pub fn to_bundle_parts(policy: &dyn Policy) -> Result<BundleParts> {
    let mut tensors = Vec::new();
    for (name, var) in policy.params() {
        let t = var.as_tensor();
        let data: Vec<f32> = t.flatten_all()?.to_vec1()?;
        tensors.push(clawrl_bundle::Tensor::new(name, t.dims().to_vec(), data));
    }
    let n = policy.normalizer();
    let config =
        toml::to_string(policy.config()).map_err(|e| PolicyError::Config(e.to_string()))?;
    Ok(BundleParts {
        network: NetworkSpec {
            kind: policy.config().kind.clone(),
            policy_config: config,
            parameters: tensors.iter().map(|t| t.data.len()).sum(),
        },
        normalizer: NormalizerStats {
            mean: n.mean.clone(),
            var: n.var.clone(),
            epsilon: EPS,
            clip: n.clip,
        },
        tensors,
    })
}

/// Rebuilds the bundle's policy through the registry, its normaliser frozen. Refuses a bundle
/// whose network config disagrees with its own manifest.
pub fn from_bundle(registry: &Registry, bundle: &Bundle) -> Result<Box<dyn Policy>> {
    let bad = |reason: String| PolicyError::BadFile {
        path: bundle.path.clone(),
        reason,
    };
    let m = &bundle.manifest;
    let config: PolicyConfig = toml::from_str(&m.network.policy_config)
        .map_err(|e| bad(format!("network.policy_config: {e}")))?;
    let obs = &m.observation;
    let checks = [
        (config.kind == m.network.kind, "network.kind"),
        (
            config.obs_dim == obs.stacked_dim(),
            "observation (stacked size)",
        ),
        (config.history == obs.history, "observation.history"),
        (config.obs_source == obs.source, "observation.source"),
        (config.action_dim == m.action.names.len(), "action.names"),
        (
            obs.normalizer.epsilon == EPS,
            "observation.normalizer.epsilon",
        ),
    ];
    if let Some((_, field)) = checks.iter().find(|(ok, _)| !ok) {
        return Err(bad(format!(
            "{field} disagrees with the network's config ({})",
            m.network.policy_config.replace('\n', "; ")
        )));
    }
    let mut policy = registry.build(&config, &mut rand::SeedableRng::seed_from_u64(0))?;
    for (name, var) in policy.params() {
        let t = bundle
            .tensor(&name)
            .ok_or_else(|| bad(format!("no tensor `{name}`")))?;
        if t.shape != var.dims() {
            return Err(bad(format!(
                "tensor `{name}` has shape {:?}, the network needs {:?}",
                t.shape,
                var.dims()
            )));
        }
        var.set(&Tensor::from_slice(
            &t.data,
            t.shape.as_slice(),
            &Device::Cpu,
        )?)?;
    }
    let n = policy.normalizer_mut();
    n.mean = obs.normalizer.mean.clone();
    n.var = obs.normalizer.var.clone();
    n.clip = obs.normalizer.clip;
    n.training = false;
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The HIL suite's fixture: a bundle `clawrl export` wrote.
    fn fixture() -> Bundle {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../hil-tests/fixtures/student.clawrl");
        clawrl_bundle::read(&path, &clawrl_bundle::Trust::default()).unwrap()
    }

    #[test]
    fn a_bundle_loads_back_with_its_weights_and_a_frozen_normaliser() {
        let b = fixture();
        let p = from_bundle(&Registry::default(), &b).unwrap();
        for (name, var) in p.params() {
            let got: Vec<f32> = var.as_tensor().flatten_all().unwrap().to_vec1().unwrap();
            assert_eq!(got, b.tensor(&name).unwrap().data, "{name}");
        }
        let n = p.normalizer();
        assert!(!n.training);
        assert_eq!(n.mean, b.manifest.observation.normalizer.mean);
    }

    /// A manifest field and a change that breaks it.
    type Breakage = (&'static str, fn(&mut Bundle));

    #[test]
    fn a_manifest_that_disagrees_with_the_network_is_refused_by_field() {
        let cases: [Breakage; 4] = [
            ("network.kind", |b| {
                b.manifest.network.kind = "temporal_conv".into()
            }),
            ("action.names", |b| {
                b.manifest.action.names.pop();
            }),
            ("observation.normalizer.epsilon", |b| {
                b.manifest.observation.normalizer.epsilon = 1e-5
            }),
            ("tensor `actor.0.bias` has shape", |b| {
                let t = b
                    .tensors
                    .iter_mut()
                    .find(|t| t.name == "actor.0.bias")
                    .unwrap();
                t.shape = vec![1, t.data.len()];
            }),
        ];
        for (field, break_it) in cases {
            let mut b = fixture();
            break_it(&mut b);
            let e = from_bundle(&Registry::default(), &b)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
    }
}
