//! N environments stepped across threads.
//!
//! Each environment owns its MuJoCo data (and, for tasks with domain randomisation, its copy of
//! the model); the threads split the environments into fixed contiguous chunks. The calling
//! thread steps the first chunk itself and a persistent pool of `threads - 1` workers (rayon's,
//! kept for the life of the `VecEnv`) the others: a control step is about 0.5 ms of physics per
//! environment, so spawning and joining threads every step cost a visible share of it.
//!
//! Every random draw comes from the environment's own seeded stream and the episode seeds are
//! derived from (run seed, environment index, episode number), so a run gives the same numbers
//! whatever the thread count.
use crate::env::{EpisodeLog, check_action};
use crate::rng::derive_seed;
use crate::{Env, EnvSpec, ObsSource, SimError};

/// The result of a reset or a step of all environments, as row-major `[num_envs, dim]` arrays.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub onboard: Vec<f32>,
    pub privileged: Vec<f32>,
    pub rewards: Vec<f32>,
    pub terminated: Vec<bool>,
    pub truncated: Vec<bool>,
    /// Privileged observation of the state an episode ended in, before the automatic reset
    /// (row i is meaningful where `terminated[i] || truncated[i]`). Time-out bootstrapping needs it.
    pub final_privileged: Vec<f32>,
    /// The same for the onboard layout.
    pub final_onboard: Vec<f32>,
    /// Reward-term log of each episode that ended in this step.
    pub finished: Vec<Option<EpisodeLog>>,
    /// Whether the current observation is the first of an episode (after a reset, or after an
    /// episode ended in this step): where a history of past observations starts afresh.
    pub new_episode: Vec<bool>,
}

impl Batch {
    fn new(n: usize, spec: &EnvSpec) -> Self {
        Self {
            onboard: vec![0.0; n * spec.onboard_dim],
            privileged: vec![0.0; n * spec.privileged_dim],
            rewards: vec![0.0; n],
            terminated: vec![false; n],
            truncated: vec![false; n],
            final_privileged: vec![0.0; n * spec.privileged_dim],
            final_onboard: vec![0.0; n * spec.onboard_dim],
            finished: vec![None; n],
            new_episode: vec![true; n],
        }
    }

    pub fn done(&self, i: usize) -> bool {
        self.terminated[i] || self.truncated[i]
    }

    pub fn obs(&self, layout: ObsSource) -> &[f32] {
        match layout {
            ObsSource::Onboard => &self.onboard,
            ObsSource::Privileged => &self.privileged,
        }
    }
}

/// One environment with its slot in the batch.
struct Slot<E> {
    env: E,
    /// Seed stream of this environment and the number of episodes it has started.
    stream: u64,
    episodes: u64,
}

impl<E: Env> Slot<E> {
    fn reset(&mut self) {
        let seed = derive_seed(self.stream, self.episodes);
        self.episodes += 1;
        self.env.reset_in_place(seed);
    }
}

/// One row of every batch array, handed to the thread that owns the environment.
struct Row<'a> {
    onboard: &'a mut [f32],
    privileged: &'a mut [f32],
    final_onboard: &'a mut [f32],
    final_privileged: &'a mut [f32],
    reward: &'a mut f32,
    terminated: &'a mut bool,
    truncated: &'a mut bool,
    finished: &'a mut Option<EpisodeLog>,
}

pub struct VecEnv<E: Env> {
    slots: Vec<Slot<E>>,
    spec: EnvSpec,
    threads: usize,
    /// The workers for every chunk but the first (`None` with one thread).
    pool: Option<rayon::ThreadPool>,
    batch: Batch,
}

