//! Key files as a user meets them: `clawrl keygen` into a folder that does not exist yet, a
//! public key given to `export --sign`, a secret key given to `verify --trust`, and a secret
//! key that others can read.
mod common;

use common::{clawrl, fails, ok, tmp};

#[test]
fn keygen_makes_its_folder_and_a_public_key_never_signs() {
    let dir = tmp("keys");
    // The README's line on a fresh machine: the folder is made.
    let name = dir.join("keys").join("me");
    ok(clawrl(&["keygen", "--out"]).arg(&name));
    let (sk, pk) = (dir.join("keys/me.key"), dir.join("keys/me.pub"));
    assert!(sk.is_file() && pk.is_file());
    let text = std::fs::read_to_string(&pk).unwrap();
    assert_eq!(text.lines().next(), Some("clawrl ed25519 public key"));

    // The public key given as the secret one: refused before anything is read or written.
    let out = dir.join("x.clawrl");
    // `export --sign KEY` of a policy that does not exist: it fails either way, after or
    // before what the key check says.
    let export_signed = |key: &std::path::Path| {
        fails(
            clawrl(&["export", "--policy"])
                .arg(dir.join("no-policy"))
                .arg("--out")
                .arg(&out)
                .arg("--sign")
                .arg(key),
        )
    };
    let err = export_signed(&pk);
    assert!(
        err.contains("me.pub") && err.contains("it is a public key, not a secret key"),
        "{err}"
    );
    assert!(!out.exists());

    // The secret key given as trusted: refused with that reason.
    let err = fails(
        clawrl(&["verify", "--trust"])
            .arg(&sk)
            .arg(dir.join("x.clawrl")),
    );
    assert!(
        err.contains("me.key") && err.contains("it is a secret key, not a public key"),
        "{err}"
    );

    // A secret key others can read: a warning on stderr (the export then fails on the
    // missing policy, after the warning).
    let err = export_signed(&sk);
    assert!(!err.contains("read by others"), "{err}");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sk, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = export_signed(&sk);
    assert!(
        err.contains("warning: the secret key") && err.contains("read by others"),
        "{err}"
    );
}
