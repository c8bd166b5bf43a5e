//! On-policy rollout storage, `[num_steps, num_envs, ...]` row-major, with GAE.

/// One rollout of `num_steps` steps of `num_envs` environments. Observations are stored
/// normalised (as the networks saw them when acting).
pub struct RolloutStorage {
    pub num_envs: usize,
    pub num_steps: usize,
    pub actor_dim: usize,
    pub critic_dim: usize,
    pub action_dim: usize,
    pub actor_obs: Vec<f32>,
    pub critic_obs: Vec<f32>,
    pub actions: Vec<f32>,
    pub rewards: Vec<f32>,
    /// 1.0 where the episode ended (terminated or truncated) at this step.
    pub dones: Vec<f32>,
    pub values: Vec<f32>,
    pub log_probs: Vec<f32>,
    pub means: Vec<f32>,
    pub log_stds: Vec<f32>,
    pub returns: Vec<f32>,
    pub advantages: Vec<f32>,
    /// Steps stored so far.
    pub step: usize,
}

impl RolloutStorage {
    pub fn new(
        num_envs: usize,
        num_steps: usize,
        actor_dim: usize,
        critic_dim: usize,
        action_dim: usize,
    ) -> Self {
        let n = num_envs * num_steps;
        Self {
            num_envs,
            num_steps,
            actor_dim,
            critic_dim,
            action_dim,
            actor_obs: vec![0.0; n * actor_dim],
            critic_obs: vec![0.0; n * critic_dim],
            actions: vec![0.0; n * action_dim],
            rewards: vec![0.0; n],
            dones: vec![0.0; n],
            values: vec![0.0; n],
            log_probs: vec![0.0; n],
            means: vec![0.0; n * action_dim],
            log_stds: vec![0.0; n * action_dim],
            returns: vec![0.0; n],
            advantages: vec![0.0; n],
            step: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.num_envs * self.num_steps
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clear(&mut self) {
        self.step = 0;
    }

    /// Generalised advantage estimation. `last_values` are the values of the observations after
    /// the last stored step. A done step does not bootstrap from the next one (time-outs were
    /// already bootstrapped into their reward when the step was stored).
    ///
    /// `delta_t = r_t + γ (1 − d_t) V_{t+1} − V_t`, `A_t = delta_t + γ λ (1 − d_t) A_{t+1}`,
    /// `R_t = A_t + V_t`.
    pub fn compute_returns(&mut self, last_values: &[f32], gamma: f64, lam: f64) {
        let n = self.num_envs;
        let (gamma, lam) = (gamma as f32, lam as f32);
        let mut adv = vec![0.0f32; n];
        for t in (0..self.num_steps).rev() {
            for e in 0..n {
                let i = t * n + e;
                let next_value = if t + 1 == self.num_steps {
                    last_values[e]
                } else {
                    self.values[i + n]
                };
                let not_done = 1.0 - self.dones[i];
                let delta = self.rewards[i] + not_done * gamma * next_value - self.values[i];
                adv[e] = delta + not_done * gamma * lam * adv[e];
                self.advantages[i] = adv[e];
                self.returns[i] = adv[e] + self.values[i];
            }
        }
    }

    /// Normalises the advantages of the whole rollout to mean 0, std 1.
    pub fn normalize_advantages(&mut self) {
        normalize(&mut self.advantages);
    }

    /// 1 − Var(returns − values) / Var(returns): how much of the return the critic explains.
    pub fn explained_variance(&self) -> f64 {
        let var = |x: &mut dyn Iterator<Item = f64>| {
            let v: Vec<f64> = x.collect();
            let m = v.iter().sum::<f64>() / v.len() as f64;
            v.iter().map(|a| (a - m).powi(2)).sum::<f64>() / v.len() as f64
        };
        let vr = var(&mut self.returns.iter().map(|&r| f64::from(r)));
        let vd = var(&mut self
            .returns
            .iter()
            .zip(&self.values)
            .map(|(&r, &v)| f64::from(r - v)));
        if vr <= 1e-12 { f64::NAN } else { 1.0 - vd / vr }
    }
}

/// In place: mean 0, std 1 (population std, +1e-8).
pub fn normalize(x: &mut [f32]) {
    if x.is_empty() {
        return;
    }
    let n = x.len() as f64;
    let mean = x.iter().map(|&a| f64::from(a)).sum::<f64>() / n;
    let var = x
        .iter()
        .map(|&a| (f64::from(a) - mean).powi(2))
        .sum::<f64>()
        / n;
    let inv = 1.0 / (var.sqrt() + 1e-8);
    for a in x {
        *a = ((f64::from(*a) - mean) * inv) as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gae_matches_hand_computation() {
        // One environment, three steps, γ = 0.5, λ = 0.5 (γλ = 0.25).
        // rewards 1, 2, 3; values 0.5, 1.0, 1.5; last value 2.0; step 1 is done.
        let mut s = RolloutStorage::new(1, 3, 1, 1, 1);
        s.rewards = vec![1.0, 2.0, 3.0];
        s.values = vec![0.5, 1.0, 1.5];
        s.dones = vec![0.0, 1.0, 0.0];
        s.compute_returns(&[2.0], 0.5, 0.5);
        // t=2: delta = 3 + 0.5*2.0 - 1.5 = 2.5;                 A2 = 2.5
        // t=1: done, delta = 2 - 1.0 = 1.0;                     A1 = 1.0 (no bootstrap from A2)
        // t=0: delta = 1 + 0.5*1.0 - 0.5 = 1.0;                 A0 = 1.0 + 0.25*1.0 = 1.25
        // returns = A + V: 1.75, 2.0, 4.0
        assert_eq!(s.advantages, vec![1.25, 1.0, 2.5]);
        assert_eq!(s.returns, vec![1.75, 2.0, 4.0]);
    }

    #[test]
    fn gae_keeps_environments_apart() {
        // Two environments, two steps, γ = 1, λ = 1: advantages are reward-to-go minus value.
        // Layout is [step][env]: env 0 rewards (1, 1), env 1 rewards (0, 5); values all 0.
        let mut s = RolloutStorage::new(2, 2, 1, 1, 1);
        s.rewards = vec![1.0, 0.0, 1.0, 5.0];
        s.compute_returns(&[10.0, 0.0], 1.0, 1.0);
        // env 0: A1 = 1 + 10 = 11, A0 = 1 + 11 = 12; env 1: A1 = 5, A0 = 0 + 5 = 5.
        assert_eq!(s.advantages, vec![12.0, 5.0, 11.0, 5.0]);
    }

    #[test]
    fn size_and_clear() {
        // [4 steps][3 environments] samples; `clear` starts the next rollout at step 0.
        let mut s = RolloutStorage::new(3, 4, 2, 5, 1);
        assert_eq!((s.len(), s.is_empty()), (12, false));
        assert!(RolloutStorage::new(0, 4, 1, 1, 1).is_empty());
        assert_eq!(
            (s.actor_obs.len(), s.critic_obs.len(), s.rewards.len()),
            (24, 60, 12)
        );
        s.step = 4;
        s.clear();
        assert_eq!(s.step, 0);
    }

    #[test]
    fn advantages_are_normalised_over_the_whole_rollout() {
        let mut s = RolloutStorage::new(2, 2, 1, 1, 1);
        s.advantages = vec![1.0, 3.0, 5.0, 7.0];
        s.normalize_advantages();
        // Mean 4, population std sqrt(5): (-3, -1, 1, 3) / sqrt(5).
        let want: Vec<f32> = [-3.0f32, -1.0, 1.0, 3.0]
            .iter()
            .map(|a| a / 5f32.sqrt())
            .collect();
        for (a, w) in s.advantages.iter().zip(&want) {
            assert!((a - w).abs() < 1e-6, "{:?}", s.advantages);
        }
    }

    #[test]
    fn explained_variance_of_a_partial_fit() {
        // returns 1, 2, 3, 4 (variance 1.25); residuals 0, 0, 0, -1 (mean -1/4, variance
        // 3/16): 1 - (3/16) / (5/4) = 0.85.
        let mut s = RolloutStorage::new(1, 4, 1, 1, 1);
        s.returns = vec![1.0, 2.0, 3.0, 4.0];
        s.values = vec![1.0, 2.0, 3.0, 5.0];
        assert!(
            (s.explained_variance() - 0.85).abs() < 1e-12,
            "{}",
            s.explained_variance()
        );
    }

    #[test]
    fn normalisation_and_explained_variance() {
        let mut x = vec![1.0, 2.0, 3.0, 4.0];
        normalize(&mut x);
        let mean: f32 = x.iter().sum::<f32>() / 4.0;
        let var: f32 = x.iter().map(|a| (a - mean).powi(2)).sum::<f32>() / 4.0;
        assert!(mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-5);
        let mut s = RolloutStorage::new(1, 4, 1, 1, 1);
        s.returns = vec![1.0, 2.0, 3.0, 4.0];
        s.values = s.returns.clone();
        assert!((s.explained_variance() - 1.0).abs() < 1e-12);
        s.values = vec![2.5; 4];
        assert!(s.explained_variance().abs() < 1e-12);
    }
}
