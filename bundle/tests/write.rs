mod common;

use clawrl_bundle::*;
use common::*;

fn dir_entries(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_mismatched_normalizer_is_refused_at_write_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.clawrl");
    let (mut m, t) = quadruped();
    m.observation.normalizer.var.pop();
    let e = write(&path, &m, &t, None).unwrap_err();
    assert_eq!(e.check, Check::Manifest);
    assert!(e.detail.contains("observation.normalizer.var"), "{e}");
    assert!(e.detail.contains("179 entries, expected 180"), "{e}");
    assert!(dir_entries(dir.path()).is_empty());
}

#[test]
fn a_failed_write_over_an_existing_bundle_leaves_it_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.clawrl");
    let (m, t) = quadruped();
    write(&path, &m, &t, None).unwrap();
    let old = std::fs::read(&path).unwrap();

    let mut bad = m.clone();
    bad.observation.normalizer.mean.push(0.0);
    assert_eq!(
        write(&path, &bad, &t, None).unwrap_err().check,
        Check::Manifest
    );
    let mut short = t.clone();
    short[0].data.pop();
    assert_eq!(
        write(&path, &m, &short, None).unwrap_err().check,
        Check::Container
    );
    let mut nan = t.clone();
    nan[1].data[3] = f32::NAN;
    assert_eq!(
        write(&path, &m, &nan, None).unwrap_err().check,
        Check::Manifest
    );

    assert_eq!(std::fs::read(&path).unwrap(), old);
    assert_eq!(dir_entries(dir.path()), ["q.clawrl"]);
    read(&path, &Trust::default()).unwrap();
}

#[test]
fn a_successful_write_replaces_the_old_bundle_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.clawrl");
    let (m, t) = quadruped();
    write(&path, &m, &t, None).unwrap();
    let (m2, t2) = cartpole();
    let sha = write(&path, &m2, &t2, None).unwrap();
    let b = read(&path, &Trust::default()).unwrap();
    assert_eq!((b.sha256, b.manifest), (sha, m2));
    assert_eq!(dir_entries(dir.path()), ["b.clawrl"]);
}

#[test]
fn a_write_into_a_missing_folder_is_a_write_failure() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no/such/folder/b.clawrl");
    let (m, t) = cartpole();
    let e = write(&path, &m, &t, None).unwrap_err();
    assert_eq!(e.check, Check::Write);
    assert!(
        e.to_string()
            .starts_with(&format!("bundle {}: write check failed", path.display()))
    );
}

