//! The named reward terms. Each is a pure function of [`RewardInputs`], so its sign can be
//! checked on a scripted case; weights come from `[rewards.weights]` in the task file.
use super::config::{RewardConfig, RewardWeights};
use super::layout::NUM_FEET;
use super::math::Vec3;

/// Term names, in the order of [`terms`] and [`RewardWeights::named`] (declared once, with
/// the weights, in the config module).
pub use super::config::{NUM_TERMS, REWARD_TERMS as TERMS};

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
    /// Each foot's share of time in contact, an exponential average over [`DUTY_WINDOW_S`].
    pub duty: [f64; NUM_FEET],
    /// Leg joint positions (rad), in the order of the servo layout (the servos of kind `leg`).
    pub leg_joint_pos: &'a [f64],
    /// The same joints' default pose (rad): the stance the pose terms pull towards.
    pub leg_default: &'a [f64],
    /// The same joints' velocities (rad/s).
    pub leg_joint_vel: &'a [f64],
    /// Each foot's lowest point above the floor (m).
    pub foot_height: [f64; NUM_FEET],
    /// Each foot's speed along the floor (m/s) over the last control step.
    pub foot_speed: [f64; NUM_FEET],
    /// The gait clock's phase in [0, 1) (`rewards.gait_frequency_hz` > 0), or `None`.
    pub gait_phase: Option<f64>,
    pub terminated: bool,
}

/// Whether a command asks the robot to move (the terms that pay for stepping count only then).
pub fn moving(command: [f64; 3]) -> bool {
    command[0].hypot(command[1]) > 0.05 || command[2].abs() > 0.05
}

/// Where each foot's stride starts on the clock (FL, FR, RL, RR): a trot, diagonal pairs
/// together, the pairs half a stride apart.
pub const TROT_OFFSETS: [f64; NUM_FEET] = [0.0, 0.5, 0.5, 0.0];
/// Share of a stride a foot spends on the ground in the clock's schedule.
pub const CLOCK_DUTY: f64 = 0.5;

/// Which feet the clock wants on the ground: by the trot's schedule while moving, all four at a
/// stand (the clock stops).
pub fn clock_stance(phase: f64, moving: bool) -> [bool; NUM_FEET] {
    TROT_OFFSETS.map(|o| !moving || (phase + o).rem_euclid(1.0) < CLOCK_DUTY)
}

/// Time constant (s) of the duty-factor average behind `duty_balance`: a few strides, so one
/// swing does not swing the term, but a foot that stays down for seconds does.
pub const DUTY_WINDOW_S: f64 = 1.0;

