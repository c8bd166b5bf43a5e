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
    assert_eq!(text.lines().count(), 1);
    assert_eq!(text.trim().len(), 64);
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
