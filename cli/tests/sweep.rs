//! `clawrl sweep` end to end on a local Ray instance (the Ray of scripts/setup-ray.sh): four
//! cart-pole trials, one stopped early by ASHA, one killed and resumed, one killed past its
//! retries and reported failed; the table, the best run file, the exact resume and the refusal
//! of a second sweep into the same folder.
mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn sweep_file(dir: &Path, grid_key: &str) -> PathBuf {
    let base = repo().join("configs/run/cartpole_ppo.toml");
    let text = format!(
        r#"[sweep]
base = "{}"
metric = "mean_return"
mode = "max"
smooth = 10
seeds = [1]
iterations = 400
cpus_per_trial = 1
max_concurrent = 2
max_failures = 1
set = ["run.checkpoint_every=20", "ppo.schedule=\"fixed\""]
[grid]
"{grid_key}" = [3e-3, 1e-3, 3e-4, 1e-6]
[asha]
grace_period = 50
reduction_factor = 2
"#,
        base.display()
    );
    let path = dir.join("sweep.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_sweep_with_a_bad_trial_is_refused_before_ray_starts_and_a_dry_run_lists_the_trials() {
    let dir = tmp("sweep-bad");
    let spec = sweep_file(&dir, "ppo.learnin_rate");
    let out = dir.join("out");
    let o = run(clawrl(&["sweep", spec.to_str().unwrap(), "--out"]).arg(&out));
    let (_, err) = text(&o);
    assert!(!o.status.success());
    // The sweep file, the trial and the key are named; nothing was started or written.
    assert!(err.contains("sweep.toml: trial t00-"), "{err}");
    assert!(err.contains("learnin_rate"), "{err}");
    assert!(!out.exists());

    let spec = sweep_file(&dir, "ppo.learning_rate");
    let (stdout, _) = ok(&mut clawrl(&["sweep", spec.to_str().unwrap(), "--dry-run"]));
    assert!(stdout.contains("4 trials"), "{stdout}");
    assert!(
        stdout.contains("t03-learning_rate=0.000001-s1: ppo.learning_rate=0.000001"),
        "{stdout}"
    );
    // A key of the sweep file from the command line: two seeds, twice the trials.
    let (stdout, _) = ok(&mut clawrl(&[
        "sweep",
        spec.to_str().unwrap(),
        "--dry-run",
        "--set",
        "sweep.seeds=[1, 2]",
    ]));
    assert!(stdout.contains("8 trials"), "{stdout}");
    assert!(stdout.contains("t07-learning_rate=0.000001-s2"), "{stdout}");
    // Without Ray the error says how to install it.
    let o = run(&mut clawrl(&[
        "sweep",
        spec.to_str().unwrap(),
        "--python",
        "/nonexistent/python",
    ]));
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("scripts/setup-ray.sh"), "{err}");
}

/// The pid in a run folder's lock while its trainer holds it (`pid N` on the first line).
fn holder(run: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(run.join(".clawrl.lock")).ok()?;
    let pid: u32 = text.lines().next()?.strip_prefix("pid ")?.parse().ok()?;
    Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
}

