"""clawrl's Ray Tune driver: runs the trials `clawrl sweep` planned, one `clawrl train` process each.

`clawrl sweep` writes plan.json (the trials, already validated as run configs) and starts this
file with the Python that has Ray (scripts/setup-ray.sh). Each trial is a function trainable
that starts `clawrl train`, reads the run's metrics.csv as it grows and reports every new row
to Tune, so ASHA can stop a poor trial at a rung. A clawrl checkpoint becomes a Tune checkpoint
(a small file naming the run folder and the iteration): when Tune retries a trial whose process
died, the retry resumes that run folder (`clawrl train --resume`, clawrl's exact resume) instead
of starting again. At the end results.json holds one entry per trial for `clawrl sweep` to
tabulate.

    python sweep_ray.py PLAN_JSON
"""

import ctypes
import json
import logging
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

import ray
from ray import tune
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

PLAN = json.load(open(sys.argv[1]))
TRIALS = {t["name"]: t for t in PLAN["trials"]}
POLL_S = 0.2
SHOW_EVERY_S = 10.0  # a trial's progress line at most this often
PR_SET_PDEATHSIG = 1


def say(text):
    """One progress line on stderr (stdout stays Tune's)."""
    print(f"sweep: {text}", file=sys.stderr, flush=True)


def die_with_parent():
    # The trial's process goes when the Ray worker that started it goes (a trial stopped by
    # ASHA, a retry, a killed sweep): no orphaned trainer keeps a core busy.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def read_rows(path, after):
    """The metrics.csv rows with iteration > after, as dicts of floats."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    if not lines:
        return []
    head = lines[0].split(",")
    rows = []
    # The last line may be half written: take only lines with every column.
    for line in lines[1:]:
        cells = line.split(",")
        if len(cells) != len(head):
            continue
        try:
            row = {k: float(v) for k, v in zip(head, cells)}
        except ValueError:
            continue
        if row["iteration"] > after:
            rows.append(row)
    return rows


def checkpoint_of(run_dir, iteration, starts):
    d = tempfile.mkdtemp(prefix="clawrl-ckpt-")
    with open(os.path.join(d, "clawrl.json"), "w") as f:
        json.dump({"run_dir": run_dir, "iteration": iteration, "starts": starts}, f)
    return tune.Checkpoint.from_directory(d)


def train(config):
    # Ray logs every checkpoint it stores; the trial's own progress lines say enough.
    logging.getLogger("ray.train").setLevel(logging.WARNING)
    logging.getLogger("ray.tune").setLevel(logging.WARNING)
    trial = TRIALS[config["trial"]]
    run_dir = os.path.join(PLAN["out"], "trials", trial["name"])
    metric, smooth, every = PLAN["metric"], PLAN["smooth"], trial["checkpoint_every"]
    last, starts = 0, 1
    ckpt = tune.get_checkpoint()
    if ckpt is not None:
        with ckpt.as_directory() as d:
            state = json.load(open(os.path.join(d, "clawrl.json")))
        last, starts = int(state["iteration"]), int(state["starts"]) + 1
        cmd = [PLAN["clawrl"], "train", "--resume", run_dir, "--no-progress",
               "--set", f"run.max_iterations={PLAN['iterations']}"]
        say(f"{trial['name']}: retry {starts - 1}, resuming {run_dir} after iteration {last}")
    else:
        cmd = [PLAN["clawrl"], "train", "--config", PLAN["base"], "--out", run_dir, "--no-progress"]
        for s in trial["sets"]:
            cmd += ["--set", s]
        say(f"{trial['name']}: started")
    # A retry's score goes on from the rows before its checkpoint (the same rows: exact resume).
    values = [r[metric] for r in read_rows(os.path.join(run_dir, "metrics.csv"), 0)
              if r["iteration"] <= last and metric in r and math.isfinite(r[metric])]
    env = dict(os.environ, RAYON_NUM_THREADS="1", NO_COLOR="1")
    os.makedirs(run_dir, exist_ok=True)
    log_path = os.path.join(run_dir, f"train-{starts}.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=PLAN["cwd"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=die_with_parent)
    shown = 0.0
    try:
        while True:
            finished = proc.poll() is not None
            for row in read_rows(os.path.join(run_dir, "metrics.csv"), last):
                if metric not in row:
                    raise RuntimeError(f"metric `{metric}` is not a column of metrics.csv")
                last = int(row["iteration"])
                if math.isfinite(row[metric]):
                    values.append(row[metric])
                if not values:
                    continue  # no finished episode yet: nothing a rung could compare
                report = {
                    "iteration": last,
                    "env_steps": row.get("env_steps", 0.0),
                    "train_wall_s": row.get("wall_s", 0.0),
                    "metric": values[-1],
                    "score": sum(values[-smooth:]) / len(values[-smooth:]),
                    "starts": starts,
                    "load": " ".join(open("/proc/loadavg").read().split()[:3]),
                }
                ck = None
                if last % every == 0 or last == PLAN["iterations"]:
                    ck = checkpoint_of(run_dir, last, starts)
                if ck is not None and time.time() - shown >= SHOW_EVERY_S:
                    shown = time.time()
                    say(f"{trial['name']}: iteration {last}/{PLAN['iterations']}, "
                        f"{metric} {values[-1]:.3f}, score {report['score']:.3f}")
                tune.report(report, checkpoint=ck)
            if finished:
                break
            time.sleep(POLL_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        raise RuntimeError(f"clawrl train ended with {how} at iteration {last} (its log: {log_path})")
    say(f"{trial['name']}: done at iteration {last}")


def main():
    address = PLAN["address"] or None
    if address:
        ray.init(address=address)
    else:
        ray.init(num_cpus=PLAN["cpus"] or None, include_dashboard=False)
    say(f"Ray {ray.__version__}: {ray.cluster_resources().get('CPU', 0):.0f} CPUs, "
        f"{len(PLAN['trials'])} trials")
    asha = PLAN["asha"]
    scheduler = (ASHAScheduler(time_attr="iteration", max_t=PLAN["iterations"],
                               grace_period=asha["grace_period"],
                               reduction_factor=asha["reduction_factor"])
                 if asha else FIFOScheduler())
    trainable = tune.with_resources(train, {"cpu": PLAN["cpus_per_trial"]})
    tuner = tune.Tuner(
        trainable,
        param_space={"trial": tune.grid_search([t["name"] for t in PLAN["trials"]])},
        tune_config=tune.TuneConfig(
            metric="score", mode=PLAN["mode"], scheduler=scheduler,
            max_concurrent_trials=PLAN["max_concurrent"] or None,
            trial_name_creator=lambda t: t.config["trial"],
            trial_dirname_creator=lambda t: t.config["trial"],
        ),
        run_config=tune.RunConfig(
            name="ray", storage_path=PLAN["out"], verbose=0,
            failure_config=tune.FailureConfig(max_failures=PLAN["max_failures"]),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
        ),
    )
    t0 = time.time()
    grid = tuner.fit()
    wall = time.time() - t0
    out = []
    for r in grid:
        name = r.config["trial"]
        m = r.metrics or {}
        it = int(m.get("iteration", 0))
        if r.error is not None:
            status, error = "failed", str(r.error).strip().splitlines()[-1][:400]
        else:
            status, error = ("done" if it >= PLAN["iterations"] else "stopped"), None
        out.append({
            "name": name, "status": status, "error": error, "iterations": it,
            "env_steps": m.get("env_steps", 0.0), "wall_s": m.get("train_wall_s", 0.0),
            "metric": m.get("metric"), "score": m.get("score"), "starts": int(m.get("starts", 1)),
            "run_dir": os.path.join(PLAN["out"], "trials", name), "load": m.get("load", ""),
        })
        say(f"{name}: {status}{': ' + error if error else ''}")
    order = {t["name"]: i for i, t in enumerate(PLAN["trials"])}
    out.sort(key=lambda t: order[t["name"]])
    with open(os.path.join(PLAN["out"], "results.json"), "w") as f:
        json.dump({"wall_s": wall, "trials": out}, f, indent=1)


if __name__ == "__main__":
    main()
