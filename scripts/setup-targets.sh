#!/usr/bin/env bash
# Installs what the protocol/firmware parts need beyond the host toolchain. Idempotent: safe to
# run on every CI start.
#   - the Cortex-M4F target the board crate (firmware/board) builds for;
#   - with --fuzz, cargo-fuzz (fuzzing is not part of CI; it needs RUSTC_BOOTSTRAP=1 on stable).
set -euo pipefail

targets=(thumbv7em-none-eabihf)
installed="$(rustup target list --installed)"
for t in "${targets[@]}"; do
    if ! grep -qx "$t" <<<"$installed"; then
        rustup target add "$t"
    fi
done

if [[ "${1:-}" == "--fuzz" ]] && ! command -v cargo-fuzz >/dev/null; then
    cargo install --locked cargo-fuzz
fi
