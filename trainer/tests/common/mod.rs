//! Shared helpers of the trainer's integration tests.
#![allow(dead_code)]
use std::path::PathBuf;

use clawrl_trainer::{TrainConfig, load_train_config};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn config(name: &str, overrides: &[&str]) -> TrainConfig {
    clawrl_policy::init_candle_threads(1);
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    load_train_config(&repo().join("configs/run").join(name), &o).unwrap()
}

/// A fresh, empty directory under the system temp dir.
pub fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("clawrl-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
