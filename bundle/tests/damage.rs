//! Damaged, truncated and foreign files are refused by the right check, never accepted.
mod common;

use clawrl_bundle::*;
use common::*;

fn written(name: &str, (m, t): (Manifest, Vec<Tensor>)) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    write(&path, &m, &t, None).unwrap();
    (dir, path)
}

fn header_len(bytes: &[u8]) -> usize {
    8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize
}

/// Flips `mask` at each position and checks the copy is refused by a content check.
fn assert_flips_refused(
    path: &std::path::Path,
    positions: impl Iterator<Item = usize>,
    mask: u8,
) -> usize {
    let good = std::fs::read(path).unwrap();
    let bad_path = path.with_extension("bad");
    let mut n = 0;
    for i in positions {
        let mut bytes = good.clone();
        bytes[i] ^= mask;
        std::fs::write(&bad_path, &bytes).unwrap();
        match read(&bad_path, &Trust::default()) {
            Ok(_) => panic!("byte {i} ^ {mask:#x} of {} accepted", good.len()),
            Err(e) => assert!(
                matches!(
                    e.check,
                    Check::Container
                        | Check::Format
                        | Check::Integrity
                        | Check::Manifest
                        | Check::Signature
                ),
                "byte {i}: {e}"
            ),
        }
        n += 1;
    }
    n
}

#[test]
fn every_flipped_byte_of_a_small_bundle_is_refused() {
    let (_dir, path) = written("c.clawrl", cartpole());
    let len = std::fs::read(&path).unwrap().len();
    for mask in [0x01, 0x80, 0x20] {
        assert_eq!(assert_flips_refused(&path, 0..len, mask), len);
    }
}

#[test]
fn every_flipped_byte_of_a_small_signed_bundle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.clawrl");
    let (m, t) = cartpole();
    write(&path, &m, &t, Some(&generate_keypair())).unwrap();
    let len = std::fs::read(&path).unwrap().len();
    // 0x20 turns a lowercase hex digit into an uppercase one: still refused.
    assert_eq!(assert_flips_refused(&path, 0..len, 0x20), len);
}

#[test]
fn flips_in_data_manifest_and_header_of_a_quadruped_bundle_are_refused_by_the_expected_check() {
    let (_dir, path) = written("q.clawrl", quadruped());
    let good = std::fs::read(&path).unwrap();
    let h = header_len(&good);
    assert_flips_refused(&path, (0..good.len()).step_by(37), 0x04);

    let check_of = |i: usize| {
        let mut bytes = good.clone();
        bytes[i] ^= 0x01;
        let bad = path.with_extension("one");
        std::fs::write(&bad, &bytes).unwrap();
        read(&bad, &Trust::default()).unwrap_err()
    };
    // Tensor data: the digest no longer matches.
    for i in [h, h + 1000, good.len() - 1] {
        let e = check_of(i);
        assert_eq!(e.check, Check::Integrity, "{e}");
        assert!(e.detail.contains("the file is damaged"), "{e}");
    }
    // Inside the manifest JSON (a normaliser digit).
    let text = std::str::from_utf8(&good[8..h]).unwrap();
    let at = 8 + text.find("\\\"epsilon\\\":1e-8").unwrap() + "\\\"epsilon\\\":1e-".len();
    assert_eq!(check_of(at).check, Check::Integrity);
    // The header length prefix.
    assert_eq!(check_of(0).check, Check::Container);
    assert_eq!(check_of(7).check, Check::Container);
}

#[test]
fn truncated_or_extended_files_are_refused_as_containers() {
    let (_dir, path) = written("q.clawrl", quadruped());
    let good = std::fs::read(&path).unwrap();
    let h = header_len(&good);
    let bad = path.with_extension("short");
    for len in [
        0,
        1,
        7,
        8,
        9,
        h / 2,
        h - 1,
        h,
        h + 1,
        good.len() - 4,
        good.len() - 1,
    ] {
        std::fs::write(&bad, &good[..len]).unwrap();
        let e = read(&bad, &Trust::default()).unwrap_err();
        assert_eq!(e.check, Check::Container, "length {len}: {e}");
    }
    let mut longer = good.clone();
    longer.extend([0; 4]);
    std::fs::write(&bad, &longer).unwrap();
    assert_eq!(
        read(&bad, &Trust::default()).unwrap_err().check,
        Check::Container
    );
}

#[test]
fn a_missing_file_is_refused_by_the_read_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nothing.clawrl");
    let e = read(&path, &Trust::default()).unwrap_err();
    assert_eq!(e.check, Check::Read);
    assert!(e.to_string().contains("nothing.clawrl"), "{e}");
}

