//! `clawrl serve` latency over loopback: one client, kept-alive connection, requests one after
//! another, for batch 1 and batch 64 (one distillation step of 64 environments), against the
//! network's own forward pass in-process (the floor the HTTP round trip adds to).
//!
//! The served policy has the shape of the quadruped teacher (`configs/run/quadruped_flat_ppo.toml`:
//! 83 privileged values, 128-128 ELU, 16 actions) with random weights: latency depends on the
//! shapes, not on the values.
//!
//!     RAYON_NUM_THREADS=1 cargo bench -p clawrl-endpoint --features server --bench latency [-- REQUESTS]
use std::path::Path;
use std::time::{Duration, Instant};

use clawrl_endpoint::api::Provenance;
use clawrl_endpoint::server::{ServeOptions, ServedModel, spawn};
use clawrl_endpoint::{Client, EndpointConfig, ModelInfo};
use clawrl_policy::{Activation, ObsSource, PolicyConfig, Registry, Rng};
use rand::SeedableRng;

const OBS: usize = 83;
const ACTIONS: usize = 16;

fn teacher() -> Box<dyn clawrl_policy::Policy> {
    let cfg = PolicyConfig {
        kind: "gaussian_mlp".into(),
        obs_dim: OBS,
        action_dim: ACTIONS,
        obs_source: ObsSource::Privileged,
        hidden: vec![128, 128],
        activation: Activation::Elu,
        init_std: 1.0,
        obs_clip: 10.0,
        history: 0,
        conv_channels: 0,
    };
    Registry::default()
        .build(&cfg, &mut Rng::seed_from_u64(1))
        .unwrap()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn report(what: &str, mut t: Vec<Duration>) -> (f64, f64) {
    t.sort();
    let (p50, p99) = (percentile(&t, 0.5), percentile(&t, 0.99));
    println!(
        "{what:<34} n={:<6} p50 {p50:>8.1} us  p99 {p99:>8.1} us  p99.9 {:>8.1} us  max {:>8.1} us",
        t.len(),
        percentile(&t, 0.999),
        t.last().unwrap().as_secs_f64() * 1e6
    );
    (p50, p99)
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5000);
    let policy = teacher();
    let cfg = policy.config().clone();
    let info = ModelInfo::new(
        "teacher",
        &cfg,
        false,
        Provenance {
            task: "quadruped_flat".into(),
            sha256: "0".repeat(64),
            obs_names: (0..OBS).map(|i| format!("o{i}")).collect(),
            action_names: (0..ACTIONS).map(|i| format!("a{i}")).collect(),
            train_config: String::new(),
        },
    );
    let local = teacher();
    let server = spawn(
        vec![ServedModel { info, policy }],
        &ServeOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            api_key: Some("bench-key".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let toml = format!(
        "[endpoint]\nbase_url = \"http://{}/v1\"\napi_key = \"bench-key\"\nteacher_model = \"teacher\"\nstudent_model = \"teacher\"\n",
        server.addr
    );
    let ep = EndpointConfig::from_str(&toml, Path::new("bench"), &|_| None).unwrap();
    let client = Client::new(ep, &|_| None).unwrap();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "clawrl serve latency over loopback, {n} sequential requests per row; RAYON_NUM_THREADS={}; load average {}",
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset".into()),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    for batch in [1usize, 64] {
        let obs: Vec<f32> = (0..batch * OBS)
            .map(|i| ((i % 17) as f32 - 8.0) * 0.1)
            .collect();
        // Warm-up: connection, allocator, candle's first-call costs.
        for _ in 0..200 {
            client.act("teacher", &obs, OBS, true).unwrap();
            local.gaussians(&obs).unwrap();
        }
        let mut http = Vec::with_capacity(n);
        let mut forward = Vec::with_capacity(n);
        // Interleaved, so both see the same machine.
        for _ in 0..n {
            let t = Instant::now();
            let a = client.act("teacher", &obs, OBS, true).unwrap();
            http.push(t.elapsed());
            assert_eq!(a.actions.len(), batch * ACTIONS);
            let t = Instant::now();
            local.gaussians(&obs).unwrap();
            forward.push(t.elapsed());
        }
        let (h50, _) = report(&format!("POST /v1/act batch {batch}"), http);
        let (f50, _) = report(&format!("in-process forward batch {batch}"), forward);
        println!("  HTTP + JSON adds {:.1} us at the median", h50 - f50);
    }
    server.stop();
}
