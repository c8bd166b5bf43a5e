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
