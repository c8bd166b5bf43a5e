#!/usr/bin/env bash
# Mutation testing of the firmware's safety path (issue 13): every mutant cargo-mutants makes in
# firmware/src/{safety,handler,servo,controller,tables}.rs must make a test fail. Exits non-zero
# if any mutant survives ("missed"); timeouts and unviable mutants are fine.
#
# Kept fast enough for CI on a 2-core machine:
# - the no_std core only (--no-default-features): the virtual board and its binary, which
#   integration tests would otherwise build and link for every mutant, are left out;
# - only the test binaries that drive the core through its real loop and read the PWM outputs
#   and status packets (tests/safety.rs, tests/safety_rules.rs, tests/bus_watchdog.rs,
#   tests/hil_mode.rs): not the pty conformance test, and not the crate's unit tests (they
#   would compile the library a second time per mutant, and what they check is checked
#   through the loop as well);
# - opt-level 0 and no debug info for the workspace's own crates (dependencies are built once);
# - two jobs in parallel, each in its own copy of the tree with its own target directory.
# Mutants that are equivalent (no behaviour can tell them apart) are excluded in
# .cargo/mutants.toml, each with the reason.
#
# Usage: scripts/mutants-firmware.sh [extra cargo-mutants args, e.g. --re safety]
# Results (caught.txt, missed.txt, ...) land in target-mutants/mutants.out.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

scripts/ensure-cargo-mutants

# Each build directory gets its own target/; a shared one would serialise the jobs on its lock.
unset CARGO_TARGET_DIR
export CARGO_PROFILE_DEV_OPT_LEVEL=0 CARGO_PROFILE_DEV_DEBUG=0
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}
mkdir -p target-mutants

echo "== cargo mutants: firmware safety path"
start=$(date +%s)
status=0
cargo mutants \
    --package clawrl-firmware \
    --file firmware/src/safety.rs \
    --file firmware/src/handler.rs \
    --file firmware/src/servo.rs \
    --file firmware/src/controller.rs \
    --file firmware/src/tables.rs \
    --cargo-arg=--no-default-features \
    --cargo-arg=--test=safety \
    --cargo-arg=--test=safety_rules \
    --cargo-arg=--test=bus_watchdog \
    --cargo-arg=--test=hil_mode \
    --jobs "${MUTANTS_JOBS:-2}" \
    --minimum-test-timeout 30 \
    --output target-mutants \
    "$@" || status=$?
echo "== $(($(date +%s) - start)) s; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# cargo-mutants exits 2 when mutants were missed, 3 on timeouts, 4 if the unmutated tree
# fails its tests; only missed mutants and a broken baseline fail this script.
out=target-mutants/mutants.out
for kind in caught missed timeout unviable; do
    printf '%-9s %s\n' "$kind" "$(wc -l < "$out/$kind.txt" 2>/dev/null || echo 0)"
done
case $status in
    0 | 3) ;;
    2)
        echo "surviving mutants:"
        cat "$out/missed.txt"
        exit 1
        ;;
    *) exit "$status" ;;
esac
