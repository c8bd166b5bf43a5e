//! The rate limit on servo targets, one function for the simulator (what the policy trains
//! under: the task's `env.max_target_speed`) and the runtime (what the robot applies to every
//! goal: `safety.max_joint_speed`), so the two cannot drift apart.

/// Moves each `target` at most `step` (rad per control period) away from `last`, in place.
/// Each caller computes `step` from its own speed and period as it always has (the simulator
/// `speed * dt`, the runtime `speed / rate`), so their numbers stay bit for bit what they were.
pub fn limit_rate(target: &mut [f64], last: &[f64], step: f64) {
    for (t, l) in target.iter_mut().zip(last) {
        *t = t.clamp(l - step, l + step);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_moves_at_most_one_step_either_way() {
        let mut t = [1.0, -1.0, 0.05, 0.0];
        limit_rate(&mut t, &[0.0, 0.0, 0.0, 0.2], 0.1);
        assert_eq!(t, [0.1, -0.1, 0.05, 0.1]);
    }
}
