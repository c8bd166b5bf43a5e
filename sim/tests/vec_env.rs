//! VecEnv behaviour on the cheap cart-pole task.
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use clawrl_sim::cartpole::CartPole;
use clawrl_sim::{Env, SimError, VecEnv};

fn vec_env(n: usize, threads: usize, seed: u64) -> VecEnv<CartPole> {
    let model = CartPole::load_model().unwrap();
    VecEnv::new(
        (0..n)
            .map(|_| CartPole::with_model(model.clone()))
            .collect(),
        threads,
        seed,
    )
}

/// A fixed, state-dependent policy so trajectories depend on the physics.
fn run(env: &mut VecEnv<CartPole>, steps: usize) -> (Vec<f32>, usize) {
    let n = env.num_envs();
    env.reset();
    let mut trace = Vec::new();
    let mut episodes = 0;
    for t in 0..steps {
        let b = env.batch();
        let actions: Vec<f32> = (0..n)
            .map(|i| ((b.privileged[i * 5 + 2] * 7.0) + (t as f32 * 0.37).sin()).clamp(-1.0, 1.0))
            .collect();
        let b = env.step(&actions).unwrap();
        trace.extend_from_slice(&b.privileged);
        trace.extend_from_slice(&b.rewards);
        episodes += b.finished.iter().filter(|f| f.is_some()).count();
    }
    (trace, episodes)
}

#[test]
fn same_seed_same_numbers_whatever_the_thread_count() {
    let (one, episodes) = run(&mut vec_env(6, 1, 42), 300);
    let (two, _) = run(&mut vec_env(6, 2, 42), 300);
    let (three, _) = run(&mut vec_env(6, 3, 42), 300);
    assert!(
        episodes > 6,
        "episodes should end and auto-reset ({episodes})"
    );
    assert_eq!(one, two);
    assert_eq!(one, three);
    let (other_seed, _) = run(&mut vec_env(6, 2, 43), 300);
    assert_ne!(one, other_seed);
}

#[test]
fn done_rows_carry_the_final_observation() {
    let mut env = vec_env(2, 1, 1);
    env.reset();
    for _ in 0..500 {
        let b = env.step(&[1.0, -1.0]).unwrap();
        for i in 0..2 {
            if b.done(i) {
                // The final state is outside the limits; the new episode starts near the centre.
                let fin = &b.final_privileged[i * 5..i * 5 + 5];
                let new = &b.privileged[i * 5..i * 5 + 5];
                assert!(fin[2].abs() > 0.15 || fin[0].abs() > 2.3, "final {fin:?}");
                assert!(new[2].abs() < 0.06 && new[0].abs() < 0.06, "reset {new:?}");
                assert!(b.terminated[i]);
                // A history of past observations must restart here, and only here.
                assert!(b.new_episode[i] && !b.new_episode[1 - i] || b.done(1 - i));
                return;
            }
        }
    }
    panic!("pushing flat out never ended an episode");
}

#[test]
fn bad_actions_are_refused_before_any_env_moves() {
    let mut env = vec_env(2, 2, 0);
    let before = env.reset().onboard.clone();
    assert!(matches!(
        env.step(&[0.0]),
        Err(SimError::ActionLength {
            expected: 2,
            got: 1
        })
    ));
    assert!(matches!(
        env.step(&[0.0, f32::NAN]),
        Err(SimError::NonFiniteAction { index: 1, .. })
    ));
    assert!(matches!(
        env.step(&[f32::INFINITY, 0.0]),
        Err(SimError::NonFiniteAction { index: 0, .. })
    ));
    assert_eq!(
        env.batch().onboard,
        before,
        "a refused step must not move the physics"
    );

    let mut single = CartPole::new().unwrap();
    assert!(matches!(single.step(&[0.0]), Err(SimError::NotReset)));
    single.reset(3);
    assert!(single.step(&[0.5]).is_ok());
}

/// Cart-pole that notes which thread stepped it.
struct Probe {
    inner: CartPole,
    seen: Arc<Mutex<HashSet<ThreadId>>>,
}

impl Env for Probe {
    fn spec(&self) -> &clawrl_sim::EnvSpec {
        self.inner.spec()
    }
    fn reset_in_place(&mut self, seed: u64) {
        self.inner.reset_in_place(seed)
    }
    fn step_in_place(&mut self, action: &[f32]) -> Result<(f32, bool, bool), SimError> {
        self.seen
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        self.inner.step_in_place(action)
    }
    fn observe(&self, layout: clawrl_sim::ObsSource, out: &mut [f32]) {
        self.inner.observe(layout, out)
    }
    fn episode_log(&self) -> clawrl_sim::EpisodeLog {
        self.inner.episode_log()
    }
}

#[test]
fn the_same_threads_step_the_environments_every_step() {
    let model = CartPole::load_model().unwrap();
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let envs = (0..6)
        .map(|_| Probe {
            inner: CartPole::with_model(model.clone()),
            seen: seen.clone(),
        })
        .collect();
    let mut v = VecEnv::new(envs, 3, 7);
    v.reset();
    for _ in 0..100 {
        v.step(&[0.1; 6]).unwrap();
    }
    let seen = seen.lock().unwrap();
    // At most the calling thread and two workers: a pool that lives as long as the VecEnv, not
    // threads spawned per step (which would be 200 threads here). Fewer is fine: on a loaded
    // machine a worker may not be scheduled before the others have taken every chunk.
    assert!(seen.contains(&std::thread::current().id()));
    assert!(
        seen.len() <= 3,
        "{} threads stepped the environments",
        seen.len()
    );
}
