#!/usr/bin/env bash
# Mutation score of the learning code (issue 13): cargo-mutants on single files of the trainer's
# algorithms and storage and of the policy crate, each against its own crate's fast tests
# (policy: its unit tests; trainer: its unit tests and tests/internals/, the fixed-input
# checks). Not in CI: the whole scope is about 750 mutants, each rebuilding a candle-dependent
# crate, which is hours on two cores; run it file by file and record the score in BENCHMARKS.md.
#
# It mutates the working tree in place (one job, the warm target/ of this checkout): do not
# edit the tree while it runs. Results: target-mutants-learning/<file>/mutants.out.
#
# Usage: scripts/mutants-learning.sh FILE... [-- extra cargo-mutants args]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/ensure-cargo-mutants
files=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do files+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}
for f in "${files[@]}"; do
    case $f in
        policy/*) args=(--package clawrl-policy --cargo-arg=--lib) ;;
        trainer/*) args=(--package clawrl-trainer --cargo-arg=--lib --cargo-arg=--test=internals) ;;
        *) echo "mutants-learning: $f is neither in policy/ nor in trainer/" >&2; exit 1 ;;
    esac
    out=target-mutants-learning/$(basename "$f" .rs)
    rm -rf "$out/mutants.out"
    mkdir -p "$out"
    start=$(date +%s)
    echo "== cargo mutants: $f (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    # Exit status 2 (mutants missed) and 3 (timeouts) are results, reported below; anything
    # else (a usage error, a baseline that fails) stops here.
    rc=0
    cargo mutants --in-place "${args[@]}" --file "$f" --minimum-test-timeout 60 --output "$out" "$@" || rc=$?
    case $rc in 0 | 2 | 3) ;; *) echo "mutants-learning: cargo mutants failed ($rc) on $f" >&2; exit "$rc" ;; esac
    echo "== $f: $(($(date +%s) - start)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for kind in caught missed timeout unviable; do
        printf '%-9s %s\n' "$kind" "$(wc -l < "$out/mutants.out/$kind.txt" 2>/dev/null || echo 0)"
    done
    if [ -s "$out/mutants.out/missed.txt" ]; then
        echo "surviving:"
        cat "$out/mutants.out/missed.txt"
    fi
done
