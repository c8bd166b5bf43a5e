//! Issue 29's student bars on the shipped fixture (hil-tests/fixtures/student.clawrl: what
//! configs/run/quadruped_distill.toml distils) against the shipped teacher, through `clawrl
//! eval` as `scripts/student-bars` runs them, on fewer episodes: it sets off from a settled
//! stand on every seed, turns in place, and keeps up with the teacher under the task's own
//! commands. BENCHMARKS.md has the 100-episode table ("the student of the turning teacher").
mod common;

use common::*;

const FIXTURE: &str = "hil-tests/fixtures/student.clawrl";
const TEACHER: &str = "assets/pretrained/quadruped_flat_ppo";

/// `clawrl eval` arguments for `n` episodes from a settled stand (the runtime's stand-up pose,
/// standing still) under a fixed `command`, one environment each.
fn from_a_settled_stand<'a>(n: &'a str, command: &'a str) -> [&'a str; 8] {
    [
        "--episodes",
        n,
        "--num-envs",
        n,
        "--command",
        command,
        "--set",
        "task.randomization.settled_start_probability=1.0",
    ]
}

#[test]
fn the_student_sets_off_from_a_settled_stand_on_every_seed() {
    let dir = eval(
        FIXTURE,
        "bars-setoff",
        &from_a_settled_stand("8", "0.3,0,0"),
    );
    let speed = column(&dir, "forward_speed_mps");
    // Set off: 30 % of the command over the episode, as scenario::set_off.
    assert!(speed.iter().all(|v| *v >= 0.09), "{speed:?}");
    // And walks at it (0.25-0.33 m/s over 16 seeds in BENCHMARKS.md).
    assert!(mean(&speed) >= 0.24, "{speed:?}");
    assert!(column(&dir, "fell").iter().all(|f| *f == 0.0));
}

#[test]
fn the_student_turns_in_place_at_four_fifths_of_the_command() {
    let dir = eval(FIXTURE, "bars-turn", &from_a_settled_stand("4", "0,0,0.5"));
    let yaw = column(&dir, "yaw_rate_radps");
    assert!(mean(&yaw) >= 0.4, "{yaw:?}");
}

/// The return bar on 16 episodes of the task's commands, the same seeds for both: 89 % of the
/// teacher's (the 95 % is over 100 episodes, `scripts/student-bars`). Margin: the same
/// fixture made 96 % on these 16 episodes on the developers' machine and 92.5 % on a fresh
/// one (issue 39: a chaotic rollout grows the last-bit differences of another CPU's math
/// library), and the 16-episode blocks of seed 2's 100 episodes span 94.4-97.1 %; the bar sits
/// 3.5 points under the lowest figure seen. It no longer tells the fixture from the 64 x 64
/// student over 3 frames (91 %); the 100-episode bars do. No falls.
#[test]
fn the_student_keeps_up_with_the_teacher_under_the_tasks_commands() {
    let task = ["--episodes", "16"];
    let teacher = mean(&column(&eval(TEACHER, "bars-teacher", &task), "return"));
    let dir = eval(FIXTURE, "bars-student", &task);
    let student = mean(&column(&dir, "return"));
    assert!(
        student >= 0.89 * teacher,
        "student {student:.2} against the teacher's {teacher:.2}"
    );
    assert!(column(&dir, "fell").iter().all(|f| *f == 0.0));
}
