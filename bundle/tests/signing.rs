mod common;

use clawrl_bundle::*;
use common::*;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn signed(key: &SigningKey) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.clawrl");
    let (m, t) = quadruped();
    write(&path, &m, &t, Some(key)).unwrap();
    (dir, path)
}

#[test]
fn a_signed_bundle_verifies_with_its_key() {
    let key = generate_keypair();
    let (_dir, path) = signed(&key);
    let b = read(&path, &Trust::signed_by(vec![key.verifying_key()])).unwrap();
    assert_eq!(b.signer, Some(key.verifying_key()));
    // The default trust still verifies a present signature and reports the signer.
    let b = read(&path, &Trust::default()).unwrap();
    assert_eq!(b.signer, Some(key.verifying_key()));
}

#[test]
fn a_key_that_is_not_trusted_is_refused_and_printed() {
    let key = generate_keypair();
    let other = generate_keypair();
    let (_dir, path) = signed(&key);
    for trust in [
        Trust::signed_by(vec![other.verifying_key()]),
        Trust {
            keys: vec![other.verifying_key()],
            require_signature: false,
        },
    ] {
        let e = read(&path, &trust).unwrap_err();
        assert_eq!(e.check, Check::Signature);
        assert!(
            e.detail.contains(&hex(key.verifying_key().as_bytes())),
            "{e}"
        );
    }
}

#[test]
fn altered_signature_bytes_are_refused_even_without_trusted_keys() {
    let key = generate_keypair();
    let (_dir, path) = signed(&key);
    let good = std::fs::read(&path).unwrap();
    let block: serde_json::Value = {
        let (_, h) = safetensors::SafeTensors::read_metadata(&good).unwrap();
        serde_json::from_str(&h.metadata().as_ref().unwrap()[KEY_SIGNATURE]).unwrap()
    };
    let sig = block["signature"].as_str().unwrap().to_string();
    for i in [0, 31, 64, 127] {
        std::fs::write(&path, &good).unwrap();
        let mut s = sig.clone().into_bytes();
        s[i] = if s[i] == b'0' { b'1' } else { b'0' };
        let s = String::from_utf8(s).unwrap();
        rewrite_metadata(&path, |m| {
            let v = serde_json::json!({"public_key": block["public_key"], "signature": s});
            m.insert(KEY_SIGNATURE.into(), v.to_string());
        });
        for trust in [
            Trust::default(),
            Trust::signed_by(vec![key.verifying_key()]),
        ] {
            let e = read(&path, &trust).unwrap_err();
            assert_eq!(e.check, Check::Signature, "hex digit {i}: {e}");
        }
    }
    // Garbage in the signature entry.
    rewrite_metadata(&path, |m| {
        m.insert(KEY_SIGNATURE.into(), "{\"public_key\":\"zz\"}".into());
    });
    assert_eq!(
        read(&path, &Trust::default()).unwrap_err().check,
        Check::Signature
    );
}

#[test]
fn a_signature_moved_to_another_bundle_or_key_is_refused() {
    let key = generate_keypair();
    let (_dir, path) = signed(&key);
    let block = {
        let bytes = std::fs::read(&path).unwrap();
        let (_, h) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
        h.metadata().as_ref().unwrap()[KEY_SIGNATURE].clone()
    };
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("c.clawrl");
    let (m, t) = cartpole();
    write(&other, &m, &t, None).unwrap();
    rewrite_metadata(&other, |m| {
        m.insert(KEY_SIGNATURE.into(), block.clone());
    });
    let e = read(&other, &Trust::signed_by(vec![key.verifying_key()])).unwrap_err();
    assert_eq!(e.check, Check::Signature, "{e}");

    // The right signature claimed by another key.
    let mut v: serde_json::Value = serde_json::from_str(&block).unwrap();
    v["public_key"] = hex(generate_keypair().verifying_key().as_bytes()).into();
    rewrite_metadata(&path, |m| {
        m.insert(KEY_SIGNATURE.into(), v.to_string());
    });
    assert_eq!(
        read(&path, &Trust::default()).unwrap_err().check,
        Check::Signature
    );
}

#[test]
fn an_unsigned_bundle_is_refused_when_a_signature_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.clawrl");
    let (m, t) = cartpole();
    write(&path, &m, &t, None).unwrap();
    let key = generate_keypair();
    let e = read(&path, &Trust::signed_by(vec![key.verifying_key()])).unwrap_err();
    assert_eq!(e.check, Check::Signature);
    assert!(e.detail.contains("unsigned"), "{e}");
    // Accepted when nothing asks for a signature.
    read(&path, &Trust::default()).unwrap();
}

#[test]
fn a_stripped_signature_is_refused_when_a_trusted_key_is_named() {
    let key = generate_keypair();
    let (_dir, path) = signed(&key);
    // The digest does not cover the signature entry: deleting it leaves a valid unsigned bundle.
    rewrite_metadata(&path, |m| {
        assert!(m.remove(KEY_SIGNATURE).is_some());
    });
    assert_eq!(read(&path, &Trust::default()).unwrap().signer, None);
    // A trusted key named, `require_signature` left false (no --require-signature): refused.
    let trust = Trust {
        keys: vec![key.verifying_key()],
        require_signature: false,
    };
    assert!(trust.signature_required());
    let e = read(&path, &trust).unwrap_err();
    assert_eq!(e.check, Check::Signature, "{e}");
    assert!(e.detail.contains("unsigned"), "{e}");
    // The same through key files, as `--trust K` and `install.trusted_keys` read them.
    let pk = path.with_file_name("me.pub");
    save_public_key(&pk, &key.verifying_key()).unwrap();
    let trust = Trust::from_key_files(&[&pk], false).unwrap();
    assert_eq!(read(&path, &trust).unwrap_err().check, Check::Signature);
}

#[test]
fn requiring_a_signature_without_trusted_keys_refuses_even_a_valid_one() {
    let key = generate_keypair();
    let (_dir, path) = signed(&key);
    let trust = Trust {
        keys: vec![],
        require_signature: true,
    };
    assert_eq!(read(&path, &trust).unwrap_err().check, Check::Signature);
}
