//! Ring replay buffer for off-policy learning; raw observations are stored and normalised when
//! sampled. Its contents are saved in checkpoints so a resumed SAC run continues exactly.
use std::collections::HashMap;

use anyhow::{Context, Result};
use candle_core::{Device, Tensor};
use rand::RngExt;

use clawrl_policy::Rng;

pub struct ReplayBuffer {
    pub capacity: usize,
    pub actor_dim: usize,
    pub critic_dim: usize,
    pub action_dim: usize,
    pub actor_obs: Vec<f32>,
    pub critic_obs: Vec<f32>,
    pub actions: Vec<f32>,
    pub rewards: Vec<f32>,
    pub next_actor_obs: Vec<f32>,
    pub next_critic_obs: Vec<f32>,
    /// 1.0 where the transition ended in a terminal state (no bootstrapping).
    pub terminals: Vec<f32>,
    /// Next write position and number of valid rows.
    pub pos: usize,
    pub len: usize,
}

/// One transition, borrowed.
pub struct Transition<'a> {
    pub actor_obs: &'a [f32],
    pub critic_obs: &'a [f32],
    pub action: &'a [f32],
    pub reward: f32,
    pub next_actor_obs: &'a [f32],
    pub next_critic_obs: &'a [f32],
    pub terminal: bool,
}

impl ReplayBuffer {
    pub fn new(capacity: usize, actor_dim: usize, critic_dim: usize, action_dim: usize) -> Self {
        Self {
            capacity,
            actor_dim,
            critic_dim,
            action_dim,
            actor_obs: vec![0.0; capacity * actor_dim],
            critic_obs: vec![0.0; capacity * critic_dim],
            actions: vec![0.0; capacity * action_dim],
            rewards: vec![0.0; capacity],
            next_actor_obs: vec![0.0; capacity * actor_dim],
            next_critic_obs: vec![0.0; capacity * critic_dim],
            terminals: vec![0.0; capacity],
            pos: 0,
            len: 0,
        }
    }

    pub fn push(&mut self, t: Transition<'_>) {
        let i = self.pos;
        let (a, c, u) = (self.actor_dim, self.critic_dim, self.action_dim);
        self.actor_obs[i * a..(i + 1) * a].copy_from_slice(t.actor_obs);
        self.critic_obs[i * c..(i + 1) * c].copy_from_slice(t.critic_obs);
        self.actions[i * u..(i + 1) * u].copy_from_slice(t.action);
        self.rewards[i] = t.reward;
        self.next_actor_obs[i * a..(i + 1) * a].copy_from_slice(t.next_actor_obs);
        self.next_critic_obs[i * c..(i + 1) * c].copy_from_slice(t.next_critic_obs);
        self.terminals[i] = if t.terminal { 1.0 } else { 0.0 };
        self.pos = (self.pos + 1) % self.capacity;
        self.len = (self.len + 1).min(self.capacity);
    }

    /// `n` row indices drawn uniformly (with replacement) from the valid rows.
    pub fn sample_indices(&self, n: usize, rng: &mut Rng) -> Vec<usize> {
        (0..n).map(|_| rng.random_range(0..self.len)).collect()
    }

    /// The valid rows as tensors (for checkpoints); rows are kept in storage order.
    pub fn to_tensors(&self, prefix: &str) -> Result<Vec<(String, Tensor)>> {
        let dev = &Device::Cpu;
        let n = self.len;
        let t = |name: &str, v: &[f32], d: usize| -> Result<(String, Tensor)> {
            Ok((
                format!("{prefix}.{name}"),
                Tensor::from_slice(&v[..n * d], (n, d), dev)?,
            ))
        };
        Ok(vec![
            t("actor_obs", &self.actor_obs, self.actor_dim)?,
            t("critic_obs", &self.critic_obs, self.critic_dim)?,
            t("actions", &self.actions, self.action_dim)?,
            t("rewards", &self.rewards, 1)?,
            t("next_actor_obs", &self.next_actor_obs, self.actor_dim)?,
            t("next_critic_obs", &self.next_critic_obs, self.critic_dim)?,
            t("terminals", &self.terminals, 1)?,
            (
                format!("{prefix}.pos"),
                Tensor::from_slice(&[self.pos as f64, self.len as f64], 2, dev)?,
            ),
        ])
    }

