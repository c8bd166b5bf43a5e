//! `clawrl serve`, `clawrl endpoint check` and `remote:` policies through the real binary, as a
//! user runs them: a cart-pole teacher served on 127.0.0.1, then distilled, evaluated and
//! compared through the endpoint, each against the same command on the local file.
mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use common::*;

const KEY: &str = "cli-test-key";

/// A `clawrl serve` process, killed when dropped.
struct Serving {
    child: Child,
    base_url: String,
    stderr: PathBuf,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The proxy variables a test machine may carry: the binaries under test must not see them
/// unless a test sets them.
fn clean(c: &mut Command) -> &mut Command {
    for v in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
        "NO_PROXY",
        "CLAWRL_API_KEY",
    ] {
        c.env_remove(v);
    }
    c
}

fn serve(dir: &Path, models: &[String], key: Option<&str>) -> Serving {
    let stderr = dir.join(format!("serve-{}.err", models.len()));
    let mut c = clawrl(&["serve", "--listen", "127.0.0.1:0"]);
    clean(&mut c);
    for m in models {
        c.arg("--model").arg(m);
    }
    if let Some(k) = key {
        c.env("CLAWRL_API_KEY", k);
    }
    // Everything the server logs, at the most verbose level, to check the key is not in it.
    c.env("RUST_LOG", "trace");
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let base_url = first
        .trim()
        .strip_prefix("serving on ")
        .unwrap_or_else(|| panic!("serve printed {first:?}"))
        .to_string();
    Serving {
        child,
        base_url,
        stderr,
    }
}

/// One cart-pole teacher for every test of this file.
fn teacher() -> &'static Path {
    static T: OnceLock<PathBuf> = OnceLock::new();
    T.get_or_init(|| {
        let d = tmp("endpoint-teacher");
        ok(clawrl(&[
            "train",
            "--config",
            &cartpole(),
            "--set",
            "run.max_iterations=40",
        ])
        .arg("--out")
        .arg(d.join("run")));
        d.join("run")
    })
}

fn endpoint_file(dir: &Path, base_url: &str, extra: &str) -> PathBuf {
    let p = dir.join("endpoint.toml");
    std::fs::write(
        &p,
        format!("[endpoint]\nbase_url = \"{base_url}\"\napi_key = \"{KEY}\"\nteacher_model = \"teacher\"\nstudent_model = \"student\"\ntimeout = 10\n{extra}"),
    )
    .unwrap();
    p
}

fn column(csv: &str, name: &str) -> Vec<String> {
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = head
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    lines
        .map(|l| l.split(',').nth(i).unwrap().to_string())
        .collect()
}

