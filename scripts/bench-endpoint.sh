#!/usr/bin/env bash
# The policy endpoint's benchmarks of BENCHMARKS.md, release build, in one run:
# 1. `clawrl serve` latency over loopback at batch 1 and 64 (endpoint/benches/latency.rs);
# 2. distillation throughput with the teacher served over loopback (`remote:teacher`) as a
#    fraction of the same distillation with the teacher's file, on the quadruped (physics-bound,
#    as real runs are) and on cart-pole (almost no physics: the worst case for the overhead).
#    Local and remote runs alternate, REPS times each; the medians are compared.
# Holds both cores for a few minutes: run it on an otherwise idle machine.
#
#   scripts/bench-endpoint.sh [QUADRUPED_TEACHER_RUN] [ITERATIONS] [REPS]
#
# Without a quadruped teacher run (scripts/run trains one), a 2-iteration one is trained: the
# throughput does not depend on how well the teacher walks, only on its shape.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
iterations=${2:-10}
reps=${3:-3}
export RAYON_NUM_THREADS=1
unset http_proxy HTTP_PROXY all_proxy ALL_PROXY CLAWRL_API_KEY
clawrl=target/release/clawrl
cargo build --release --locked -p clawrl-cli --bin clawrl
out=runs/bench-endpoint
rm -rf "$out"
mkdir -p "$out"
echo "== load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== serve latency"
cargo bench --locked -p clawrl-endpoint --features server --bench latency -- 5000

teacher=${1:-}
if [ -z "$teacher" ]; then
    teacher=$out/quadruped-teacher
    "$clawrl" train --config configs/run/quadruped_flat_ppo.toml --set run.max_iterations=2 --out "$teacher" >/dev/null 2>&1
fi
"$clawrl" train --config configs/run/cartpole_ppo.toml --out "$out/cartpole-teacher" >/dev/null 2>&1

key=bench-$$
CLAWRL_API_KEY=$key "$clawrl" serve --listen 127.0.0.1:0 \
    --model "quadruped=$teacher/policy.safetensors" \
    --model "cartpole=$out/cartpole-teacher/policy.safetensors" >"$out/serve.out" 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q "serving on" "$out/serve.out" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/^serving on //p' "$out/serve.out")
endpoint() { # MODEL -> endpoint file
    printf '[endpoint]\nbase_url = "%s"\napi_key = "%s"\nteacher_model = "%s"\nstudent_model = "%s"\n' \
        "$base" "$key" "$1" "$1" > "$out/endpoint-$1.toml"
    echo "$out/endpoint-$1.toml"
}

# Environment steps per second of one distillation: env steps over wall seconds of the last
# row of its metrics.csv.
rate() { # NAME CONFIG TEACHER [ENDPOINT]
    local args=(distill --config "$2" --teacher "$3" --set "run.max_iterations=$iterations" --out "$out/$1" --no-progress)
    [ $# -ge 4 ] && args+=(--endpoint "$4")
    rm -rf "$out/$1"
    "$clawrl" "${args[@]}" >/dev/null 2>&1
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { s = $c["env_steps"]; t = $c["wall_s"] } END { printf "%.0f\n", s / t }' "$out/$1/metrics.csv"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for task in quadruped cartpole; do
    if [ $task = quadruped ]; then cfg=configs/run/quadruped_distill.toml; file=$teacher/policy.safetensors
    else cfg=configs/run/cartpole_distill.toml; file=$out/cartpole-teacher/policy.safetensors; fi
    ep=$(endpoint $task)
    : > "$out/$task-local.txt"; : > "$out/$task-remote.txt"
    for r in $(seq "$reps"); do
        rate "$task-local-$r" "$cfg" "$file" >> "$out/$task-local.txt"
        rate "$task-remote-$r" "$cfg" remote:teacher "$ep" >> "$out/$task-remote.txt"
    done
    l=$(median < "$out/$task-local.txt"); rr=$(median < "$out/$task-remote.txt")
    echo "== distill $task, $iterations iterations x $reps: local teacher $(paste -sd' ' "$out/$task-local.txt") env steps/s (median $l), remote teacher $(paste -sd' ' "$out/$task-remote.txt") (median $rr): remote/local $(awk -v a="$rr" -v b="$l" 'BEGIN { printf "%.1f %%", 100 * a / b }')"
done
echo "== load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
