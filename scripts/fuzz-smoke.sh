#!/usr/bin/env bash
# A short run of both cargo-fuzz targets (protocol/fuzz: decoder; firmware/fuzz: command
# handling), as CI runs it: each starts from its committed seeds (fuzz/seeds/<target>;
# fuzz/corpus is git-ignored, the working corpus of long manual runs) and stops after a fixed
# number of executions (FUZZ_RUNS, default 20000), so a regression in the decoder or the
# command handling fails CI instead of waiting for the next manual campaign. New inputs
# libFuzzer finds go to a scratch directory, never into the committed seeds; a crash leaves its
# input under target-fuzz/artifacts/<target>/ and fails the script.
#
# cargo-fuzz needs a nightly compiler (-Zsanitizer, sancov passes). It uses the nightly
# toolchain when rustup has one; otherwise the stable compiler with RUSTC_BOOTSTRAP=1, which
# unlocks the same unstable flags on a stable toolchain. No sanitizer (-s none): the crates
# have no `unsafe`, and the assertions inside the targets (no panic, pulses inside the limits,
# slew-limited) are what is checked. cargo-fuzz itself is installed when missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

runs=${FUZZ_RUNS:-20000}
version=0.13.2
if ! cargo fuzz --version 2>/dev/null | grep -q "cargo-fuzz $version"; then
    echo "== installing cargo-fuzz $version"
    cargo install --locked cargo-fuzz --version "$version"
fi

toolchain=()
flavour=stable
# FUZZ_NIGHTLY=0 forces the stable path.
if [ "${FUZZ_NIGHTLY:-1}" != 0 ] && rustup run nightly rustc --version >/dev/null 2>&1; then
    toolchain=(+nightly)
    flavour=nightly
else
    export RUSTC_BOOTSTRAP=1
fi
# Build output out of the source tree (target-* is git-ignored) and away from other builds'
# locks.
unset CARGO_TARGET_DIR
target="$root/target-fuzz"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

smoke() {
    local project=$1 name=$2
    echo "== fuzz $project/fuzz $name: $runs runs from fuzz/seeds/$name"
    mkdir -p "$scratch/$name" "$target/artifacts/$name"
    local start
    start=$(date +%s)
    local log="$scratch/$name.log"
    if ! (cd "$project" && cargo "${toolchain[@]}" fuzz run -s none "$name" \
        --target-dir "$target/$flavour" \
        "$scratch/$name" "$root/$project/fuzz/seeds/$name" \
        -- -runs="$runs" -seed=1 -max_len=4096 -print_final_stats=1 \
        -artifact_prefix="$target/artifacts/$name/") >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "fuzz $name FAILED; input(s) in $target/artifacts/$name/" >&2
        exit 1
    fi
    grep -E "^(INFO: seed corpus|#[0-9]+ *DONE|stat::number_of_executed_units)" "$log" || true
    echo "== fuzz $name: $(($(date +%s) - start)) s"
}

rm -rf "$target/artifacts"
smoke protocol decoder
smoke firmware command_handling
