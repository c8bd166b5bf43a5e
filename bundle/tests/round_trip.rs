mod common;

use clawrl_bundle::*;
use common::*;
use safetensors::SafeTensors;

#[test]
fn write_then_read_gives_back_manifest_and_tensors_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    for (name, (m, t)) in [("cartpole", cartpole()), ("quadruped", quadruped())] {
        let path = dir.path().join(format!("{name}.clawrl"));
        let sha = write(&path, &m, &t, None).unwrap();
        let b = read(&path, &Trust::default()).unwrap();
        assert_eq!(b.manifest, m, "{name}");
        assert_eq!(normalizer_bits(&b.manifest), normalizer_bits(&m), "{name}");
        assert_eq!(
            b.manifest
                .provenance
                .evaluation
                .as_ref()
                .unwrap()
                .teacher_mean_return
                .unwrap()
                .to_bits(),
            (-1e-310f64).to_bits()
        );
        let mut sorted = t.clone();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(tensor_bits(&b.tensors), tensor_bits(&sorted), "{name}");
        assert_eq!(b.sha256, sha);
        assert_eq!(b.sha256_hex().len(), 64);
        assert!(b.signer.is_none());
        assert_eq!(
            b.manifest.observation.stacked_dim(),
            b.manifest.observation.normalizer.mean.len()
        );
        let w = b.tensor("actor.0.weight").unwrap();
        assert_eq!(w.name, "actor.0.weight");
        assert!(b.tensor("no.such.tensor").is_none());
    }
}

#[test]
fn a_bundle_is_a_plain_safetensors_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.clawrl");
    let (m, t) = quadruped();
    let sha = write(&path, &m, &t, None).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let w = st.tensor("actor.0.weight").unwrap();
    assert_eq!(w.dtype(), safetensors::Dtype::F32);
    assert_eq!(w.shape(), &[32, 180]);
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    let meta = header.metadata().as_ref().unwrap();
    assert_eq!(meta[KEY_FORMAT], "clawrl-bundle-1");
    assert_eq!(
        meta[KEY_SHA256],
        read(&path, &Trust::default()).unwrap().sha256_hex()
    );
    assert_eq!(digest(FORMAT, &meta[KEY_MANIFEST], &t), sha);
    let parsed: Manifest = serde_json::from_str(&meta[KEY_MANIFEST]).unwrap();
    assert_eq!(parsed, m);
}

#[test]
fn the_digest_ignores_the_order_tensors_are_given_in_but_not_their_content() {
    let dir = tempfile::tempdir().unwrap();
    let (m, mut t) = cartpole();
    let a = write(dir.path().join("a"), &m, &t, None).unwrap();
    t.reverse();
    let b = write(dir.path().join("b"), &m, &t, None).unwrap();
    assert_eq!(a, b);
    // Moving a value from one tensor's end to the next one's start keeps the byte stream but
    // not the content: the length prefixes tell them apart.
    let json = serde_json::to_string(&m).unwrap();
    let x = vec![
        Tensor::new("a", vec![2], vec![1.0, 2.0]),
        Tensor::new("b", vec![1], vec![3.0]),
    ];
    let y = vec![
        Tensor::new("a", vec![1], vec![1.0]),
        Tensor::new("b", vec![2], vec![2.0, 3.0]),
    ];
    assert_ne!(digest(FORMAT, &json, &x), digest(FORMAT, &json, &y));
}

#[test]
fn the_digest_tells_apart_fields_whose_concatenation_is_the_same() {
    // ("ab", "c") and ("a", "bc"): one byte stream without the length prefixes (issue 27
    // item 17).
    assert_ne!(digest("ab", "c", &[]), digest("a", "bc", &[]));
    // The same across the manifest and the first tensor's name.
    let t = |name: &str| vec![Tensor::new(name, vec![1], vec![1.0])];
    assert_ne!(
        digest(FORMAT, "{}ab", &t("c")),
        digest(FORMAT, "{}a", &t("bc"))
    );
}

#[test]
fn check_robot_refuses_another_model_or_mjcf_and_prints_both() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.clawrl");
    let (m, t) = quadruped();
    write(&path, &m, &t, None).unwrap();
    let b = read(&path, &Trust::default()).unwrap();
    b.check_robot("claw_quadruped", QUADRUPED_MJCF).unwrap();
    b.check_robot("claw_quadruped", &QUADRUPED_MJCF.to_uppercase())
        .unwrap();

    let e = b.check_robot("claw_quadruped", CARTPOLE_MJCF).unwrap_err();
    assert_eq!(e.check, Check::Robot);
    let msg = e.to_string();
    assert!(
        msg.contains(QUADRUPED_MJCF) && msg.contains(CARTPOLE_MJCF),
        "{msg}"
    );
    assert!(
        msg.starts_with(&format!("bundle {}: robot check failed", path.display())),
        "{msg}"
    );

    let e = b.check_robot("cartpole", QUADRUPED_MJCF).unwrap_err();
    assert_eq!(e.check, Check::Robot);
    assert!(
        e.detail.contains("claw_quadruped") && e.detail.contains("cartpole"),
        "{e}"
    );
}

#[test]
fn file_sha256_is_the_hex_sha256_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.xml");
    std::fs::write(&path, "abc").unwrap();
    assert_eq!(
        file_sha256(&path).unwrap(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert!(file_sha256(dir.path().join("missing.xml")).is_err());
}