/// One step of the duty-factor average: `duty += (contact - duty) * dt / DUTY_WINDOW_S`.
pub fn update_duty(duty: &mut [f64; NUM_FEET], contact: &[bool; NUM_FEET], dt: f64) {
    let k = (dt / DUTY_WINDOW_S).min(1.0);
    for (d, c) in duty.iter_mut().zip(contact) {
        *d += (f64::from(u8::from(*c)) - *d) * k;
    }
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
    let moving = moving(x.command);
    let air_time: f64 = if moving {
        x.touchdown_air_time
            .iter()
            .filter(|t| **t > 0.0)
            .map(|t| t - cfg.air_time_target)
            .sum()
    } else {
        0.0
    };
    // Grip in stance minus grip in swing, paid in proportion to how well the body follows the
    // command: a robot that stands with its claws shut while told to walk earns nothing for
    // them (unscaled, a slope teacher learnt exactly that: BENCHMARKS.md, "Slopes with claws").
    let claw: f64 = x
        .grip
        .iter()
        .zip(x.contact)
        .map(|(g, c)| if c { *g } else { -*g })
        .sum::<f64>()
        / NUM_FEET as f64
        * (-lin_err / sigma2).exp();
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
    // A gait that leans on some feet more than others (the three-legged gaits PPO finds first)
    // shows as a spread of duty factors; a trot, a pace and a bound all have none.
    let duty_balance = if moving {
        let max = x.duty.iter().copied().fold(f64::MIN, f64::max);
        let min = x.duty.iter().copied().fold(f64::MAX, f64::min);
        max - min
    } else {
        0.0
    };
    // Distance from the stance the robot was designed around: keeps the legs under the body,
    // where every foot can reach the ground, instead of splayed or tucked.
    let joint_pose: f64 = x
        .leg_joint_pos
        .iter()
        .zip(x.leg_default)
        .map(|(q, q0)| (q - q0).powi(2))
        .sum();
    // MuJoCo Playground's Go1 recipe (go1/joystick.py), the gait that trotted zero-shot on a
    // real Go1 without a clock: a moving foot is drawn towards a swing height (weighted by the
    // square root of its speed, so a foot in stance costs nothing), a foot in contact must not
    // slide, and at zero command the legs hold the default pose. Clearance is masked at zero
    // command as air time is: standing still must not pay for lifting feet.
    let feet_clearance: f64 = if moving {
        x.foot_height
            .iter()
            .zip(x.foot_speed)
            .map(|(h, v)| (h - cfg.swing_height_target).abs() * v.sqrt())
            .sum()
    } else {
        0.0
    };
    let feet_slip: f64 = x
        .foot_speed
        .iter()
        .zip(x.contact)
        .filter(|(_, c)| *c)
        .map(|(v, _)| v * v)
        .sum();
    let stand_still: f64 = if moving {
        0.0
    } else {
        x.leg_joint_pos
            .iter()
            .zip(x.leg_default)
            .map(|(q, q0)| (q - q0).abs())
            .sum()
    };
    // The pose term alone leaves a robot that trots in place at zero command (seen at 7 steps
    // per foot per second, BENCHMARKS.md; users of Playground and walk-these-ways report the
    // same): at zero command every foot off the ground costs as well.
    let stand_still_feet = if moving {
        0.0
    } else {
        x.contact.iter().filter(|c| !**c).count() as f64
    };
    // A trot in place moves every leg joint; a stand moves none: at zero command the sum of
    // squared leg-joint speeds costs (Playground's Go1 costs joint speed at all commands).
    let stand_still_joint_vel: f64 = if moving {
        0.0
    } else {
        x.leg_joint_vel.iter().map(|v| v * v).sum()
    };
    // walk-these-ways' contact schedule, as a share of feet: a foot the clock wants down is
    // paid for being down and still (speed along the floor within a few cm/s), a foot it
    // wants up for being up. At a stand the clock wants all four down and still.
    let gait_clock = x.gait_phase.map_or(0.0, |phase| {
        let want = clock_stance(phase, moving);
        let feet = (0..NUM_FEET).map(|i| match (want[i], x.contact[i]) {
            (true, true) => (-(x.foot_speed[i] / 0.05).powi(2)).exp(),
            (false, false) => 1.0,
            _ => 0.0,
        });
        feet.sum::<f64>() / NUM_FEET as f64
    });
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
        duty_balance,
        joint_pose,
        feet_clearance,
        feet_slip,
        stand_still,
        stand_still_feet,
        stand_still_joint_vel,
        gait_clock,
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

    /// The claw-foot quadruped's leg joints at their default pose.
    const LEG_DEFAULT: [f64; 12] = {
        let mut q = [0.0; 12];
        let mut i = 0;
        while i < 12 {
            q[i] = clawrl_robot::quadruped::DEFAULT_POSE[i];
            i += 1;
        }
        q
    };

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
            duty: [0.5; NUM_FEET],
            leg_joint_pos: &LEG_DEFAULT,
            leg_default: &LEG_DEFAULT,
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
        // Gripping while standing still against a 0.3 m/s command earns a fraction of it:
        // exp(-0.3^2 / 0.25^2) = 0.24 of the tracking case.
        let still = RewardInputs {
            lin_vel: [0.0; 3],
            ..stance.clone()
        };
        let ratio = term(&still, &c, "claw_use") / term(&stance, &c, "claw_use");
        assert!((ratio - (-0.09f64 / 0.0625).exp()).abs() < 1e-9, "{ratio}");
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

    fn value(x: &RewardInputs, name: &str) -> f64 {
        let i = TERMS.iter().position(|t| *t == name).unwrap();
        terms(x, &config().rewards)[i]
    }

    #[test]
    fn duty_balance_is_the_spread_of_duty_factors_when_moving() {
        let a = [0.0f32; 16];
        let even = RewardInputs {
            duty: [0.5; 4],
            ..perfect(&a)
        };
        assert_eq!(value(&even, "duty_balance"), 0.0);
        let three_legged = RewardInputs {
            duty: [0.7, 0.6, 0.65, 0.1],
            ..perfect(&a)
        };
        assert!((value(&three_legged, "duty_balance") - 0.6).abs() < 1e-12);
        let standing = RewardInputs {
            command: [0.0; 3],
            lin_vel: [0.0; 3],
            ..three_legged.clone()
        };
        assert_eq!(
            value(&standing, "duty_balance"),
            0.0,
            "standing still is free"
        );
    }

    #[test]
    fn duty_average_follows_the_contact_pattern() {
        let mut duty = [0.5; 4];
        // Ten seconds of FL always down, FR never, RL and RR alternating every step.
        for k in 0..500 {
            let alt = k % 2 == 0;
            update_duty(&mut duty, &[true, false, alt, !alt], 0.02);
        }
        assert!(duty[0] > 0.99, "{duty:?}");
        assert!(duty[1] < 0.01, "{duty:?}");
        assert!((duty[2] - 0.5).abs() < 0.02, "{duty:?}");
        assert!((duty[3] - 0.5).abs() < 0.02, "{duty:?}");
    }

    #[test]
    fn joint_pose_is_the_squared_distance_from_the_default_pose() {
        let a = [0.0f32; 16];
        let home = perfect(&a);
        assert_eq!(value(&home, "joint_pose"), 0.0);
        let mut q = LEG_DEFAULT;
        q[1] += 0.3; // FL hip pitch
        q[11] -= 0.4; // RR knee
        let bent = RewardInputs {
            leg_joint_pos: &q,
            ..home.clone()
        };
        assert!((value(&bent, "joint_pose") - 0.25).abs() < 1e-12);
        let mut c = config();
        c.rewards.weights.joint_pose = -0.3;
        assert!(term(&bent, &c, "joint_pose") < 0.0);
    }

    #[test]
    fn feet_clearance_costs_a_dragged_foot_not_a_planted_or_lifted_one() {
        let a = [0.0f32; 16];
        let planted = perfect(&a);
        assert_eq!(
            value(&planted, "feet_clearance"),
            0.0,
            "a foot that does not move"
        );
        let target = config().rewards.swing_height_target;
        let lifted = RewardInputs {
            foot_height: [target, 0.0, 0.0, target],
            foot_speed: [0.5, 0.0, 0.0, 0.5],
            ..perfect(&a)
        };
        assert!(
            value(&lifted, "feet_clearance").abs() < 1e-12,
            "swinging at the target height"
        );
        // A foot that never lifts but shuffles along the floor: the gait the term is against.
        let dragged = RewardInputs {
            foot_height: [0.0; 4],
            foot_speed: [0.25, 0.0, 0.0, 0.0],
            ..perfect(&a)
        };
        assert!((value(&dragged, "feet_clearance") - target * 0.5).abs() < 1e-12);
        assert!(term(&dragged, &config(), "feet_clearance") < 0.0);
        let standing = RewardInputs {
            command: [0.0; 3],
            lin_vel: [0.0; 3],
            ..dragged.clone()
        };
        assert_eq!(
            value(&standing, "feet_clearance"),
            0.0,
            "masked at zero command"
        );
    }

    #[test]
    fn feet_slip_is_the_squared_speed_of_feet_in_contact() {
        let a = [0.0f32; 16];
        let slipping = RewardInputs {
            contact: [true, false, true, true],
            foot_speed: [0.2, 1.0, 0.0, 0.0],
            ..perfect(&a)
        };
        // FR is in the air: its speed is a swing, not a slip.
        assert!((value(&slipping, "feet_slip") - 0.04).abs() < 1e-12);
        assert!(term(&slipping, &config(), "feet_slip") < 0.0);
        let standing = RewardInputs {
            command: [0.0; 3],
            ..slipping.clone()
        };
        assert!(
            (value(&standing, "feet_slip") - 0.04).abs() < 1e-12,
            "not masked"
        );
    }

    #[test]
    fn stand_still_costs_leaving_the_pose_only_at_zero_command() {
        let a = [0.0f32; 16];
        let mut q = LEG_DEFAULT;
        q[2] += 0.2;
        q[7] -= 0.1;
        let stand = RewardInputs {
            command: [0.0; 3],
            lin_vel: [0.0; 3],
            leg_joint_pos: &q,
            ..perfect(&a)
        };
        assert!((value(&stand, "stand_still") - 0.3).abs() < 1e-12);
        assert!(term(&stand, &config(), "stand_still") < 0.0);
        let home = RewardInputs {
            leg_joint_pos: perfect(&a).leg_joint_pos,
            ..stand.clone()
        };
        assert_eq!(value(&home, "stand_still"), 0.0);
        let walking = RewardInputs {
            command: [0.3, 0.0, 0.0],
            ..stand.clone()
        };
        assert_eq!(
            value(&walking, "stand_still"),
            0.0,
            "free when told to move"
        );
    }

    /// The clock wants diagonal pairs down together while moving, and all four down at a
    /// stand; the term pays the share of feet doing what it wants (a foot down but sliding
    /// earns little), and nothing without a clock.
    #[test]
    fn the_gait_clock_pays_feet_that_follow_its_trot_and_all_four_down_at_a_stand() {
        assert_eq!(clock_stance(0.1, true), [true, false, false, true]);
        assert_eq!(clock_stance(0.6, true), [false, true, true, false]);
        assert_eq!(clock_stance(0.6, false), [true; 4]);
        let a = [0.0f32; 16];
        let trot = RewardInputs {
            contact: [true, false, false, true],
            foot_speed: [0.0; 4],
            gait_phase: Some(0.1),
            ..perfect(&a)
        };
        assert_eq!(value(&trot, "gait_clock"), 1.0);
        let out_of_step = RewardInputs {
            gait_phase: Some(0.6),
            ..trot.clone()
        };
        assert_eq!(value(&out_of_step, "gait_clock"), 0.0);
        let stand = RewardInputs {
            command: [0.0; 3],
            contact: [true; 4],
            foot_speed: [0.0, 0.0, 0.0, 0.1],
            gait_phase: Some(0.6),
            ..trot.clone()
        };
        let v = value(&stand, "gait_clock");
        assert!((v - (3.0 + (-4.0f64).exp()) / 4.0).abs() < 1e-12, "{v}");
        let stepping_in_place = RewardInputs {
            contact: [true, false, false, true],
            ..stand.clone()
        };
        assert!(value(&stepping_in_place, "gait_clock") < 0.5);
        let no_clock = RewardInputs {
            gait_phase: None,
            ..trot
        };
        assert_eq!(value(&no_clock, "gait_clock"), 0.0);
    }

    #[test]
    fn stand_still_joint_vel_costs_leg_speed_only_at_zero_command() {
        let a = [0.0f32; 16];
        let mut qd = [0.0; 12];
        qd[1] = 2.0;
        qd[5] = -1.0;
        let stepping = RewardInputs {
            command: [0.0; 3],
            lin_vel: [0.0; 3],
            leg_joint_vel: &qd,
            ..perfect(&a)
        };
        assert_eq!(value(&stepping, "stand_still_joint_vel"), 5.0);
        let mut c = config();
        c.rewards.weights.stand_still_joint_vel = -0.02;
        assert!(term(&stepping, &c, "stand_still_joint_vel") < 0.0);
        let walking = RewardInputs {
            command: [0.3, 0.0, 0.0],
            ..stepping.clone()
        };
        assert_eq!(
            value(&walking, "stand_still_joint_vel"),
            0.0,
            "free when told to move"
        );
    }

    #[test]
    fn stand_still_feet_counts_lifted_feet_only_at_zero_command() {
        let a = [0.0f32; 16];
        let stepping = RewardInputs {
            command: [0.0; 3],
            lin_vel: [0.0; 3],
            contact: [true, false, false, true],
            ..perfect(&a)
        };
        assert_eq!(value(&stepping, "stand_still_feet"), 2.0);
        let mut c = config();
        c.rewards.weights.stand_still_feet = -0.5;
        assert!(term(&stepping, &c, "stand_still_feet") < 0.0);
        let planted = RewardInputs {
            contact: [true; 4],
            ..stepping.clone()
        };
        assert_eq!(value(&planted, "stand_still_feet"), 0.0);
        let walking = RewardInputs {
            command: [0.3, 0.0, 0.0],
            ..stepping.clone()
        };
        assert_eq!(
            value(&walking, "stand_still_feet"),
            0.0,
            "free when told to move"
        );
    }
}
