//! A real `clawrl serve` server in-process on 127.0.0.1 (an ephemeral port), serving two small
//! random policies, and stand-ins that misbehave on purpose.
#![allow(dead_code)]
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use clawrl_endpoint::api::Provenance;
use clawrl_endpoint::server::{ServeOptions, ServedModel, Server, spawn};
use clawrl_endpoint::{EndpointConfig, ModelInfo};
use clawrl_policy::{Activation, ObsSource, Policy, PolicyConfig, Registry, Rng};
use rand::SeedableRng;

pub const KEY: &str = "test-key-123";

pub fn policy(kind: &str, obs_dim: usize, history: usize, seed: u64) -> Box<dyn Policy> {
    let cfg = PolicyConfig {
        kind: kind.into(),
        obs_dim,
        action_dim: 3,
        obs_source: if history == 0 {
            ObsSource::Privileged
        } else {
            ObsSource::Onboard
        },
        hidden: vec![16, 16],
        activation: Activation::Elu,
        init_std: 0.7,
        obs_clip: 10.0,
        history,
        conv_channels: 0,
    };
    let mut p = Registry::default()
        .build(&cfg, &mut Rng::seed_from_u64(seed))
        .unwrap();
    let fake: Vec<f32> = (0..obs_dim * 8)
        .map(|i| (i % 7) as f32 * 0.3 - 1.0)
        .collect();
    p.normalizer_mut().update(&fake);
    p.normalizer_mut().training = false;
    p
}

pub fn served(id: &str, p: Box<dyn Policy>) -> ServedModel {
    let c = p.config().clone();
    let info = ModelInfo::new(
        id,
        &c,
        p.squashed(),
        Provenance {
            task: "test_task".into(),
            sha256: "ab".repeat(32),
            obs_names: (0..c.frame_dim()).map(|i| format!("o{i}")).collect(),
            action_names: (0..c.action_dim).map(|i| format!("a{i}")).collect(),
            train_config: String::new(),
        },
    );
    ServedModel { info, policy: p }
}

/// The teacher (6 privileged values) and the student (2 onboard values, history 1).
pub fn models() -> Vec<ServedModel> {
    vec![
        served("teacher", policy("gaussian_mlp", 6, 0, 1)),
        served("student", policy("gaussian_mlp", 4, 1, 2)),
        served("sac", policy("squashed_gaussian_mlp", 6, 0, 3)),
    ]
}

pub fn server_with(opts: ServeOptions) -> Server {
    spawn(models(), &opts).unwrap()
}

pub fn server() -> Server {
    server_with(ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        api_key: Some(KEY.into()),
        ..Default::default()
    })
}

pub fn endpoint_toml(base_url: &str, key: &str, timeout: f64) -> String {
    format!(
        "[endpoint]\nbase_url = \"{base_url}\"\napi_key = \"{key}\"\nteacher_model = \"teacher\"\nstudent_model = \"student\"\ntimeout = {timeout}\n"
    )
}

pub fn config(base_url: &str, key: &str, timeout: f64) -> EndpointConfig {
    EndpointConfig::from_str(
        &endpoint_toml(base_url, key, timeout),
        Path::new("configs/endpoint.toml"),
        &|_| None,
    )
    .unwrap()
}

pub fn no_env(_: &str) -> Option<String> {
    None
}

/// A raw HTTP exchange (headers exactly as given), returning status and body.
pub fn raw(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|x| x.1.to_string())
        .unwrap_or_default();
    (status, body)
}

pub fn post(addr: SocketAddr, path: &str, auth: Option<&str>, body: &str) -> (u16, String) {
    let auth = auth
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    raw(
        addr,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

pub fn get(addr: SocketAddr, path: &str, auth: Option<&str>) -> (u16, String) {
    let auth = auth
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    raw(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}\r\n"),
    )
}

/// `{"error": {...}}` of a body, or a panic naming the body.
pub fn error_of(body: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert!(
        v["error"]["message"].is_string()
            && v["error"]["type"].is_string()
            && v["error"]["code"].is_string(),
        "{body}"
    );
    v["error"].clone()
}

/// A stand-in server: answers every connection with `answer` (raw HTTP), or, with `None`,
/// accepts and never answers. Runs until the test process ends.
pub fn stand_in(answer: Option<String>) -> SocketAddr {
    stand_in_seq(vec![answer]).0
}

/// As [`stand_in`], the n-th connection answered with `answers[n]` (the last one from then on);
/// also counts the connections.
pub fn stand_in_seq(answers: Vec<Option<String>>) -> (SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let n = seen.fetch_add(1, Ordering::SeqCst);
            match &answers[n.min(answers.len() - 1)] {
                Some(a) => {
                    let mut buf = [0u8; 65536];
                    let _ = s.read(&mut buf);
                    let _ = s.write_all(a.as_bytes());
                }
                None => held.push(s),
            }
        }
    });
    (addr, count)
}

/// A raw HTTP answer with `Connection: close`.
pub fn answer(status: &str, extra_headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{extra_headers}\r\n{body}",
        body.len()
    )
}

/// A local port with nothing listening on it.
pub fn closed_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}
