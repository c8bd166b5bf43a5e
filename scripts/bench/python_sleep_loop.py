#!/usr/bin/env python3
"""A control loop of the unitree-deploy kind, for `clawrl-runtime bench --python`.

The loop is the one the Python deploy scripts run (unitree_rl_gym's deploy_real and its
relatives): read the clock, do the cycle's work, then `time.sleep` whatever is left of the
period. The work here is empty, so what is measured is the sleep alone: how late each iteration
starts against the time it meant to start (the previous start plus one period), the same
quantity as the Rust timer's Tick.lateness. Because each sleep is relative, the lateness also
accumulates against the absolute schedule (start + k * period): that drift is printed too.

Prints one JSON line: rate, iterations, p50/p99/p99.9/max lateness in microseconds, misses
(iterations that started a whole period or more late) and the drift behind the absolute
schedule at the end.
"""
import argparse
import json
import math
import sys
import time


def nearest_rank(sorted_values, q):
    n = len(sorted_values)
    return sorted_values[min(max(math.ceil(q * n), 1), n) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hz", type=float, required=True)
    ap.add_argument("--seconds", type=float, default=60.0)
    a = ap.parse_args()
    dt = 1.0 / a.hz
    n = max(1, int(round(a.seconds * a.hz)))
    late = [0.0] * n
    missed = 0
    start = time.perf_counter()
    intended = start + dt
    time.sleep(dt)
    for k in range(n):
        t0 = time.perf_counter()
        lateness = t0 - intended
        late[k] = lateness
        if lateness >= dt:
            missed += 1
        # ... the cycle's work: state in, policy, command out (nothing here) ...
        intended = t0 + dt
        time.sleep(max(0.0, dt - (time.perf_counter() - t0)))
    end = time.perf_counter()
    drift = end - (start + (n + 1) * dt)
    late.sort()
    us = lambda s: round(s * 1e6, 2)
    print(
        json.dumps(
            {
                "hz": a.hz,
                "n": n,
                "p50_us": us(nearest_rank(late, 0.5)),
                "p99_us": us(nearest_rank(late, 0.99)),
                "p999_us": us(nearest_rank(late, 0.999)),
                "max_us": us(late[-1]),
                "missed": missed,
                "drift_ms": round(drift * 1e3, 3),
                "python": sys.version.split()[0],
            }
        )
    )


if __name__ == "__main__":
    main()