    pub fn load_tensors(&mut self, prefix: &str, t: &HashMap<String, Tensor>) -> Result<()> {
        let get = |k: &str| {
            t.get(&format!("{prefix}.{k}"))
                .with_context(|| format!("checkpoint lacks `{prefix}.{k}`"))
        };
        let pl = get("pos")?.to_vec1::<f64>()?;
        let (pos, len) = (pl[0] as usize, pl[1] as usize);
        anyhow::ensure!(
            len <= self.capacity,
            "replay buffer in the checkpoint is larger than the configured one"
        );
        let fill = |dst: &mut Vec<f32>, k: &str| -> Result<()> {
            let v = get(k)?.flatten_all()?.to_vec1::<f32>()?;
            dst[..v.len()].copy_from_slice(&v);
            Ok(())
        };
        fill(&mut self.actor_obs, "actor_obs")?;
        fill(&mut self.critic_obs, "critic_obs")?;
        fill(&mut self.actions, "actions")?;
        fill(&mut self.rewards, "rewards")?;
        fill(&mut self.next_actor_obs, "next_actor_obs")?;
        fill(&mut self.next_critic_obs, "next_critic_obs")?;
        fill(&mut self.terminals, "terminals")?;
        self.pos = pos;
        self.len = len;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn ring_overwrites_oldest_and_round_trips() {
        let mut b = ReplayBuffer::new(2, 1, 1, 1);
        for k in 0..3 {
            let x = [k as f32];
            b.push(Transition {
                actor_obs: &x,
                critic_obs: &x,
                action: &x,
                reward: k as f32,
                next_actor_obs: &x,
                next_critic_obs: &x,
                terminal: k == 2,
            });
        }
        // Capacity 2: the third write replaced row 0.
        assert_eq!((b.len, b.pos), (2, 1));
        assert_eq!(b.rewards, vec![2.0, 1.0]);
        assert_eq!(b.terminals, vec![1.0, 0.0]);
        let idx = b.sample_indices(50, &mut Rng::seed_from_u64(0));
        assert!(idx.iter().all(|&i| i < 2) && idx.contains(&0) && idx.contains(&1));
        let saved: HashMap<_, _> = b.to_tensors("rb").unwrap().into_iter().collect();
        let mut c = ReplayBuffer::new(2, 1, 1, 1);
        c.load_tensors("rb", &saved).unwrap();
        assert_eq!(
            (c.len, c.pos, c.rewards.clone(), c.actor_obs.clone()),
            (2, 1, b.rewards.clone(), b.actor_obs.clone())
        );
    }

    #[test]
    fn wide_rows_land_at_their_own_offsets() {
        // Actor rows of 2, critic rows of 3, actions of 2: row 1 of each starts at its width.
        let mut b = ReplayBuffer::new(3, 2, 3, 2);
        for k in 0..2 {
            let f = k as f32;
            b.push(Transition {
                actor_obs: &[f, f + 0.5],
                critic_obs: &[f, f + 0.25, f + 0.75],
                action: &[-f, -f - 0.5],
                reward: f,
                next_actor_obs: &[f + 10.0, f + 10.5],
                next_critic_obs: &[f + 10.0, f + 10.25, f + 10.75],
                terminal: false,
            });
        }
        assert_eq!(&b.actor_obs[..4], &[0.0, 0.5, 1.0, 1.5]);
        assert_eq!(&b.critic_obs[..6], &[0.0, 0.25, 0.75, 1.0, 1.25, 1.75]);
        assert_eq!(&b.actions[..4], &[0.0, -0.5, -1.0, -1.5]);
        assert_eq!(&b.next_actor_obs[..4], &[10.0, 10.5, 11.0, 11.5]);
        assert_eq!(
            &b.next_critic_obs[..6],
            &[10.0, 10.25, 10.75, 11.0, 11.25, 11.75]
        );
    }
}
