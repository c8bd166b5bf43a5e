//! Seeded randomness. Every random draw in the simulation comes from a per-environment ChaCha
//! stream, so an episode depends only on its seed (never on threads or wall time).
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub type SimRng = ChaCha8Rng;

pub fn rng(seed: u64) -> SimRng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// A well-mixed seed for stream `index` of a run seeded with `seed` (splitmix64), so
/// environments 0..N of one run and of neighbouring seeds do not share streams.
pub fn derive_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uniform draw in `[lo, hi]` (returns `lo` when the interval is empty).
pub fn uniform(rng: &mut SimRng, [lo, hi]: [f64; 2]) -> f64 {
    use rand::RngExt;
    if hi > lo {
        rng.random_range(lo..=hi)
    } else {
        lo
    }
}
