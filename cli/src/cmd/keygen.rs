//! `clawrl keygen`: an Ed25519 key pair for signing policy bundles.
use std::path::PathBuf;

use anyhow::Result;

/// Make an Ed25519 key pair: NAME.key (secret, mode 0600) and NAME.pub (give it to robots).
#[derive(clap::Args)]
pub struct Args {
    /// Path of the key pair without extension.
    #[arg(long, value_name = "NAME")]
    out: PathBuf,
}

pub fn run(a: Args) -> Result<()> {
    let secret = a.out.with_extension("key");
    let public = a.out.with_extension("pub");
    anyhow::ensure!(
        !public.exists(),
        "{} exists: refusing to overwrite a key",
        public.display()
    );
    // `--out keys/robot` on a fresh machine: make the folder rather than fail on it.
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("creating the key folder {}: {e}", dir.display()))?;
        eprintln!("created the folder {}", dir.display());
    }
    let key = clawrl_bundle::generate_keypair();
    clawrl_bundle::save_signing_key(&secret, &key)?;
    clawrl_bundle::save_public_key(&public, &key.verifying_key())?;
    println!(
        "secret key: {} (keep it; sign with `clawrl export --sign {}`)\npublic key: {} (trust it with `clawrl verify --trust {}`)",
        secret.display(),
        secret.display(),
        public.display(),
        public.display()
    );
    Ok(())
}
