#!/usr/bin/env bash
# The robot computer is a 64-bit ARM board: cross-build the runtime for
# aarch64-unknown-linux-gnu (Debian's cross linker, set up by scripts/setup-cross.sh and named in
# .cargo/config.toml), check the binary really is an AArch64 ELF, and run it under qemu-user so
# that CI proves it runs on ARM, not just links. Release, because the inference benchmark's
# figure only means something optimised. Called by scripts/test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup-cross.sh

target=aarch64-unknown-linux-gnu
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-2}
# No debug line tables for the ARM binary: a shorter link in CI, a smaller file to copy.
export CARGO_PROFILE_RELEASE_DEBUG=false

t0=$(date +%s)
cargo build --release --locked -p clawrl-runtime --bin clawrl-runtime --target "$target"
t1=$(date +%s)
target_dir=$(cargo metadata --format-version 1 --no-deps --locked --offline \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
bin="$target_dir/$target/release/clawrl-runtime"
echo "aarch64 build: $((t1 - t0)) s; $bin: $(stat -c %s "$bin") bytes"

# ELF header: byte 4 = class (2 = 64-bit), bytes 18-19 = e_machine, little-endian (183 = AArch64).
class=$(od -An -tu1 -j4 -N1 "$bin" | tr -d ' ')
machine=$(od -An -tu2 --endian=little -j18 -N2 "$bin" | tr -d ' ')
if command -v file >/dev/null 2>&1; then
    file -b "$bin"
fi
if [ "$class" != 2 ] || [ "$machine" != 183 ]; then
    echo "test-aarch64: $bin is not a 64-bit AArch64 ELF (class $class, e_machine $machine)" >&2
    exit 1
fi
echo "ELF class 64, e_machine 183 (AArch64)"

qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
run() {
    echo "-- qemu-aarch64: clawrl-runtime $*"
    local s e
    s=$(date +%s%N)
    "${qemu[@]}" "$bin" "$@"
    e=$(date +%s%N)
    echo "-- took $(((e - s) / 1000000)) ms under qemu (emulated: not the board's speed)"
}
# The bundle format, candle's arithmetic against an f64 reference and the safety sequence,
# on ARM; then the student's forward pass timed (emulated: not the board's speed).
run self-test
run bench --inference --iterations 2000
