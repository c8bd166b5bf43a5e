#!/usr/bin/env python3
"""Issue 13's deliberate bugs, each of which every test once let through, applied by hand one at
a time: each must make the named tests fail. The file is restored after each (and on exit).
Not in CI (it rebuilds several crates); run it from a clean tree:

    scripts/hand-mutations.py          # all of them
    scripts/hand-mutations.py 3 7      # only these

Prints one line per mutation, CAUGHT (with the failing tests) or SURVIVED; exits 1 if any
survived.
"""
import os
import re
import subprocess
import sys

FIRMWARE = "-p clawrl-firmware --no-default-features --test safety --test safety_rules"
INTERNALS = "-p clawrl-trainer --test internals"

# (what the bug is, file, exact text, replacement, cargo test arguments)
MUTATIONS = [
    ("ENABLE accepted while a fault is latched", "firmware/src/safety.rs",
     "(command::ENABLE, Idle) =>", "(command::ENABLE, Idle | Fault) =>", FIRMWARE),
    ("outputs keep following their goals in e-stop", "firmware/src/safety.rs",
     "            SafetyState::Enabled => OutputMode::Track,",
     "            SafetyState::Enabled | SafetyState::EStop => OutputMode::Track,", FIRMWARE),
    ("an IMU that stops answering never trips its fault", "firmware/src/safety.rs",
     "if self.imu_fail_ticks >= config.imu_fail_ticks || inject", "if inject", FIRMWARE),
    ("packets for other devices feed the board's watchdog", "firmware/src/handler.rs",
     "        if !Self::is_for_us(packet) || packet.instruction == Instruction::Status as u8 {\n"
     "            return;\n        }\n        self.note_traffic(now_us);",
     "        self.note_traffic(now_us);\n"
     "        if !Self::is_for_us(packet) || packet.instruction == Instruction::Status as u8 {\n"
     "            return;\n        }", FIRMWARE),
    ("a checkpoint written in place, without temporary file and rename", "policy/src/io.rs",
     'let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));',
     "let tmp = path.to_path_buf();", "-p clawrl-cli --test run_folders"),
    ("deadlines relative to wake-up instead of absolute", "runtime/src/rate.rs",
     "self.next = deadline + self.period;", "self.next = self.clock.now() + self.period;",
     "-p clawrl-runtime --lib rate"),
    ("KL-adaptive learning rate disabled", "trainer/src/algorithms/ppo.rs",
     'if c.schedule == "adaptive" {', 'if false && c.schedule == "adaptive" {', INTERNALS),
    ("value-loss clip: max swapped for min", "trainer/src/algorithms/ppo.rs",
     "Ok(l1.maximum(&l2)?.mean_all()?)", "Ok(l1.minimum(&l2)?.mean_all()?)", INTERNALS),
    ("no bootstrapping on time-outs", "trainer/src/algorithms/ppo.rs",
     ".filter(|&e| batch.truncated[e] && !batch.terminated[e])",
     ".filter(|&e| false && batch.truncated[e] && !batch.terminated[e])", INTERNALS),
    ("SAC's target update with tau and 1 - tau swapped", "trainer/src/algorithms/sac.rs",
     "let mixed = ((s.as_tensor() * tau)? + (t.as_tensor() * (1.0 - tau))?)?;",
     "let mixed = ((s.as_tensor() * (1.0 - tau))? + (t.as_tensor() * tau)?)?;", INTERNALS),
    ("MuJoCo's own error text dropped from the load error", "sim/src/model.rs",
     "        reason: e.to_string(),", "        reason: String::new(),",
     "-p clawrl-sim --test model_load"),
]


def main() -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    if subprocess.run(["git", "diff", "--quiet"]).returncode != 0:
        print("hand-mutations: the tree has uncommitted changes; commit or stash them first",
              file=sys.stderr)
        return 2
    env = dict(os.environ, RAYON_NUM_THREADS=os.environ.get("RAYON_NUM_THREADS", "1"))
    chosen = {int(a) for a in sys.argv[1:]}
    survived = False
    for n, (what, path, old, new, test) in enumerate(MUTATIONS, 1):
        if chosen and n not in chosen:
            continue
        text = open(path).read()
        if text.count(old) != 1:
            print(f"{n} STALE     {path}: the text to mutate occurs {text.count(old)} times")
            survived = True
            continue
        try:
            open(path, "w").write(text.replace(old, new))
            run = subprocess.run(["cargo", "test", *test.split()], env=env,
                                 capture_output=True, text=True)
        finally:
            open(path, "w").write(text)
        out = run.stdout + run.stderr
        if run.returncode == 0:
            print(f"{n} SURVIVED  {what} ({path})")
            survived = True
        else:
            failing = re.findall(r"^test (\S+) \.\.\. FAILED$", out, re.M)
            why = " ".join(failing) if failing else "a build error: " + next(
                (l for l in out.splitlines() if l.startswith("error")), "?")
            print(f"{n} CAUGHT    {what} ({path}) by: {why}", flush=True)
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
