#!/usr/bin/env bash
# Mutation score of the robot side's safety code (issue 27): cargo-mutants on bundle
# verification, the endpoint server's key check, the runtime controller, install and the HIL
# pass conditions, each scope against the narrowest tests that exercise it. Not in CI: each
# mutant rebuilds its crate, which on two cores is minutes per dozen; run it scope by scope and
# record the score in BENCHMARKS.md. Equivalent mutants are excluded in .cargo/mutants.toml.
#
# It mutates the working tree in place (one job, the warm target/ of this checkout): do not
# edit the tree while it runs. Results: target-mutants-robot/<scope>/mutants.out.
#
# Usage: scripts/mutants-robot.sh [SCOPE...] [-- extra cargo-mutants args]
# Scopes: hil-checks controller bundle server-key install (default: all, in that order).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/ensure-cargo-mutants
scopes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do scopes+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#scopes[@]} -gt 0 ] || scopes=(hil-checks controller bundle server-key install)
export RAYON_NUM_THREADS=${RAYON_NUM_THREADS:-1}
for scope in "${scopes[@]}"; do
    re=''
    case $scope in
        # The HIL pass conditions only: `checks`, the gap checks and their helpers, against the
        # doctored outcomes of tests/checks.rs (no MuJoCo run); not the scenario runners.
        hil-checks) args=(--package clawrl-hil-tests --cargo-arg=--lib --cargo-arg=--test=checks
            --file hil-tests/src/scenario.rs)
            re='(in |replace )(Kind::\w+|Check::passed|verdict|check|reported|Comparison::\w+|Scenario::turns_in_place|mean_of|set_off|task_figure|gap_checks|measured_gap|checks)( ->|$)' ;;
        controller) args=(--package clawrl-runtime --cargo-arg=--lib
            --file runtime/src/controller/mod.rs --file runtime/src/controller/safety.rs) ;;
        bundle) args=(--package clawrl-bundle
            --file bundle/src/compat.rs --file bundle/src/container.rs
            --file bundle/src/sign.rs --file bundle/src/manifest.rs) ;;
        # The key check: the startup check of the configured key and the per-request one.
        server-key) args=(--package clawrl-endpoint --cargo-arg=--lib --cargo-arg=--test=server
            --file endpoint/src/server.rs --file endpoint/src/config.rs)
            re='(in |replace )(authorize|check_key_for|check_key)( ->|$)' ;;
        install) args=(--package clawrl-runtime --cargo-arg=--lib --cargo-arg=--test=install
            --cargo-arg=--test=install_fsync --file 'runtime/src/install/*.rs') ;;
        *) echo "mutants-robot: unknown scope $scope" >&2; exit 1 ;;
    esac
    out=target-mutants-robot/$scope
    rm -rf "$out/mutants.out"
    mkdir -p "$out"
    start=$(date +%s)
    echo "== cargo mutants: $scope (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    # Exit status 2 (mutants missed) and 3 (timeouts) are results, reported below; anything
    # else (a usage error, a baseline that fails) stops here.
    rc=0
    [ -z "$re" ] || args+=(--re "$re")
    cargo mutants --in-place "${args[@]}" --minimum-test-timeout 60 --output "$out" "$@" || rc=$?
    case $rc in 0 | 2 | 3) ;; *) echo "mutants-robot: cargo mutants failed ($rc) on $scope" >&2; exit "$rc" ;; esac
    echo "== $scope: $(($(date +%s) - start)) s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
    # cargo-mutants 27.1.0 does not apply --re/--exclude-re to struct-field deletions: those
    # outside the scope's functions are tested anyway; they are counted apart, not as results.
    res=$out/mutants.out
    for kind in caught missed timeout unviable; do
        grep -E "${re:-.}" "$res/$kind.txt" > "$res/$kind.scope" 2>/dev/null || true
        printf '%-9s %s\n' "$kind" "$(wc -l < "$res/$kind.scope")"
    done
    outside=$(cat "$res"/{caught,missed,timeout,unviable}.txt 2>/dev/null | grep -cvE "${re:-.}" || true)
    [ "$outside" = 0 ] || echo "outside the scope (struct-field deletions cargo-mutants does not filter): $outside"
    if [ -s "$res/missed.scope" ]; then
        echo "surviving:"
        cat "$res/missed.scope"
    fi
done
