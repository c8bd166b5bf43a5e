//! The named reward terms. Each is a pure function of [`RewardInputs`], so its sign can be
//! checked on a scripted case; weights come from `[rewards.weights]` in the task file.
use super::config::{RewardConfig, RewardWeights};
use super::layout::NUM_FEET;
use super::math::Vec3;

/// Term names, in the order of [`terms`] and [`RewardWeights::named`].
pub const TERMS: [&str; 13] = [
    "tracking_lin_vel",
    "tracking_ang_vel",
    "lin_vel_z",
    "ang_vel_xy",
    "orientation",
    "base_height",
    "action_rate",
    "energy",
    "feet_air_time",
    "claw_use",
    "trot_contact",
    "claw_idle",
    "termination",
];
pub const NUM_TERMS: usize = TERMS.len();

/// What the reward looks at after one control step.
#[derive(Debug, Clone, Default)]
pub struct RewardInputs<'a> {
    /// Commanded forward speed, lateral speed (m/s) and yaw rate (rad/s).
    pub command: [f64; 3],
    /// Base linear velocity in the body frame (m/s).
    pub lin_vel: Vec3,
    /// Base angular velocity in the body frame (rad/s).
    pub ang_vel: Vec3,
    /// The floor normal in the body frame: (0, 0, 1) when the body is level with the floor.
    pub floor_normal: Vec3,
    /// Torso height above the floor (m).
    pub height: f64,
    pub action: &'a [f32],
    pub prev_action: &'a [f32],
    /// Mean over the step of sum |torque * joint speed| over the leg servos (W).
    pub power: f64,
    /// For each foot that touched down in this step, its air time (s); 0 otherwise.
    pub touchdown_air_time: [f64; NUM_FEET],
    pub contact: [bool; NUM_FEET],
    /// Claw grip in [0, 1].
    pub grip: [f64; NUM_FEET],
    /// Tilt of the floor from level (rad): the claws have a job only where it is tilted.
    pub floor_tilt: f64,
    pub terminated: bool,
}

/// Below this floor tilt the claws are idle by `claw_idle` (2 degrees: no floor the slopes task
/// draws is that flat, every flat floor is).
pub const CLAW_IDLE_MAX_TILT: f64 = 0.035;

/// Unweighted value of every term.
pub fn terms(x: &RewardInputs, cfg: &RewardConfig) -> [f64; NUM_TERMS] {
    let sigma2 = cfg.tracking_sigma * cfg.tracking_sigma;
    let lin_err = (x.command[0] - x.lin_vel[0]).powi(2) + (x.command[1] - x.lin_vel[1]).powi(2);
    let ang_err = (x.command[2] - x.ang_vel[2]).powi(2);
    let action_rate: f64 = x
        .action
        .iter()
        .zip(x.prev_action)
        .map(|(a, b)| f64::from(a - b).powi(2))
        .sum();
    let moving = x.command[0].hypot(x.command[1]) > 0.05 || x.command[2].abs() > 0.05;
    let air_time: f64 = if moving {
        x.touchdown_air_time
            .iter()
            .filter(|t| **t > 0.0)
            .map(|t| t - cfg.air_time_target)
            .sum()
    } else {
        0.0
    };
    let claw: f64 = x
        .grip
        .iter()
        .zip(x.contact)
        .map(|(g, c)| if c { *g } else { -*g })
        .sum::<f64>()
        / NUM_FEET as f64;
    // A trot's contact pattern: diagonal feet (FL-RR, FR-RL) together, left and right apart.
    // 1 for a trot, 0.5 for a pace or all four feet down, 0 for a bound; only when moving,
    // so the robot may stand on four feet when told to stand.
    let [fl, fr, rl, rr] = x.contact;
    let trot = if moving {
        [fl == rr, fr == rl, fl != fr, rl != rr]
            .iter()
            .filter(|b| **b)
            .count() as f64
            / 4.0
    } else {
        0.0
    };
    let claw_idle = if x.floor_tilt < CLAW_IDLE_MAX_TILT {
        x.grip.iter().sum::<f64>() / NUM_FEET as f64
    } else {
        0.0
    };
    [
        (-lin_err / sigma2).exp(),
        (-ang_err / sigma2).exp(),
        x.lin_vel[2].powi(2),
        x.ang_vel[0].powi(2) + x.ang_vel[1].powi(2),
        x.floor_normal[0].powi(2) + x.floor_normal[1].powi(2),
        (x.height - cfg.base_height_target).powi(2),
        action_rate,
        x.power,
        air_time,
        claw,
        trot,
        claw_idle,
        if x.terminated { 1.0 } else { 0.0 },
    ]
}