/// A pool of `workers` threads named for what they do.
fn worker_pool(workers: usize) -> Option<rayon::ThreadPool> {
    if workers == 0 {
        return None;
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .thread_name(|i| format!("vec-env-{}", i + 1))
        .build()
        // Only fails when the OS refuses threads; the calling thread then steps every chunk.
        .ok()
}

impl<E: Env> VecEnv<E> {
    /// Wraps `envs` (all of the same task). `threads` is clamped to `1..=envs.len()`.
    pub fn new(envs: Vec<E>, threads: usize, seed: u64) -> Self {
        assert!(!envs.is_empty(), "VecEnv needs at least one environment");
        let spec = envs[0].spec().clone();
        let n = envs.len();
        let slots = envs
            .into_iter()
            .enumerate()
            .map(|(i, env)| Slot {
                env,
                stream: derive_seed(seed, i as u64),
                episodes: 0,
            })
            .collect();
        let batch = Batch::new(n, &spec);
        let threads = threads.clamp(1, n);
        Self {
            slots,
            spec,
            threads,
            pool: worker_pool(threads - 1),
            batch,
        }
    }

    pub fn num_envs(&self) -> usize {
        self.slots.len()
    }

    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    pub fn batch(&self) -> &Batch {
        &self.batch
    }

    /// The environments, for inspection (evaluation, plots).
    pub fn envs(&self) -> impl Iterator<Item = &E> {
        self.slots.iter().map(|s| &s.env)
    }

    /// Starts a new episode in every environment.
    pub fn reset(&mut self) -> &Batch {
        self.for_each_row(|slot, _, row| {
            slot.reset();
            slot.env.observe(ObsSource::Onboard, row.onboard);
            slot.env.observe(ObsSource::Privileged, row.privileged);
            *row.reward = 0.0;
            *row.terminated = false;
            *row.truncated = false;
            *row.finished = None;
        });
        self.batch.new_episode.fill(true);
        &self.batch
    }

    /// Steps every environment with its row of `actions` (`[num_envs, action_dim]`); an
    /// environment whose episode ends is reset at once and reports its final observation.
    /// All actions are checked before any environment moves.
    pub fn step(&mut self, actions: &[f32]) -> Result<&Batch, SimError> {
        let dim = self.spec.action_dim;
        check_action(actions, dim * self.num_envs()).map_err(|e| match e {
            SimError::ActionLength { got, .. } => SimError::ActionLength {
                expected: dim * self.num_envs(),
                got,
            },
            other => other,
        })?;
        self.for_each_row(|slot, i, row| {
            let action = &actions[i * dim..(i + 1) * dim];
            // Checked above: length and finiteness are the only step errors after a reset.
            let (reward, terminated, truncated) =
                slot.env.step_in_place(action).expect("action was checked");
            *row.reward = reward;
            *row.terminated = terminated;
            *row.truncated = truncated;
            *row.finished = None;
            if terminated || truncated {
                slot.env.observe(ObsSource::Onboard, row.final_onboard);
                slot.env
                    .observe(ObsSource::Privileged, row.final_privileged);
                *row.finished = Some(slot.env.episode_log());
                slot.reset();
            }
            slot.env.observe(ObsSource::Onboard, row.onboard);
            slot.env.observe(ObsSource::Privileged, row.privileged);
        });
        let b = &mut self.batch;
        for (i, fresh) in b.new_episode.iter_mut().enumerate() {
            *fresh = b.terminated[i] || b.truncated[i];
        }
        Ok(&self.batch)
    }

    /// Runs `f(slot, env index, row)` for every environment, `threads` contiguous chunks at once.
    fn for_each_row<F>(&mut self, f: F)
    where
        F: Fn(&mut Slot<E>, usize, Row<'_>) + Sync,
    {
        let spec = &self.spec;
        let b = &mut self.batch;
        let rows = b
            .onboard
            .chunks_mut(spec.onboard_dim)
            .zip(b.privileged.chunks_mut(spec.privileged_dim))
            .zip(b.final_onboard.chunks_mut(spec.onboard_dim))
            .zip(b.final_privileged.chunks_mut(spec.privileged_dim))
            .zip(b.rewards.iter_mut())
            .zip(b.terminated.iter_mut())
            .zip(b.truncated.iter_mut())
            .zip(b.finished.iter_mut())
            .map(
                |(
                    (
                        (
                            ((((onboard, privileged), final_onboard), final_privileged), reward),
                            terminated,
                        ),
                        truncated,
                    ),
                    finished,
                )| Row {
                    onboard,
                    privileged,
                    final_onboard,
                    final_privileged,
                    reward,
                    terminated,
                    truncated,
                    finished,
                },
            );
        let mut work: Vec<(usize, &mut Slot<E>, Row<'_>)> = self
            .slots
            .iter_mut()
            .zip(rows)
            .enumerate()
            .map(|(i, (s, r))| (i, s, r))
            .collect();
        let Some(pool) = self.pool.as_ref() else {
            for (i, slot, row) in work {
                f(slot, i, row);
            }
            return;
        };
        let chunk = work.len().div_ceil(self.threads);
        let f = &f;
        let rest = work.split_off(chunk.min(work.len()));
        let first = std::mem::replace(&mut work, rest);
        // The first chunk runs on the calling thread, which would otherwise only wait.
        pool.in_place_scope(|scope| {
            while !work.is_empty() {
                let rest = work.split_off(chunk.min(work.len()));
                let mine = std::mem::replace(&mut work, rest);
                scope.spawn(move |_| {
                    for (i, slot, row) in mine {
                        f(slot, i, row);
                    }
                });
            }
            for (i, slot, row) in first {
                f(slot, i, row);
            }
        });
    }
}
