//! The `clawrl` command as a user meets it: logs without a terminal, one `--set` grammar,
//! results saved before plots, a run's outputs fed back in, a report per task.
mod common;

use common::*;

#[test]
fn without_a_terminal_training_prints_plain_progress_lines() {
    let dir = tmp("progress");
    let (_, err) = ok(clawrl(&[
        "train",
        "--config",
        &cartpole(),
        "--set",
        "run.max_iterations=20",
        "--out",
    ])
    .arg(&dir));
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("it ") && l.contains("steps/s"))
        .collect();
    assert!(lines.len() >= 2, "{err}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("it 10/20 (50 %)") && l.contains("eta ")),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "colour codes in a log file:\n{err}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn one_set_grammar_with_errors_that_say_what_is_allowed() {
    let quad = repo()
        .join("configs/run/quadruped_flat_ppo.toml")
        .display()
        .to_string();
    let cases: [(&[&str], &str, &[&str]); 9] = [
        (
            &["train", "--config", &cartpole(), "--set", "task.foo=1"],
            "task.foo",
            &["cartpole", "task.* keys do not apply"],
        ),
        (
            &["train", "--config", &cartpole(), "--set", "gamma=0.9"],
            "gamma",
            &["no section", "SECTION.KEY=VALUE"],
        ),
        (
            &["train", "--config", &cartpole(), "--set", "foo.bar=1"],
            "foo.bar",
            &["unknown section", "run.*"],
        ),
        (
            &["train", "--config", &cartpole(), "--set", "sac.tau=0.1"],
            "sac.tau",
            &["trains with ppo"],
        ),
        (
            &["train", "--config", &cartpole(), "--set", "ppo.gamma=NaN"],
            "ppo.gamma",
            &["NaN and infinity"],
        ),
        (
            &["train", "--config", &cartpole(), "--set", "ppo.gamma=nan"],
            "ppo.gamma",
            &["NaN and infinity"],
        ),
        (
            &["simulate", "--set", "decimation=5"],
            "decimation",
            &["no section"],
        ),
        (
            &["simulate", "--set", "env.decimation=5"],
            "env.decimation",
            &["only task.* keys"],
        ),
        (
            &["simulate", "--set", "ppo.gamma=0.9"],
            "ppo.gamma",
            &["only task.* keys"],
        ),
    ];
    for (args, key, words) in cases {
        let err = fails(&mut clawrl(args));
        assert!(err.contains(&format!("key `{key}`")), "{args:?}: {err}");
        for w in words {
            assert!(err.contains(w), "{args:?} should say `{w}`: {err}");
        }
    }
    // simulate takes the same task.* keys as train.
    ok(&mut clawrl(&[
        "simulate",
        "--seconds",
        "0.2",
        "--set",
        "task.env.decimation=5",
    ]));
    // A bad value in an algorithm file names that file and key, before any training.
    let dir = tmp("bad-value");
    let err = fails(
        clawrl(&[
            "train",
            "--config",
            &cartpole(),
            "--set",
            "ppo.gamma=2",
            "--out",
        ])
        .arg(&dir),
    );
    assert!(
        err.contains("ppo.toml") && err.contains("ppo.gamma"),
        "{err}"
    );
    assert!(!dir.join("metrics.csv").exists());
    let err = fails(
        clawrl(&[
            "train",
            "--config",
            &quad,
            "--set",
            "task.env.decimation=0",
            "--out",
        ])
        .arg(dir.join("q")),
    );
    assert!(
        err.contains("quadruped_flat.toml") && err.contains("env.decimation"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn simulate_works_from_outside_the_repository() {
    let (out, _) = ok(clawrl(&["simulate", "--seconds", "0.3"]).current_dir(std::env::temp_dir()));
    assert!(out.contains("quadruped"), "{out}");
    let err = fails(
        clawrl(&["simulate", "--task-config", "nope/none.toml"]).current_dir(std::env::temp_dir()),
    );
    assert!(
        err.contains("nope/none.toml") && err.contains("built in") && err.contains("CLAWRL_ROOT"),
        "{err}"
    );
}

#[test]
fn cartpole_run_round_trips_and_gets_its_own_report() {
    let root = tmp("cartpole");
    let (a, b) = (root.join("a"), root.join("b"));
    let (out, _) = ok(clawrl(&[
        "train",
        "--config",
        &cartpole(),
        "--set",
        "run.max_iterations=3",
        "--out",
    ])
    .arg(&a));
    assert!(out.contains("done: 3 iterations"), "{out}");
    for f in [
        "metrics.csv",
        "curves.png",
        "policy.safetensors",
        "config.toml",
    ] {
        assert!(a.join(f).exists(), "{f}");
    }
    // The saved config is a valid --config and gives the same run (only out_dir differs).
    ok(
        clawrl(&["train", "--set", "run.max_iterations=3", "--config"])
            .arg(a.join("config.toml"))
            .arg("--out")
            .arg(&b),
    );
    let strip = |p: &std::path::Path| -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("out_dir") && !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(strip(&a.join("config.toml")), strip(&b.join("config.toml")));
    let cols = |p: &std::path::Path| -> Vec<String> {
        std::fs::read_to_string(p.join("metrics.csv"))
            .unwrap()
            .lines()
            .map(|l| {
                l.split(',')
                    .take(2)
                    .chain(l.split(',').skip(4).take(1))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    };
    assert_eq!(
        cols(&a),
        cols(&b),
        "same config, same seed: same iterations, steps and returns"
    );
    // eval takes the run folder, one checkpoint or the policy file, and reports what a
    // balancing task has: return and length, no speed, no gait.
    for target in [
        a.clone(),
        a.join("policy.safetensors"),
        a.join("checkpoints/ckpt_00000003.safetensors"),
    ] {
        let (out, _) = ok(clawrl(&["eval", "--episodes", "3", "--policy"])
            .arg(&target)
            .arg("--out")
            .arg(&root));
        assert!(
            out.contains("episodes            3") && out.contains("mean return"),
            "{out}"
        );
        assert!(
            out.contains("ended early") && !out.contains("forward speed") && !out.contains("NaN"),
            "{out}"
        );
    }
    assert!(
        std::fs::read_to_string(root.join("eval_episodes.csv"))
            .unwrap()
            .starts_with("episode,return,length")
    );
    let err = fails(
        clawrl(&[
            "eval",
            "--episodes",
            "3",
            "--gait-plot",
            "g.png",
            "--policy",
        ])
        .arg(&a),
    );
    assert!(err.contains("no feet"), "{err}");
    // plot redraws the curves from metrics.csv.
    std::fs::remove_file(a.join("curves.png")).unwrap();
    ok(clawrl(&["plot", "--run"]).arg(&a));
    assert!(a.join("curves.png").exists());
    std::fs::remove_dir_all(root).ok();
}

#[test]
fn evaluation_results_are_saved_before_the_plot_and_a_failed_plot_is_a_warning() {
    let root = tmp("eval-plot");
    let run = root.join("quad");
    let quad = repo()
        .join("configs/run/quadruped_flat_ppo.toml")
        .display()
        .to_string();
    ok(clawrl(&[
        "train",
        "--config",
        &quad,
        "--set",
        "run.num_envs=2",
        "--set",
        "run.max_iterations=1",
        "--set",
        "ppo.num_steps_per_env=8",
        "--set",
        "ppo.num_mini_batches=2",
        "--out",
    ])
    .arg(&run));
    // A plot path in a folder that does not exist is refused before the evaluation starts.
    let err = fails(
        clawrl(&[
            "eval",
            "--episodes",
            "1",
            "--gait-plot",
            "/nonexistent/g.png",
            "--policy",
        ])
        .arg(&run),
    );
    assert!(
        err.contains("/nonexistent") && err.contains("does not exist"),
        "{err}"
    );
    // A plot that fails to draw (its path is a folder) costs nothing: results first, then a
    // warning, and the command still succeeds.
    let folder = root.join("a-folder.png");
    std::fs::create_dir_all(&folder).unwrap();
    let (out, err) = ok(clawrl(&[
        "eval",
        "--episodes",
        "2",
        "--num-envs",
        "2",
        "--gait-seconds",
        "0.5",
        "--policy",
    ])
    .arg(&run)
    .arg("--gait-plot")
    .arg(&folder));
    assert!(
        out.contains("fall rate") && out.contains("tracking error"),
        "{out}"
    );
    assert!(
        err.contains("no gait diagram") && err.contains("saved"),
        "{err}"
    );
    assert!(
        std::fs::read_to_string(run.join("eval.txt"))
            .unwrap()
            .contains("fall rate")
    );
    // And with a good path the diagram is drawn.
    let png = root.join("gait.png");
    let (out, _) = ok(clawrl(&[
        "eval",
        "--episodes",
        "1",
        "--num-envs",
        "1",
        "--gait-seconds",
        "0.5",
        "--policy",
    ])
    .arg(&run)
    .arg("--gait-plot")
    .arg(&png));
    assert!(out.contains("gait diagram") && png.exists(), "{out}");
    std::fs::remove_dir_all(root).ok();
}

/// The README says how many HIL scenarios there are: the number `clawrl hil --scenario list`
/// prints before the slope student's (run by name only), in words, as the README writes it.
#[test]
fn the_readme_counts_the_hil_scenarios_there_are() {
    let (out, _) = ok(&mut clawrl(&["hil", "--scenario", "list"]));
    let n = out
        .lines()
        .take_while(|l| !l.starts_with("with a slope student"))
        .filter(|l| !l.trim().is_empty())
        .count();
    assert!(
        out.contains("slope-up") && out.contains("slope-down"),
        "{out}"
    );
    let words = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    let said = format!("{} scenarios with pass conditions", words[n]);
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(readme.contains(&said), "README.md does not say {said:?}");
}

/// A binary run outside the tree it was built in finds the robot's files under CLAWRL_ROOT
/// (here a copy of the task file and the model, the command run from another folder), and
/// says where it looked when they are not there.
#[test]
fn clawrl_root_names_where_the_robots_files_are() {
    let dir = tmp("clawrl-root");
    let root = dir.join("installed");
    for f in [
        "configs/task/quadruped_flat.toml",
        "sim/models/quadruped.xml",
        "robots/claw_quadruped/robot.toml",
    ] {
        std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        std::fs::copy(repo().join(f), root.join(f)).unwrap();
    }
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let simulate = |root: &std::path::Path| {
        let mut c = clawrl(&["simulate", "--seconds", "0.2"]);
        c.current_dir(&elsewhere).env("CLAWRL_ROOT", root);
        c
    };
    let (out, _) = ok(&mut simulate(&root));
    assert!(!out.is_empty());

    // The model missing from the root: the error names the file and where it looked.
    std::fs::remove_file(root.join("sim/models/quadruped.xml")).unwrap();
    let e = fails(&mut simulate(&root));
    assert!(
        e.contains(&root.join("sim/models/quadruped.xml").display().to_string())
            && e.contains(&format!("CLAWRL_ROOT={}", root.display())),
        "{e}"
    );
    // An empty root: the task file is not there either.
    let e = fails(&mut simulate(&dir.join("empty")));
    assert!(
        e.contains("configs/task/quadruped_flat.toml") && e.contains("CLAWRL_ROOT="),
        "{e}"
    );
}