fn student_tensors(run: &Path) -> Vec<(String, Vec<u32>)> {
    let (t, _) = clawrl_policy::io::load(&run.join("policy.safetensors")).unwrap();
    let mut v: Vec<(String, Vec<u32>)> = t
        .into_iter()
        .map(|(k, x)| {
            let f: Vec<f32> = x
                .flatten_all()
                .unwrap()
                .to_dtype(candle_core::DType::F32)
                .unwrap()
                .to_vec1()
                .unwrap();
            (k, f.iter().map(|x| x.to_bits()).collect())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_remote_teacher_distils_the_same_student_as_the_local_file() {
    let dir = tmp("endpoint-distill");
    let file = teacher().join("policy.safetensors");
    let s = serve(&dir, &[format!("teacher={}", file.display())], Some(KEY));
    let ep = endpoint_file(&dir, &s.base_url, "");
    let distill = |teacher: &str, out: &str, endpoint: Option<&Path>| {
        let mut c = clawrl(&[
            "distill",
            "--config",
            "configs/run/cartpole_distill.toml",
            "--teacher",
            teacher,
            "--set",
            "run.max_iterations=6",
        ]);
        clean(&mut c)
            .current_dir(repo())
            .arg("--out")
            .arg(dir.join(out));
        if let Some(e) = endpoint {
            c.arg("--endpoint").arg(e);
        }
        ok(&mut c);
        dir.join(out)
    };
    let local = distill(&file.display().to_string(), "local", None);
    let remote = distill("remote:teacher", "remote", Some(&ep));
    assert_eq!(
        student_tensors(&local),
        student_tensors(&remote),
        "the students differ"
    );
    let (l, r) = (
        std::fs::read_to_string(local.join("metrics.csv")).unwrap(),
        std::fs::read_to_string(remote.join("metrics.csv")).unwrap(),
    );
    for col in ["mean_return", "kl_teacher", "distill_loss"] {
        assert_eq!(column(&l, col), column(&r, col), "{col}");
    }
    // The run records the hash the server reports of the teacher file: the file's own.
    let cfg = std::fs::read_to_string(remote.join("config.toml")).unwrap();
    let sha = clawrl_bundle::file_sha256(&file).unwrap();
    assert!(
        cfg.contains(&format!("teacher_sha256 = \"{sha}\"")),
        "{cfg}"
    );
    assert!(cfg.contains("teacher = \"remote:teacher\""), "{cfg}");
    assert!(!cfg.contains(KEY), "the run's config holds the key");
    let log = std::fs::read_to_string(&s.stderr).unwrap();
    assert!(log.contains("POST /v1/act 200"), "{log}");
    assert!(!log.contains(KEY), "the server's log holds the key");
}

#[test]
fn eval_and_compare_take_remote_policies() {
    let dir = tmp("endpoint-eval");
    let t = teacher().display().to_string();
    let s = serve(
        &dir,
        &[format!("teacher={t}"), format!("student={t}")],
        Some(KEY),
    );
    let ep = endpoint_file(&dir, &s.base_url, "");
    let eval = |policy: &str, out: &str| {
        let mut c = clawrl(&["eval", "--policy", policy, "--episodes", "6", "--endpoint"]);
        clean(&mut c).arg(&ep).arg("--out").arg(dir.join(out));
        ok(&mut c);
        std::fs::read_to_string(dir.join(out).join("eval_episodes.csv")).unwrap()
    };
    assert_eq!(
        eval("remote:student", "remote"),
        eval(&t, "local"),
        "remote and local evaluations differ"
    );
    let mut c = clawrl(&[
        "compare",
        "--teacher",
        "remote:teacher",
        "--student",
        &t,
        "--episodes",
        "4",
        "--endpoint",
    ]);
    clean(&mut c).arg(&ep).arg("--out").arg(dir.join("cmp"));
    let (out, _) = ok(&mut c);
    assert!(out.contains("remote:teacher (model `teacher` at"), "{out}");
    let text = std::fs::read_to_string(dir.join("cmp/compare.txt")).unwrap();
    // The same network on both sides: no divergence at all.
    assert!(text.contains("0.0000"), "{text}");
}

#[test]
fn endpoint_check_shows_two_200s_and_a_kl_table() {
    let dir = tmp("endpoint-check");
    let t = teacher().display().to_string();
    let s = serve(
        &dir,
        &[format!("teacher={t}"), format!("student={t}")],
        Some(KEY),
    );
    let ep = endpoint_file(&dir, &s.base_url, "");
    let mut c = clawrl(&["endpoint", "check", "--endpoint"]);
    let (out, _) = ok(clean(&mut c).arg(&ep));
    assert_eq!(out.matches(" 200 ").count(), 3, "{out}");
    assert!(
        out.contains("KL(teacher || student)") && out.contains("push"),
        "{out}"
    );
    assert!(
        out.contains("ok: the teacher `teacher` and the student `student` both answer"),
        "{out}"
    );
    assert!(!out.contains(KEY), "{out}");
}

#[test]
fn endpoint_check_diagnoses_what_is_wrong() {
    let dir = tmp("endpoint-diagnose");
    let t = teacher().display().to_string();
    let s = serve(
        &dir,
        &[format!("teacher={t}"), format!("critic={t}")],
        Some(KEY),
    );
    let check = |ep: &Path, env: &[(&str, &str)]| {
        let mut c = clawrl(&["endpoint", "check", "--endpoint"]);
        clean(&mut c).arg(ep);
        for (k, v) in env {
            c.env(k, v);
        }
        fails(&mut c)
    };
    let ep = endpoint_file(&dir, &s.base_url, "");
    let e = check(&ep, &[]);
    assert!(
        e.contains("model `student`") && e.contains("`teacher`, `critic`"),
        "{e}"
    );
    let e = check(&ep, &[("CLAWRL_API_KEY", "")]);
    assert!(e.contains("CLAWRL_API_KEY") && e.contains("empty"), "{e}");
    let e = check(&ep, &[("CLAWRL_API_KEY", " padded ")]);
    assert!(e.contains("padded with whitespace"), "{e}");
    let e = check(&ep, &[("CLAWRL_API_KEY", "someone-elses-key")]);
    assert!(
        e.contains("HTTP 401") && e.contains("CLAWRL_API_KEY (environment)"),
        "{e}"
    );
    let proxy = "http://127.0.0.1:9";
    let e = check(&ep, &[("HTTP_PROXY", proxy)]);
    assert!(
        e.contains(&format!("HTTP_PROXY={proxy}")) && e.contains("NO_PROXY"),
        "{e}"
    );
    let doubled = endpoint_file(&dir, &format!("{}/v1", s.base_url), "");
    let e = check(&doubled, &[]);
    assert!(
        e.contains(&format!("{}/v1/models", s.base_url)) && e.contains("/v1 once"),
        "{e}"
    );
    // A missing value is named before any request: no server needed.
    let p = dir.join("no-teacher.toml");
    std::fs::write(&p, "[endpoint]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"k\"\nstudent_model = \"s\"\n").unwrap();
    let e = check(&p, &[]);
    assert!(
        e.contains("endpoint.teacher_model") && e.contains("no-teacher.toml"),
        "{e}"
    );
    let e = check(&dir.join("absent.toml"), &[]);
    assert!(e.contains("endpoint.example.toml"), "{e}");
}

#[test]
fn serve_refuses_an_open_address_without_a_key_and_a_bad_key() {
    let t = teacher().display().to_string();
    let mut c = clawrl(&["serve", "--listen", "0.0.0.0:0", "--model", &t]);
    let e = fails(clean(&mut c));
    assert!(e.contains("without an API key"), "{e}");
    // Off loopback a one-character key is as good as none.
    let mut c = clawrl(&["serve", "--listen", "0.0.0.0:0", "--model", &t]);
    let e = fails(clean(&mut c).env("CLAWRL_API_KEY", "k"));
    assert!(
        e.contains("1-character API key") && e.contains("at least 16"),
        "{e}"
    );
    // A zero body limit would refuse every request.
    let mut c = clawrl(&["serve", "--max-body-mib", "0", "--listen", "127.0.0.1:0"]);
    let e = fails(clean(&mut c).args(["--model", &t]));
    assert!(e.contains("above 0"), "{e}");
    let mut c = clawrl(&["serve", "--listen", "127.0.0.1:0", "--model", &t]);
    let e = fails(clean(&mut c).env("CLAWRL_API_KEY", "key\n"));
    assert!(
        e.contains("CLAWRL_API_KEY") && e.contains("trailing"),
        "{e}"
    );
    let mut c = clawrl(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--model",
        "/nonexistent/run",
    ]);
    let e = fails(clean(&mut c));
    assert!(e.contains("/nonexistent/run"), "{e}");
}

#[test]
fn serve_listens_on_a_host_name() {
    let t = teacher().display().to_string();
    let mut c = clawrl(&["serve", "--listen", "localhost:0", "--model", &t]);
    let mut child = clean(&mut c)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    // `localhost` resolves to a loopback address, IPv4 or IPv6 as the system lists it.
    assert!(
        first.starts_with("serving on http://127.0.0.1:")
            || first.starts_with("serving on http://[::1]:"),
        "{first:?}"
    );
}

#[test]
fn a_remote_teacher_cannot_be_an_ema_teacher() {
    let dir = tmp("endpoint-ema");
    let ep = endpoint_file(&dir, "http://127.0.0.1:9/v1", "");
    let mut c = clawrl(&[
        "distill",
        "--config",
        "configs/run/cartpole_distill.toml",
        "--teacher",
        "remote:teacher",
        "--set",
        "distill.teacher_update=ema",
        "--endpoint",
    ]);
    let e = fails(
        clean(&mut c)
            .current_dir(repo())
            .arg(&ep)
            .arg("--out")
            .arg(dir.join("x")),
    );
    assert!(
        e.contains("distill.teacher_update") && e.contains("frozen"),
        "{e}"
    );
    let mut c = clawrl(&[
        "distill",
        "--config",
        "configs/run/cartpole_distill.toml",
        "--teacher",
        "remote:critic",
    ]);
    let e = fails(
        clean(&mut c)
            .current_dir(repo())
            .arg("--out")
            .arg(dir.join("y")),
    );
    assert!(e.contains("remote:teacher") && e.contains("critic"), "{e}");
}
