//! Experience storage: the on-policy rollout buffer (PPO) and the replay buffer (SAC).
pub mod replay;
pub mod rollout;

pub use replay::ReplayBuffer;
pub use rollout::RolloutStorage;

/// Copies rows `idx` of a row-major `[_, dim]` array into `out`.
pub fn gather(src: &[f32], dim: usize, idx: &[usize], out: &mut Vec<f32>) {
    out.clear();
    out.reserve(idx.len() * dim);
    for &i in idx {
        out.extend_from_slice(&src[i * dim..(i + 1) * dim]);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn gather_copies_whole_rows_in_the_given_order() {
        let src: Vec<f32> = (0..9).map(|v| v as f32).collect();
        let mut out = vec![99.0];
        super::gather(&src, 3, &[2, 0, 2], &mut out);
        assert_eq!(out, [6.0, 7.0, 8.0, 0.0, 1.0, 2.0, 6.0, 7.0, 8.0]);
    }
}