#[test]
fn manifest_check_names_the_failing_field() {
    type Edit = fn(&mut Manifest, &mut Vec<Tensor>);
    let cases: [(&str, Edit); 25] = [
        ("format_version", |m, _| m.format_version = 2),
        ("robot.mjcf_sha256", |m, _| {
            m.robot.mjcf_sha256 = "ABC".into()
        }),
        ("provenance.teacher_sha256", |m, _| {
            m.provenance.teacher_sha256 = "x".into()
        }),
        // 64 digits, but uppercase; lowercase, but 3 digits.
        ("robot.mjcf_sha256", |m, _| {
            m.robot.mjcf_sha256 = "A".repeat(64)
        }),
        ("provenance.teacher_sha256", |m, _| {
            m.provenance.teacher_sha256 = "abc".into()
        }),
        ("observation.layout.robot", |m, _| {
            m.robot.model = "other".into()
        }),
        ("observation.normalizer.mean", |m, _| {
            m.observation.history = 3
        }),
        ("observation.normalizer.mean", |m, _| {
            m.observation.normalizer.mean[7] = f64::NAN
        }),
        ("observation.normalizer.var", |m, _| {
            m.observation.normalizer.var[0] = -1.0
        }),
        ("observation.normalizer.var", |m, _| {
            m.observation.normalizer.var[2] = f64::INFINITY
        }),
        ("observation.normalizer.clip", |m, _| {
            m.observation.normalizer.clip = 0.0
        }),
        // The guard stands the robot at zero: a range without it, or a NaN, is refused.
        ("observation.command_ranges", |m, _| {
            m.observation.command_ranges = Some([[0.1, 0.4], [-0.2, 0.2], [-0.8, 0.8]])
        }),
        ("observation.command_ranges", |m, _| {
            m.observation.command_ranges = Some([[-0.2, 0.4], [-0.2, 0.2], [f64::NAN, 0.8]])
        }),
        ("observation.normalizer.epsilon", |m, _| {
            m.observation.normalizer.epsilon = -1.0
        }),
        ("observation.normalizer.epsilon", |m, _| {
            m.observation.normalizer.epsilon = f64::INFINITY
        }),
        // A zero variance with a zero epsilon divides by zero.
        ("observation.normalizer.var", |m, _| {
            m.observation.normalizer.var[4] = 0.0;
            m.observation.normalizer.epsilon = 0.0;
        }),
        ("action.names", |m, _| m.action.names.clear()),
        ("action.map.joint_names", |m, _| m.action.names.swap(0, 1)),
        ("action.map", |m, _| {
            m.action
                .map
                .as_mut()
                .unwrap()
                .scale
                .pop()
                .map(drop)
                .unwrap()
        }),
        ("control_rate_hz", |m, _| m.control_rate_hz = 0.0),
        // Not a whole number of physics steps per control step, or fewer than one.
        ("physics_rate_hz", |m, _| m.physics_rate_hz = Some(120.0)),
        ("physics_rate_hz", |m, _| m.physics_rate_hz = Some(25.0)),
        ("physics_rate_hz", |m, _| m.physics_rate_hz = Some(f64::NAN)),
        ("physics_rate_hz", |m, _| {
            m.physics_rate_hz = Some(f64::INFINITY)
        }),
        ("network.parameters", |_, t| {
            t.push(Tensor::new("extra", vec![2], vec![0.0; 2]));
        }),
    ];
    let (m0, t0) = quadruped();
    m0.check(&t0).unwrap();
    for (field, edit) in cases {
        let (mut m, mut t) = (m0.clone(), t0.clone());
        edit(&mut m, &mut t);
        let e = m.check(&t).unwrap_err();
        assert_eq!(e.field, field, "{e}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.clawrl");
        assert_eq!(
            write(&path, &m, &t, None).unwrap_err().check,
            Check::Manifest
        );
        assert!(!path.exists());
    }
    // One physics step per control step is a whole number of them.
    let (mut m, t) = (m0.clone(), t0.clone());
    m.physics_rate_hz = Some(m.control_rate_hz);
    m.check(&t).unwrap();
    // Cart-pole has no action map.
    let (m, t) = cartpole();
    assert!(m.action.map.is_none());
    m.check(&t).unwrap();
}

#[test]
fn duplicate_tensor_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (mut m, mut t) = cartpole();
    t.push(t[0].clone());
    m.network.parameters += t[0].data.len();
    let e = write(dir.path().join("b"), &m, &t, None).unwrap_err();
    assert_eq!(e.check, Check::Container);
    assert!(e.detail.contains("actor.0.weight"), "{e}");
}

/// A tensor named nothing, or `__metadata__` (the safetensors header's own key), is refused at
/// write, as a container error naming it, and nothing is written.
#[test]
fn a_reserved_tensor_name_is_refused_at_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.clawrl");
    let (m, t) = quadruped();
    for name in ["", "__metadata__"] {
        let mut with = t.clone();
        with.push(Tensor::new(name, vec![1], vec![0.0]));
        let e = write(&path, &m, &with, None).unwrap_err();
        assert_eq!(e.check, Check::Container, "{e}");
        assert_eq!(e.detail, format!("tensor name {name:?} is reserved"), "{e}");
    }
    assert!(dir_entries(dir.path()).is_empty());
}
