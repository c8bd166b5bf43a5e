//! The stack of past observations a student reads: `[o_t, o_{t-1}, ..., o_{t-H}]`, newest
//! first, for a batch of environments (one on the robot). At the start of an episode every
//! frame is the first observation, so a student never sees the previous episode.

#[derive(Debug, Clone, PartialEq)]
pub struct History {
    frame_dim: usize,
    frames: usize,
    /// `[num_envs][frames][frame_dim]`, row-major: one env's stack is contiguous.
    buf: Vec<f32>,
}

impl History {
    /// `history` past frames besides the current one (0 = the observation alone).
    pub fn new(num_envs: usize, frame_dim: usize, history: usize) -> Self {
        Self {
            frame_dim,
            frames: history + 1,
            buf: vec![0.0; num_envs * (history + 1) * frame_dim],
        }
    }

    pub fn frame_dim(&self) -> usize {
        self.frame_dim
    }

    /// Length of one environment's stacked vector.
    pub fn stacked_dim(&self) -> usize {
        self.frames * self.frame_dim
    }

    pub fn num_envs(&self) -> usize {
        self.buf.len() / self.stacked_dim().max(1)
    }

    /// Adds the newest observations (`[num_envs][frame_dim]`). Environments whose `new_episode`
    /// flag is set forget their past and fill every frame with this observation.
    pub fn push(&mut self, obs: &[f32], new_episode: &[bool]) {
        let (d, s) = (self.frame_dim, self.stacked_dim());
        assert_eq!(obs.len(), self.num_envs() * d, "observation batch size");
        assert_eq!(new_episode.len(), self.num_envs(), "episode flags");
        for (e, row) in self.buf.chunks_exact_mut(s).enumerate() {
            let o = &obs[e * d..(e + 1) * d];
            if new_episode[e] {
                row.chunks_exact_mut(d).for_each(|f| f.copy_from_slice(o));
            } else {
                row.copy_within(0..s - d, d);
                row[..d].copy_from_slice(o);
            }
        }
    }

    /// The stacked observations, `[num_envs][stacked_dim]`.
    pub fn as_slice(&self) -> &[f32] {
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_frame_first_and_a_new_episode_forgets_the_past() {
        let mut h = History::new(2, 1, 2);
        h.push(&[1.0, 10.0], &[true, true]);
        assert_eq!(h.as_slice(), &[1.0, 1.0, 1.0, 10.0, 10.0, 10.0]);
        h.push(&[2.0, 20.0], &[false, false]);
        h.push(&[3.0, 30.0], &[false, true]);
        assert_eq!(h.as_slice(), &[3.0, 2.0, 1.0, 30.0, 30.0, 30.0]);
    }

    #[test]
    fn history_zero_is_the_observation_itself() {
        let mut h = History::new(1, 3, 0);
        h.push(&[1.0, 2.0, 3.0], &[true]);
        h.push(&[4.0, 5.0, 6.0], &[false]);
        assert_eq!(h.as_slice(), &[4.0, 5.0, 6.0]);
        assert_eq!(h.stacked_dim(), 3);
    }
}
