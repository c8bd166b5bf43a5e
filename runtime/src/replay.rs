//! `clawrl-runtime replay LOG`: runs a telemetry log's recorded inputs through a fresh
//! controller with the same bundle and settings, and checks that every cycle's observation
//! frame, action, phase, goals and ticks come out bit for bit as the robot logged them.
use std::path::Path;

use anyhow::{Context, Result, bail};
use clawrl_bundle::Trust;
use clawrl_robot::quadruped::NUM_SERVOS;

use crate::controller::{Controller, Output};
use crate::inference::Student;
use crate::observation::ObservationBuilder;
use crate::telemetry::{Integrity, LogReader, Record};
use crate::wire::GoalEncoder;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayReport {
    pub cycles: u64,
    pub policy_cycles: u64,
    /// Cycles whose outputs differ from the log (the first one described).
    pub mismatches: u64,
    pub first_mismatch: Option<String>,
    /// What the log's trailer says ([`crate::telemetry::Integrity`]).
    pub integrity: Option<Integrity>,
}

impl std::fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(i @ Integrity::Truncated { .. }) = &self.integrity {
            writeln!(
                f,
                "warning: the telemetry log is {i}; only what it holds was replayed"
            )?;
        }
        write!(
            f,
            "{} cycles replayed ({} ran the policy): {}",
            self.cycles,
            self.policy_cycles,
            match &self.first_mismatch {
                None => format!(
                    "every output identical, bit for bit{}",
                    match &self.integrity {
                        Some(Integrity::Verified { .. }) => " (log length and SHA-256 verified)",
                        Some(Integrity::Truncated { .. }) => " (of a truncated log)",
                        None => "",
                    }
                ),
                Some(m) => format!("{} cycles differ; first: {m}", self.mismatches),
            }
        )
    }
}

/// Replays `log`; `bundle` overrides the path in its header (the file must have the same
/// SHA-256).
pub fn replay(log: &Path, bundle: Option<&Path>) -> Result<ReplayReport> {
    let mut reader = LogReader::open(log).map_err(anyhow::Error::msg)?;
    let h = reader.header.clone();
    let path = bundle.unwrap_or(&h.bundle);
    let sha = clawrl_bundle::file_sha256(path)
        .with_context(|| format!("bundle {} named by the log", path.display()))?;
    if sha != h.bundle_sha256 {
        bail!(
            "bundle {} has sha256 {sha}; the log was recorded with {}",
            path.display(),
            h.bundle_sha256
        );
    }
    let b = clawrl_bundle::read(path, &Trust::default())?;
    let map = b
        .manifest
        .action
        .map
        .clone()
        .context("the bundle has no action map")?;
    let obs = ObservationBuilder::from_manifest(&b.manifest).map_err(anyhow::Error::msg)?;
    let encoder = GoalEncoder::new(&h.safety.joint_limits);
    let mut controller = Controller::new(Student::from_bundle(&b)?, obs, map, h.safety);
    let mut out = Output::default();
    let mut report = ReplayReport {
        integrity: Some(reader.integrity.clone()),
        ..Default::default()
    };
    while let Some(r) = reader.next_record().map_err(anyhow::Error::msg)? {
        controller.step(&r.input, &mut out);
        report.cycles += 1;
        report.policy_cycles += u64::from(out.policy_ran);
        if let Some(diff) = difference(&r, &out, &encoder) {
            report.mismatches += 1;
            report
                .first_mismatch
                .get_or_insert_with(|| format!("cycle {}: {diff}", r.cycle));
        }
    }
    Ok(report)
}

fn bits32(a: &[f32]) -> impl Iterator<Item = u32> + '_ {
    a.iter().map(|x| x.to_bits())
}

/// What differs between the logged cycle and the replayed one.
fn difference(r: &Record, out: &Output, encoder: &GoalEncoder) -> Option<String> {
    let o = &r.output;
    if o.phase != out.phase || o.board != out.board || o.policy_ran != out.policy_ran {
        return Some(format!(
            "phase {:?}/{:?}, board {:?}/{:?} (logged/replayed)",
            o.phase, out.phase, o.board, out.board
        ));
    }
    if o.policy_ran && !bits32(&o.frame).eq(bits32(&out.frame)) {
        return Some("observation frame".into());
    }
    if o.policy_ran && !bits32(&o.action).eq(bits32(&out.action)) {
        return Some(format!(
            "action (logged {:?}, replayed {:?})",
            o.action, out.action
        ));
    }
    let goal_bits = |g: &Option<[f64; NUM_SERVOS]>| g.map(|g| g.map(f64::to_bits));
    if goal_bits(&o.goals) != goal_bits(&out.goals) {
        return Some("goals".into());
    }
    if let Some(g) = &out.goals {
        let mut ticks = [0; NUM_SERVOS];
        encoder.encode(g, &mut ticks);
        if ticks != r.ticks {
            return Some("goal ticks".into());
        }
    }
    None
}
