//! `clawrl compare`: a teacher and a student on the same states: per-joint KL and action
//! error, return and fall rate of each; printed, and saved as compare.txt, compare.csv and
//! compare.png.
use std::path::PathBuf;

use anyhow::Result;
use clawrl_trainer::compare::{CompareOptions, compare};
use clawrl_trainer::remote::load_any;

/// Compare a teacher and a student on the states of one rollout.
#[derive(clap::Args)]
pub struct Args {
    /// The teacher: run folder, checkpoint, policy file, or remote:teacher (through --endpoint).
    #[arg(long, value_name = "DIR|FILE|remote:ROLE")]
    teacher: String,
    /// The student: run folder, checkpoint, policy file, bundle (.clawrl) or remote:student.
    #[arg(long, value_name = "DIR|FILE|remote:ROLE")]
    student: String,
    /// The endpoint config of remote:... policies.
    #[arg(long, value_name = "FILE", default_value = clawrl_endpoint::config::DEFAULT_FILE)]
    endpoint: PathBuf,
    /// Episodes of the shared rollout and of each policy's evaluation.
    #[arg(long, default_value_t = 20)]
    episodes: usize,
    /// Let the teacher act in the shared rollout (default: the student, on-policy).
    #[arg(long)]
    drive_with_teacher: bool,
    /// Folder for compare.txt, compare.csv and compare.png (default: the student's run folder;
    /// runs/compare/NAME for a bundle, a served student or one under assets/pretrained/).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    #[arg(long, default_value_t = 10)]
    num_envs: usize,
    #[arg(long, default_value_t = 2)]
    threads: usize,
    #[arg(long, default_value_t = 777)]
    seed: u64,
}

pub fn run(a: Args) -> Result<()> {
    clawrl_policy::init_candle_threads(1);
    let teacher = load_any(&a.teacher, &a.endpoint)?;
    let student = load_any(&a.student, &a.endpoint)?;
    let (tt, st) = (&teacher.config.run.run.task, &student.config.run.run.task);
    anyhow::ensure!(
        tt == st,
        "the teacher was trained on `{tt}`, the student on `{st}`: compare policies of one task"
    );
    let out = a.out.clone().unwrap_or_else(|| {
        super::outputs::default_dir("compare", &a.student, student.run_dir.as_deref())
    });
    std::fs::create_dir_all(&out)?;
    let opts = CompareOptions {
        episodes: a.episodes,
        num_envs: a.num_envs,
        threads: a.threads,
        seed: a.seed,
        drive_with_teacher: a.drive_with_teacher,
        ..Default::default()
    };
    let report = compare(
        &student.config,
        teacher.policy.as_ref(),
        student.policy.as_ref(),
        &opts,
    )?;
    let text = report.text(&teacher.label, &student.label);
    print!("{text}");
    clawrl_policy::io::write_atomic(&out.join("compare.txt"), text.as_bytes())?;
    clawrl_policy::io::write_atomic(&out.join("compare.csv"), report.csv().as_bytes())?;
    let png = out.join("compare.png");
    match report.plot(&png, &format!("teacher vs student ({st})")) {
        Ok(()) => println!("saved {}/compare.{{txt,csv,png}}", out.display()),
        Err(e) => tracing::warn!("{e:#}"),
    }
    Ok(())
}