/// Weighted terms: `weight * term * dt`, except termination, which is a one-off.
pub fn weighted(values: &[f64; NUM_TERMS], weights: &RewardWeights, dt: f64) -> [f64; NUM_TERMS] {
    let named = weights.named();
    std::array::from_fn(|i| {
        let scale = if TERMS[i] == "termination" { 1.0 } else { dt };
        values[i] * named[i].1 * scale
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quadruped::TaskConfig;

    fn config() -> TaskConfig {
        TaskConfig::flat().expect("shipped config loads")
    }

    /// A robot standing level at the target height, commanded to walk forward at 0.3 m/s
    /// and doing so exactly.
    fn perfect<'a>(action: &'a [f32]) -> RewardInputs<'a> {
        RewardInputs {
            command: [0.3, 0.0, 0.0],
            lin_vel: [0.3, 0.0, 0.0],
            floor_normal: [0.0, 0.0, 1.0],
            height: 0.18,
            action,
            prev_action: action,
            contact: [true; NUM_FEET],
            ..Default::default()
        }
    }

    fn total(x: &RewardInputs, c: &TaskConfig) -> f64 {
        weighted(&terms(x, &c.rewards), &c.rewards.weights, 0.02)
            .iter()
            .sum()
    }

    fn term(x: &RewardInputs, c: &TaskConfig, name: &str) -> f64 {
        let i = TERMS.iter().position(|t| *t == name).unwrap();
        weighted(&terms(x, &c.rewards), &c.rewards.weights, 0.02)[i]
    }

    #[test]
    fn weights_and_terms_line_up() {
        let c = config();
        for (i, (name, _)) in c.rewards.weights.named().iter().enumerate() {
            assert_eq!(*name, TERMS[i]);
        }
    }

    #[test]
    fn each_term_has_the_right_sign() {
        let c = config();
        let a = [0.0f32; 16];
        let good = perfect(&a);
        assert!(term(&good, &c, "tracking_lin_vel") > 0.0);
        assert!(term(&good, &c, "tracking_ang_vel") > 0.0);
        let base = total(&good, &c);

        // Every deviation from the perfect case lowers the reward.
        let slow = RewardInputs {
            lin_vel: [0.0, 0.0, 0.0],
            ..good.clone()
        };
        assert!(total(&slow, &c) < base, "not moving when told to must cost");
        let spin = RewardInputs {
            ang_vel: [0.0, 0.0, 0.7],
            ..good.clone()
        };
        assert!(total(&spin, &c) < base);
        let bounce = RewardInputs {
            lin_vel: [0.3, 0.0, 0.4],
            ..good.clone()
        };
        assert!(term(&bounce, &c, "lin_vel_z") < 0.0);
        let wobble = RewardInputs {
            ang_vel: [1.0, 1.0, 0.0],
            ..good.clone()
        };
        assert!(term(&wobble, &c, "ang_vel_xy") < 0.0);
        let tilted = RewardInputs {
            floor_normal: [0.3, 0.0, 0.95],
            ..good.clone()
        };
        assert!(term(&tilted, &c, "orientation") < 0.0);
        let crouched = RewardInputs {
            height: 0.12,
            ..good.clone()
        };
        assert!(term(&crouched, &c, "base_height") < 0.0);
        let prev = [0.5f32; 16];
        let jerky = RewardInputs {
            prev_action: &prev,
            ..good.clone()
        };
        assert!(term(&jerky, &c, "action_rate") < 0.0);
        let working = RewardInputs {
            power: 10.0,
            ..good.clone()
        };
        assert!(term(&working, &c, "energy") < 0.0);
        let fell = RewardInputs {
            terminated: true,
            ..good.clone()
        };
        assert!(term(&fell, &c, "termination") < 0.0);
        assert!(
            term(&fell, &c, "termination") <= -1.0,
            "termination is a one-off, not scaled by dt"
        );
        for case in [
            &slow, &spin, &bounce, &wobble, &tilted, &crouched, &jerky, &working, &fell,
        ] {
            assert!(total(case, &c) < base);
        }
    }

    #[test]
    fn air_time_rewards_long_swings_only_when_moving() {
        let c = config();
        let a = [0.0f32; 16];
        let long = RewardInputs {
            touchdown_air_time: [0.4, 0.0, 0.0, 0.0],
            ..perfect(&a)
        };
        let short = RewardInputs {
            touchdown_air_time: [0.05, 0.0, 0.0, 0.0],
            ..perfect(&a)
        };
        assert!(term(&long, &c, "feet_air_time") > 0.0);
        assert!(term(&short, &c, "feet_air_time") < 0.0);
        let standing = RewardInputs {
            command: [0.0; 3],
            lin_vel: [0.0; 3],
            ..long.clone()
        };
        assert_eq!(term(&standing, &c, "feet_air_time"), 0.0);
    }

    #[test]
    fn claw_use_rewards_grip_in_stance_and_punishes_it_in_swing() {
        let c = TaskConfig::slopes().unwrap();
        let a = [0.0f32; 16];
        let stance = RewardInputs {
            grip: [1.0; 4],
            contact: [true; 4],
            ..perfect(&a)
        };
        let swing = RewardInputs {
            grip: [1.0; 4],
            contact: [false; 4],
            ..perfect(&a)
        };
        let open = RewardInputs {
            grip: [0.0; 4],
            ..perfect(&a)
        };
        assert!(term(&stance, &c, "claw_use") > 0.0);
        assert!(term(&swing, &c, "claw_use") < 0.0);
        assert_eq!(term(&open, &c, "claw_use"), 0.0);
    }

    /// The contact pattern term, unweighted, on scripted foot states.
    fn trot_value(contact: [bool; 4], command: [f64; 3]) -> f64 {
        let c = config();
        let a = [0.0f32; 16];
        let x = RewardInputs {
            contact,
            command,
            ..perfect(&a)
        };
        let i = TERMS.iter().position(|t| *t == "trot_contact").unwrap();
        terms(&x, &c.rewards)[i]
    }

    #[test]
    fn trot_contact_ranks_a_trot_over_a_pace_over_a_bound() {
        let walk = [0.3, 0.0, 0.0];
        // FL, FR, RL, RR.
        assert_eq!(trot_value([true, false, false, true], walk), 1.0);
        assert_eq!(trot_value([false, true, true, false], walk), 1.0);
        assert_eq!(trot_value([true, false, true, false], walk), 0.5, "pace");
        assert_eq!(trot_value([true; 4], walk), 0.5, "all feet down");
        assert_eq!(trot_value([true, true, false, false], walk), 0.0, "bound");
        assert_eq!(trot_value([true, false, false, false], walk), 0.5);
        assert_eq!(trot_value([true, false, false, true], [0.0; 3]), 0.0);
    }

    #[test]
    fn claw_idle_counts_grip_on_a_flat_floor_only() {
        let mut c = config();
        c.rewards.weights.claw_idle = -1.0;
        let a = [0.0f32; 16];
        let gripping = RewardInputs {
            grip: [0.5; 4],
            ..perfect(&a)
        };
        assert!(term(&gripping, &c, "claw_idle") < 0.0);
        let i = TERMS.iter().position(|t| *t == "claw_idle").unwrap();
        assert_eq!(terms(&gripping, &c.rewards)[i], 0.5);
        let sloped = RewardInputs {
            floor_tilt: 0.1,
            ..gripping.clone()
        };
        assert_eq!(terms(&sloped, &c.rewards)[i], 0.0);
        let open = RewardInputs {
            grip: [0.0; 4],
            ..perfect(&a)
        };
        assert_eq!(terms(&open, &c.rewards)[i], 0.0);
    }
}
