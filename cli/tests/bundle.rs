//! `clawrl distill`, `export`, `verify`, `keygen` and `compare` as a user runs them, and every
//! refusal of a bad bundle or a bad distillation config, each naming the file and the check.
mod common;

use std::path::{Path, PathBuf};

use common::{clawrl, fails, ok, tmp};

/// A cart-pole teacher and a 3-iteration student in `dir`; returns the student's folder.
fn student(dir: &Path) -> PathBuf {
    let t = dir.join("teacher");
    ok(clawrl(&[
        "train",
        "--config",
        "configs/run/cartpole_ppo.toml",
        "--set",
        "run.max_iterations=5",
    ])
    .arg("--out")
    .arg(&t));
    let s = dir.join("student");
    ok(clawrl(&[
        "distill",
        "--config",
        "configs/run/cartpole_distill.toml",
        "--set",
        "run.max_iterations=3",
    ])
    .arg("--teacher")
    .arg(&t)
    .arg("--out")
    .arg(&s));
    s
}

fn export(student: &Path, out: &Path, extra: &[&str]) {
    ok(clawrl(&["export", "--policy"])
        .arg(student)
        .arg("--out")
        .arg(out)
        .args(extra));
}

#[test]
fn a_signed_bundle_verifies_and_every_kind_of_damage_is_refused_naming_the_check() {
    let dir = tmp("bundle-refusals");
    let s = student(&dir);
    ok(clawrl(&["keygen", "--out"]).arg(dir.join("me")));
    ok(clawrl(&["keygen", "--out"]).arg(dir.join("other")));
    let b = dir.join("s.clawrl");
    let key = dir.join("me.key");
    export(&s, &b, &["--sign", key.to_str().unwrap()]);
    // A cart-pole bundle: no robot to check it against.
    let (out, _) = ok(
        clawrl(&["verify", "--any-robot", "--require-signature", "--trust"])
            .arg(dir.join("me.pub"))
            .arg(&b),
    );
    assert!(out.contains("ok") && out.contains("Ed25519"), "{out}");

    let verify = |file: &Path, extra: &[&str]| {
        fails(clawrl(&["verify", "--any-robot"]).args(extra).arg(file))
    };
    let untrusted = verify(&b, &["--trust", dir.join("other.pub").to_str().unwrap()]);
    assert!(untrusted.contains("signature check failed"), "{untrusted}");

    let bytes = std::fs::read(&b).unwrap();
    // One flipped byte in the weights (the end of the file is tensor data).
    let mut flipped = bytes.clone();
    let n = flipped.len();
    flipped[n - 5] ^= 0x01;
    let f = dir.join("flipped.clawrl");
    std::fs::write(&f, &flipped).unwrap();
    let e = verify(&f, &[]);
    assert!(
        e.contains("flipped.clawrl") && e.contains("integrity check failed"),
        "{e}"
    );
    // Truncated.
    let t = dir.join("truncated.clawrl");
    std::fs::write(&t, &bytes[..bytes.len() / 2]).unwrap();
    let e = verify(&t, &[]);
    assert!(
        e.contains("truncated.clawrl") && e.contains("container check failed"),
        "{e}"
    );
    // An unknown format version.
    // (same length, so the container stays whole and only the format string differs)
    let mut future = bytes.clone();
    let at = future
        .windows(15)
        .position(|w| w == b"clawrl-bundle-1")
        .unwrap();
    future[at + 14] = b'9';
    let u = dir.join("future.clawrl");
    std::fs::write(&u, &future).unwrap();
    let e = verify(&u, &[]);
    assert!(
        e.contains("format check failed") && e.contains("clawrl-bundle-9"),
        "{e}"
    );
    // Trained on another robot model.
    let other = common::repo().join("sim/models/quadruped.xml");
    let e = verify(&b, &["--model", other.to_str().unwrap()]);
    assert!(e.contains("robot check failed"), "{e}");
    // Unsigned where a signature is required.
    let plain = dir.join("plain.clawrl");
    export(&s, &plain, &[]);
    let e = verify(
        &plain,
        &[
            "--require-signature",
            "--trust",
            dir.join("me.pub").to_str().unwrap(),
        ],
    );
    assert!(e.contains("signature check failed"), "{e}");
    // Nothing of the damaged files reaches `eval` either.
    let e = fails(clawrl(&["eval", "--episodes", "1", "--policy"]).arg(&f));
    assert!(e.contains("integrity check failed"), "{e}");
}