#[test]
fn an_unknown_or_missing_format_is_refused_naming_it_and_the_supported_one() {
    let (_dir, path) = written("c.clawrl", cartpole());
    rewrite_metadata(&path, |m| {
        m.insert(KEY_FORMAT.into(), "clawrl-bundle-7".into());
    });
    let e = read(&path, &Trust::default()).unwrap_err();
    assert_eq!(e.check, Check::Format);
    assert!(
        e.detail.contains("clawrl-bundle-7") && e.detail.contains("clawrl-bundle-1"),
        "{e}"
    );

    rewrite_metadata(&path, |m| {
        m.remove(KEY_FORMAT);
    });
    let e = read(&path, &Trust::default()).unwrap_err();
    assert_eq!(e.check, Check::Format);
    assert!(
        e.detail.contains(KEY_FORMAT) && e.detail.contains("clawrl-bundle-1"),
        "{e}"
    );
}

#[test]
fn a_plain_safetensors_file_or_extra_metadata_is_refused_by_the_format_check() {
    let (_dir, path) = written("c.clawrl", cartpole());
    rewrite_metadata(&path, |m| {
        m.insert("format".into(), "pt".into());
    });
    let e = read(&path, &Trust::default()).unwrap_err();
    assert_eq!(e.check, Check::Format);
    assert!(e.detail.contains("\"format\""), "{e}");

    rewrite_metadata(&path, |m| m.clear());
    assert_eq!(
        read(&path, &Trust::default()).unwrap_err().check,
        Check::Format
    );
}

#[test]
fn a_changed_manifest_is_refused_by_integrity_and_a_bad_one_with_a_fresh_digest_by_the_manifest_check()
 {
    let (_dir, path) = written("c.clawrl", cartpole());
    let tensors = read(&path, &Trust::default()).unwrap().tensors;
    let edit = |json: &str, from: &str, to: &str| {
        assert!(json.contains(from), "{from}");
        json.replacen(from, to, 1)
    };

    // Edited without updating the digest.
    rewrite_metadata(&path, |m| {
        let j = edit(
            &m[KEY_MANIFEST],
            "\"control_rate_hz\":50.0",
            "\"control_rate_hz\":500.0",
        );
        m.insert(KEY_MANIFEST.into(), j);
    });
    assert_eq!(
        read(&path, &Trust::default()).unwrap_err().check,
        Check::Integrity
    );

    // Edited with a fresh digest: the manifest itself is checked.
    for (from, to, field) in [
        (
            "\"history\":4",
            "\"history\":5",
            "observation.normalizer.mean",
        ),
        (
            "\"format_version\":1",
            "\"format_version\":1,\"extra\":0",
            "extra",
        ),
        (
            "\"clip\":5.0",
            "\"clip\":0.0",
            "observation.normalizer.clip",
        ),
        // A newer format with a field this program does not know: the version is named, not
        // the field.
        (
            "\"format_version\":1",
            "\"format_version\":2,\"gait_clock\":0",
            "made by a newer clawrl than this one (it reads format 1)",
        ),
    ] {
        let (_d, p) = written("c.clawrl", cartpole());
        rewrite_metadata(&p, |m| {
            let j = edit(&m[KEY_MANIFEST], from, to);
            m.insert(KEY_SHA256.into(), hex(digest(FORMAT, &j, &tensors)));
            m.insert(KEY_MANIFEST.into(), j);
        });
        let e = read(&p, &Trust::default()).unwrap_err();
        assert_eq!(e.check, Check::Manifest, "{e}");
        assert!(e.detail.contains(field), "{field}: {e}");
    }
}

/// A bundle made before the physics rate was recorded (its manifest without the key, under a
/// digest of that manifest) still reads, with no physics rate; the one recorded reads back.
#[test]
fn a_manifest_without_the_physics_rate_still_reads() {
    let (_dir, path) = written("q.clawrl", quadruped());
    let b = read(&path, &Trust::default()).unwrap();
    assert_eq!(b.manifest.physics_rate_hz, Some(250.0));
    rewrite_metadata(&path, |m| {
        let from = "\"physics_rate_hz\":250.0,";
        assert!(m[KEY_MANIFEST].contains(from), "{}", m[KEY_MANIFEST]);
        let j = m[KEY_MANIFEST].replacen(from, "", 1);
        m.insert(KEY_SHA256.into(), hex(digest(FORMAT, &j, &b.tensors)));
        m.insert(KEY_MANIFEST.into(), j);
    });
    let old = read(&path, &Trust::default()).unwrap();
    assert_eq!(old.manifest.physics_rate_hz, None);
    assert_eq!(old.manifest.control_rate_hz, 50.0);
}

fn hex(b: [u8; 32]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
