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
import shutil
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


def die_with_parent(parent):
    """The trial's process goes when the Ray worker that started it goes (a trial stopped by
    ASHA, a retry, a killed sweep): no orphaned trainer keeps a core busy."""
    # libc is loaded here, in the worker before the fork, not in the child after it (and not
    # at import: this module's globals travel to the workers pickled).
    prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl

    def set_up():
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the worker died before the line above
            os._exit(1)
    return set_up


class Metrics:
    """metrics.csv read as it grows: only the new complete lines each time, from the start
    again when the file is replaced (a resume rewrites it)."""

    def __init__(self, path):
        self.path, self.inode, self.offset, self.head, self.rest = path, None, 0, None, ""

    def new_rows(self):
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return []
        if st.st_ino != self.inode or st.st_size < self.offset:
            self.inode, self.offset, self.head, self.rest = st.st_ino, 0, None, ""
        with open(self.path) as f:
            f.seek(self.offset)
            text = f.read()
            self.offset = f.tell()
        text, rows = self.rest + text, []
        # A line without its newline may be half written: keep it for the next read.
        *lines, self.rest = text.split("\n")
        for line in lines:
            cells = line.split(",")
            if self.head is None:
                self.head = cells
            elif len(cells) == len(self.head):
                rows.append({k: float(v) for k, v in zip(self.head, cells)})
        return rows


def checkpoint_of(run_dir, iteration, starts):
    d = tempfile.mkdtemp(prefix="clawrl-ckpt-")
    with open(os.path.join(d, "clawrl.json"), "w") as f:
        json.dump({"run_dir": run_dir, "iteration": iteration, "starts": starts}, f)
    return d


def has_checkpoint(run_dir, iteration=None):
    d = os.path.join(run_dir, "checkpoints")
    if iteration is not None:
        return os.path.exists(os.path.join(d, f"ckpt_{iteration:08}.safetensors"))
    return os.path.isdir(d) and any(n.endswith(".safetensors") for n in os.listdir(d))


def train(config):
    # Ray logs every checkpoint it stores; the trial's own progress lines say enough.
    logging.getLogger("ray.train").setLevel(logging.WARNING)
    logging.getLogger("ray.tune").setLevel(logging.WARNING)
    trial = TRIALS[config["trial"]]
    run_dir = os.path.join(PLAN["out"], "trials", trial["name"])
    metric, smooth, every = PLAN["metric"], PLAN["smooth"], trial["checkpoint_every"]
    total = PLAN["iterations"]
    last = 0
    ckpt = tune.get_checkpoint()
    if ckpt is not None:
        with ckpt.as_directory() as d:
            last = int(json.load(open(os.path.join(d, "clawrl.json")))["iteration"])
    # What is on disk decides: a run folder with a checkpoint is resumed (exact resume), even
    # when the process died before Tune was told of that checkpoint.
    starts = len([n for n in os.listdir(run_dir) if n.startswith("train-")]) + 1 \
        if os.path.isdir(run_dir) else 1
    if has_checkpoint(run_dir):
        cmd = [PLAN["clawrl"], "train", "--resume", run_dir, "--no-progress",
               "--set", f"run.max_iterations={total}"]
        say(f"{trial['name']}: start {starts}, resuming {run_dir} (reported up to iteration {last})")
    else:
        if os.path.isdir(run_dir):  # a start that died before its first checkpoint
            for n in os.listdir(run_dir):
                if not n.startswith("train-"):
                    p = os.path.join(run_dir, n)
                    shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
        cmd = [PLAN["clawrl"], "train", "--config", PLAN["base"], "--out", run_dir, "--no-progress"]
        for s in trial["sets"]:
            cmd += ["--set", s]
        say(f"{trial['name']}: started" + (f" again (start {starts})" if starts > 1 else ""))
    env = dict(os.environ, RAYON_NUM_THREADS="1", NO_COLOR="1")
    os.makedirs(run_dir, exist_ok=True)
    log_path = os.path.join(run_dir, f"train-{starts}.log")
    metrics = Metrics(os.path.join(run_dir, "metrics.csv"))
    # A retry's score goes on from the rows before its checkpoint (the same rows: exact resume).
    values = []
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=PLAN["cwd"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=die_with_parent(os.getpid()))
    shown = 0.0
    try:
        while True:
            finished = proc.poll() is not None
            for row in metrics.new_rows():
                if metric not in row:
                    raise RuntimeError(f"metric `{metric}` is not a column of metrics.csv")
                it = int(row["iteration"])
                # (iteration, value) of the finite values so far; a rewritten file (a resume)
                # starts again from its first row, so drop what it repeats.
                while values and values[-1][0] >= it:
                    values.pop()
                if math.isfinite(row[metric]):
                    values.append((it, row[metric]))
                if it <= last or not values:
                    continue  # reported before a retry, or no finished episode yet
                last = it
                if it == total:
                    # The last row comes before the run's last checkpoint and policy are
                    # written: let the trainer finish before Tune (ASHA's last rung) may stop us.
                    proc.wait()
                report = {
                    "iteration": it,
                    "env_steps": row.get("env_steps", 0.0),
                    "train_wall_s": row.get("wall_s", 0.0),
                    "metric": values[-1][1],
                    "score": sum(v for _, v in values[-smooth:]) / len(values[-smooth:]),
                    "starts": starts,
                    "load": " ".join(open("/proc/loadavg").read().split()[:3]),
                }
                # A Tune checkpoint only once clawrl's own is on disk.
                wait_until = time.time() + 10.0
                while (it % every == 0 or it == total) and not has_checkpoint(run_dir, it) \
                        and proc.poll() is None and time.time() < wait_until:
                    time.sleep(0.02)
                ck = checkpoint_of(run_dir, it, starts) if has_checkpoint(run_dir, it) else None
                if ck is not None and time.time() - shown >= SHOW_EVERY_S:
                    shown = time.time()
                    say(f"{trial['name']}: iteration {it}/{total}, "
                        f"{metric} {values[-1][1]:.3f}, score {report['score']:.3f}")
                tune.report(report, checkpoint=tune.Checkpoint.from_directory(ck) if ck else None)
                if ck is not None:
                    shutil.rmtree(ck, ignore_errors=True)  # Tune has its copy
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
                               reduction_factor=asha["reduction_factor"],
                               stop_last_trials=False)
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
            lines = str(r.error).strip().splitlines() or [type(r.error).__name__]
            status, error = "failed", lines[-1][:400]
        elif "score" not in m:
            status, error = "no metric", None  # never a finite value: nothing to rank
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