#[test]
fn export_writes_nothing_half_done() {
    let dir = tmp("bundle-atomic");
    let s = student(&dir);
    let b = dir.join("s.clawrl");
    export(&s, &b, &[]);
    let before = std::fs::read(&b).unwrap();
    // A privileged teacher cannot be exported: the existing bundle stays as it was.
    let e = fails(
        clawrl(&["export", "--policy"])
            .arg(dir.join("teacher"))
            .arg("--out")
            .arg(&b),
    );
    assert!(e.contains("privileged"), "{e}");
    assert_eq!(std::fs::read(&b).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A bundle's name says what it is.
    let e = fails(
        clawrl(&["export", "--policy"])
            .arg(&s)
            .arg("--out")
            .arg(dir.join("s.bin")),
    );
    assert!(e.contains(".clawrl"), "{e}");
}

#[test]
fn bad_distillation_configs_are_refused_naming_the_key() {
    let dir = tmp("distill-config");
    let t = dir.join("teacher");
    ok(clawrl(&[
        "train",
        "--config",
        "configs/run/cartpole_ppo.toml",
        "--set",
        "run.max_iterations=2",
    ])
    .arg("--out")
    .arg(&t));
    let distill = |set: &str| {
        fails(
            clawrl(&[
                "distill",
                "--config",
                "configs/run/cartpole_distill.toml",
                "--set",
                set,
            ])
            .arg("--teacher")
            .arg(&t)
            .arg("--out")
            .arg(dir.join("s")),
        )
    };
    for (set, key) in [
        ("distill.alpha=-1", "distill.alpha"),
        ("distill.alpha=nan", "NaN"),
        ("distill.alpha_final=inf", "inf"),
        ("policy.actor_hidden=[0]", "policy.actor_hidden"),
        ("distill.kl_direction=sideways", "distill.kl_direction"),
        (
            "distill.ppo.num_mini_batches=0",
            "distill.ppo.num_mini_batches",
        ),
    ] {
        let e = distill(set);
        assert!(e.contains(key), "{set}: {e}");
    }
    // A teacher file that is not a policy.
    let junk = dir.join("junk.safetensors");
    std::fs::write(&junk, b"not a policy").unwrap();
    let e = fails(
        clawrl(&[
            "distill",
            "--config",
            "configs/run/cartpole_distill.toml",
            "--teacher",
        ])
        .arg(&junk)
        .arg("--out")
        .arg(dir.join("s2")),
    );
    assert!(e.contains("junk.safetensors"), "{e}");
}

#[test]
fn compare_writes_its_table_csv_and_picture() {
    let dir = tmp("compare");
    let s = student(&dir);
    let out = dir.join("cmp");
    let (stdout, _) = ok(clawrl(&["compare", "--episodes", "4", "--teacher"])
        .arg(dir.join("teacher"))
        .arg("--student")
        .arg(&s)
        .arg("--out")
        .arg(&out));
    assert!(
        stdout.contains("KL(teacher || student)") && stdout.contains("| push |"),
        "{stdout}"
    );
    let csv = std::fs::read_to_string(out.join("compare.csv")).unwrap();
    assert!(
        csv.starts_with("joint,kl_teacher_student,action_error\npush,"),
        "{csv}"
    );
    assert!(std::fs::metadata(out.join("compare.png")).unwrap().len() > 10_000);
}

/// A bundle has no run folder: without --out its evaluation and comparison go under runs/ of
/// the current directory, not loose into it (the repository root when following the README).
#[test]
fn a_bundles_eval_and_compare_default_to_runs_not_the_current_directory() {
    let dir = tmp("bundle-defaults");
    let s = student(&dir);
    let b = dir.join("s.clawrl");
    export(&s, &b, &[]);
    let cwd = dir.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    ok(clawrl(&["eval", "--episodes", "2", "--policy"])
        .arg(&b)
        .current_dir(&cwd));
    ok(clawrl(&["compare", "--episodes", "2", "--teacher"])
        .arg(dir.join("teacher"))
        .arg("--student")
        .arg(&b)
        .current_dir(&cwd));
    let top: Vec<String> = std::fs::read_dir(&cwd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(top, ["runs"], "written loose into the current directory");
    assert!(cwd.join("runs/eval/s/eval.txt").is_file());
    assert!(cwd.join("runs/compare/s/compare.txt").is_file());
    std::fs::remove_dir_all(dir).ok();
}

/// `GET /v1/models` of a `clawrl serve` of `bundle` on 127.0.0.1 (no key), as raw text.
fn served_models(bundle: &Path) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut child = clawrl(&["serve", "--listen", "127.0.0.1:0", "--model"])
        .arg(bundle)
        .env_remove("CLAWRL_API_KEY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .strip_prefix("serving on http://")
        .and_then(|a| a.strip_suffix("/v1"))
        .unwrap_or_else(|| panic!("serve printed {first:?}"))
        .to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    answer
}

#[test]
fn the_served_bundle_is_listed_under_the_sha256_verify_prints() {
    let dir = tmp("bundle-served-sha");
    let s = student(&dir);
    let b = dir.join("s.clawrl");
    export(&s, &b, &[]);
    let (out, _) = ok(clawrl(&["verify", "--any-robot"]).arg(&b));
    let content = out
        .split("sha256 ")
        .nth(1)
        .and_then(|r| r.get(..64))
        .unwrap_or_else(|| panic!("no sha256 in {out}"))
        .to_string();
    let file = clawrl_bundle::file_sha256(&b).unwrap();
    assert_ne!(content, file, "the test needs the two digests to differ");
    let listed = served_models(&b);
    assert!(
        listed.contains(&format!("\"sha256\":\"{content}\"")),
        "not the content sha256 {content} (the file's is {file}):\n{listed}"
    );
    std::fs::remove_dir_all(dir).ok();
}
