#!/usr/bin/env bash
# The distillation benchmarks of BENCHMARKS.md on the quadruped: a student size sweep and an
# alpha sweep (with pure distillation and pure RL from scratch at the same budget), each run
# evaluated on 100 randomised episodes next to the teacher. Needs a trained teacher
# (scripts/run trains one into runs/quadruped_flat_ppo). Holds both cores for about
# 25 minutes with the defaults: run it on an otherwise idle machine.
#
#   scripts/bench-distill.sh [TEACHER_RUN] [ITERATIONS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
teacher=${1:-runs/quadruped_flat_ppo}
iterations=${2:-200}
export RAYON_NUM_THREADS=1
clawrl=target/release/clawrl
[ -x "$clawrl" ] || cargo build --release --locked -p clawrl-cli --bin clawrl
out=runs/bench-distill
mkdir -p "$out"
log="$out/results.md"
echo "# clawrl distillation benchmark: $(date -u +%FT%TZ), teacher $teacher, $iterations iterations per student" > "$log"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$log"

eval_line() { # NAME POLICY
    "$clawrl" eval --policy "$2" --episodes 100 --out "$out/eval-$1" 2>/dev/null \
        | awk -v n="$1" '/mean return/{r=$3} /fall rate|ended early/{f=$3} END{print n, "eval_return", r, "fall_%", f}'
}

# Last KL to the teacher, and the first wall time at which the training return (mean of the
# last 100 episodes) reached 90 % of the teacher's final training return.
curve_stats() { # NAME
    awk -F, -v n="$1" -v target="$teacher_return" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { kl = $col["kl_teacher"]; r = $col["mean_return"]
          # (the first rows are NaN: no episode has finished yet)
          if (!hit && r ~ /^-?[0-9]/ && r + 0 >= 0.9 * target) { hit = $col["wall_s"] } }
        END { print n, "final_kl", kl, "time_to_90%_s", (hit ? hit : "not reached") }' "$out/$1/metrics.csv"
}

distill() { # NAME ARGS...
    local name=$1
    shift
    local start=$(date +%s)
    "$clawrl" distill --teacher "$teacher" --out "$out/$name" --no-progress \
        --set "run.max_iterations=$iterations" --set run.plot_every=0 "$@" 2> "$out/$name.log" > /dev/null
    echo "$name wall_s $(( $(date +%s) - start )) load $(cut -d' ' -f1 /proc/loadavg)" >> "$log"
    eval_line "$name" "$out/$name" >> "$log"
    curve_stats "$name" >> "$log"
}

eval_line teacher "$teacher" >> "$log"
teacher_return=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "mean_return") c = i; next } { r = $c } END { print r }' "$teacher/metrics.csv")
echo "teacher final training return $teacher_return, training time $(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "wall_s") c = i; next } { w = $c } END { print w }' "$teacher/metrics.csv") s" >> "$log"
# Student sizes (OPD, alpha 1).
distill size-16x16-h0 --set "policy.actor_hidden=[16,16]" --set policy.history=0
distill size-32x32-h0 --set "policy.actor_hidden=[32,32]" --set policy.history=0
distill size-64x64-h2 --set "policy.actor_hidden=[64,64]" --set policy.history=2
# Alpha sweep on the 64x64, history-2 student, and the two ends of the line.
distill alpha-0.1 --set distill.alpha=0.1
distill alpha-10 --set distill.alpha=10.0
distill pure-distill --mode distill
distill pure-rl --mode rl
"$clawrl" bench --inference "$teacher" --inference "$out/size-16x16-h0" \
    --inference "$out/size-32x32-h0" --inference "$out/size-64x64-h2" >> "$log"
# The final student against its teacher (the README's table and picture).
"$clawrl" compare --teacher "$teacher" --student "$out/size-64x64-h2" --episodes 20 \
    --out "$out/compare" >> "$log" 2>/dev/null
cat "$log"
