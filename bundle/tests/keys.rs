use clawrl_bundle::*;

#[test]
fn keys_survive_their_files() {
    let dir = tempfile::tempdir().unwrap();
    let key = generate_keypair();
    let (sk, pk) = (dir.path().join("bundle.key"), dir.path().join("bundle.pub"));
    save_signing_key(&sk, &key).unwrap();
    save_public_key(&pk, &key.verifying_key()).unwrap();
    assert_eq!(load_signing_key(&sk).unwrap().to_bytes(), key.to_bytes());
    assert_eq!(load_public_key(&pk).unwrap(), key.verifying_key());
    let text = std::fs::read_to_string(&pk).unwrap();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(
        lines,
        [PUBLIC_KEY_HEADER, &hex(key.verifying_key().as_bytes())]
    );
    let text = std::fs::read_to_string(&sk).unwrap();
    assert_eq!(text.lines().next(), Some(SECRET_KEY_HEADER));
    assert_eq!(text.lines().count(), 2);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&sk).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_ne!(generate_keypair().to_bytes(), key.to_bytes());
}

#[test]
fn saving_a_key_never_overwrites_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let sk = dir.path().join("bundle.key");
    std::fs::write(&sk, "precious").unwrap();
    let e = save_signing_key(&sk, &generate_keypair()).unwrap_err();
    assert!(
        e.to_string().contains("bundle.key") && e.detail.contains("exists"),
        "{e}"
    );
    assert_eq!(e.detail, "already exists; not overwritten");
    assert_eq!(std::fs::read_to_string(&sk).unwrap(), "precious");
    assert!(save_public_key(&sk, &generate_keypair().verifying_key()).is_err());
}

#[test]
fn bad_key_files_are_refused_naming_the_file_without_printing_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.key");
    let secret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddee";
    for text in [&format!("{secret}zz"), secret, "", &format!("{secret}ff00")] {
        std::fs::write(&p, text).unwrap();
        let e = load_signing_key(&p).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("bad.key"), "{msg}");
        assert!(!msg.contains("00112233"), "{msg}");
        assert!(load_public_key(&p).is_err());
    }
    assert!(load_signing_key(dir.path().join("missing.key")).is_err());
}

#[test]
fn a_public_key_never_signs_and_a_secret_key_is_never_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let key = generate_keypair();
    let (sk, pk) = (dir.path().join("me.key"), dir.path().join("me.pub"));
    save_signing_key(&sk, &key).unwrap();
    save_public_key(&pk, &key.verifying_key()).unwrap();
    let e = load_signing_key(&pk).unwrap_err();
    assert!(
        e.to_string().contains("me.pub")
            && e.detail.contains("it is a public key, not a secret key"),
        "{e}"
    );
    let e = load_public_key(&sk).unwrap_err();
    assert!(
        e.to_string().contains("me.key")
            && e.detail.contains("it is a secret key, not a public key"),
        "{e}"
    );
    // The same under names that say nothing: the header decides.
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::copy(&pk, &a).unwrap();
    std::fs::copy(&sk, &b).unwrap();
    assert!(
        load_signing_key(&a)
            .unwrap_err()
            .detail
            .contains("public key")
    );
    assert!(
        load_public_key(&b)
            .unwrap_err()
            .detail
            .contains("secret key")
    );
    assert_eq!(load_signing_key(&b).unwrap().to_bytes(), key.to_bytes());
    assert_eq!(load_public_key(&a).unwrap(), key.verifying_key());
    // Trusting a secret key file is refused where every --trust reads it.
    let e = Trust::from_key_files(&[&sk], false).unwrap_err();
    assert!(e.detail.contains("secret key"), "{e}");
}

#[test]
fn headerless_key_files_from_before_are_read_unless_the_name_says_the_other_kind() {
    let dir = tempfile::tempdir().unwrap();
    let key = generate_keypair();
    let (sk, pk) = (dir.path().join("old.key"), dir.path().join("old.pub"));
    std::fs::write(&sk, format!("{}\n", hex(key.as_bytes()))).unwrap();
    std::fs::write(&pk, format!("{}\n", hex(key.verifying_key().as_bytes()))).unwrap();
    assert_eq!(load_signing_key(&sk).unwrap().to_bytes(), key.to_bytes());
    assert_eq!(load_public_key(&pk).unwrap(), key.verifying_key());
    assert!(
        load_signing_key(&pk)
            .unwrap_err()
            .detail
            .contains("public key")
    );
    assert!(
        load_public_key(&sk)
            .unwrap_err()
            .detail
            .contains("secret key")
    );
}

#[cfg(unix)]
#[test]
fn a_secret_key_readable_by_others_gets_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let sk = dir.path().join("me.key");
    save_signing_key(&sk, &generate_keypair()).unwrap();
    assert_eq!(secret_key_warning(&sk), None);
    for mode in [0o640, 0o604, 0o644] {
        std::fs::set_permissions(&sk, std::fs::Permissions::from_mode(mode)).unwrap();
        let w = secret_key_warning(&sk).unwrap_or_else(|| panic!("no warning at {mode:o}"));
        assert!(w.contains("me.key") && w.contains("read by others"), "{w}");
    }
}

#[test]
fn a_key_saved_into_a_missing_folder_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let sk = dir.path().join("keys").join("me.key");
    let e = save_signing_key(&sk, &generate_keypair()).unwrap_err();
    assert!(
        e.detail.contains("does not exist") && e.detail.contains("keys"),
        "{e}"
    );
}