/// Waits until `run` has the checkpoint of iteration `it` and a live trainer other than `not`,
/// then kills it (SIGKILL: no clean-up of any kind). Returns the pid killed.
fn kill_after(run: &Path, it: usize, not: Option<u32>, deadline: Instant) -> u32 {
    let ckpt = run.join(format!("checkpoints/ckpt_{it:08}.safetensors"));
    loop {
        assert!(
            Instant::now() < deadline,
            "{} never reached {it}",
            run.display()
        );
        if ckpt.exists()
            && let Some(pid) = holder(run).filter(|p| Some(*p) != not)
        {
            let s = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap();
            assert!(s.success());
            return pid;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn returns(run: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(run.join("metrics.csv")).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = head.iter().position(|c| *c == "mean_return").unwrap();
    lines
        .map(|l| l.split(',').nth(col).unwrap().to_string())
        .collect()
}

#[test]
fn a_cartpole_sweep_on_local_ray_stops_one_early_resumes_a_killed_one_and_reports_a_failed_one() {
    let python = repo().join("third_party/ray/bin/python");
    assert!(
        python.exists(),
        "no Ray at {}: scripts/setup-ray.sh installs it (scripts/bootstrap.sh calls it)",
        python.display()
    );
    let dir = tmp("sweep-ray");
    let spec = sweep_file(&dir, "ppo.learning_rate");
    let out = dir.join("out");
    let child = clawrl(&["sweep", spec.to_str().unwrap(), "--cpus", "2", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The faults, while it runs, before the first rung (50) so that ASHA cannot have stopped
    // the trial first: t00 killed once at its iteration-40 checkpoint (its one retry resumes
    // it), t01 killed there and then again as soon as its retry holds the run folder (past
    // max_failures = 1: reported failed).
    let trials = out.join("trials");
    let deadline = Instant::now() + Duration::from_secs(120);
    let t00 = trials.join("t00-learning_rate=0.003-s1");
    let t01 = trials.join("t01-learning_rate=0.001-s1");
    kill_after(&t00, 40, None, deadline);
    let first = kill_after(&t01, 40, None, deadline);
    kill_after(&t01, 40, Some(first), deadline);

    let o = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    eprintln!("{stdout}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let trial = |name: &str| {
        results["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"].as_str().unwrap().starts_with(name))
            .unwrap()
            .clone()
    };
    // Killed once, resumed from its checkpoint: two processes, and on past the kill (to the
    // end, or to a rung where ASHA stopped it: rungs depend on the trials' timing).
    let r0 = trial("t00");
    assert!(r0["status"] == "done" || r0["status"] == "stopped", "{r0}");
    assert_eq!(r0["starts"], 2, "{r0}");
    assert!(r0["iterations"].as_u64().unwrap() >= 50, "{r0}");
    let log = std::fs::read_to_string(t00.join("train-2.log")).unwrap();
    assert!(
        log.contains("resumed") && log.contains("ckpt_00000040"),
        "{log}"
    );
    // Killed past its retries: failed, with the reason, and the sweep went on.
    let r1 = trial("t01");
    assert_eq!(r1["status"], "failed", "{r1}");
    assert!(r1["error"].as_str().unwrap().contains("signal 9"), "{r1}");
    // The learning rate that cannot learn in 400 iterations is stopped at a rung (it starts
    // after the others and is the worst at every rung it reaches).
    let r3 = trial("t03");
    assert_eq!(r3["status"], "stopped", "{r3}");
    assert!(r3["iterations"].as_u64().unwrap() < 400, "{r3}");
    // The table names every trial and the failure; the best run file is written.
    let table = std::fs::read_to_string(out.join("sweep.md")).unwrap();
    assert_eq!(table.matches("| t0").count(), 4, "{table}");
    assert!(
        table.contains("failed: ") && table.contains("(best)"),
        "{table}"
    );
    assert!(stdout.contains("best: "), "{stdout}");

    // clawrl's exact resume: the killed-and-resumed trial made the same returns, row for row,
    // as its config run alone without a kill.
    let alone = dir.join("alone");
    ok(clawrl(&["train", "--no-progress", "--config"])
        .arg(t00.join("config.toml"))
        .arg("--out")
        .arg(&alone));
    let (a, b) = (returns(&t00), returns(&alone));
    assert!(a.len() >= 50 && a[..] == b[..a.len()], "{a:?}\n{b:?}");
    // The best run file is a run file: `clawrl train --config best.toml` reproduces the best
    // trial's returns (its prefix, where ASHA stopped it).
    let best = dir.join("best");
    ok(clawrl(&["train", "--no-progress", "--config"])
        .arg(out.join("best.toml"))
        .arg("--out")
        .arg(&best));
    let best_name = stdout
        .lines()
        .find_map(|l| l.strip_prefix("best: "))
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let (a, b) = (returns(&trials.join(best_name)), returns(&best));
    assert_eq!(a[..], b[..a.len()]);

    // A second sweep into the same folder is refused.
    let o = run(clawrl(&["sweep", spec.to_str().unwrap(), "--out"]).arg(&out));
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("already holds a sweep"), "{err}");
}
