//! Seeded random streams.
//!
//! All randomness comes from one scenario seed, split into independent
//! streams by a fixed stream id (one per task, one per mechanism), so adding a
//! task never changes the numbers another task draws. PCG-64 (Lcg128Xsl64).

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

/// One random stream.
#[derive(Debug, Clone)]
pub struct Stream(Pcg64);

impl Stream {
    /// The stream `id` of the scenario seeded with `seed`.
    pub fn new(seed: u64, id: u64) -> Self {
        // splitmix64 of (seed, id) gives well-separated 128-bit seeds.
        let mut x = seed ^ 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(id.wrapping_add(1));
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let mut s = [0u8; 32];
        for chunk in s.chunks_mut(8) {
            chunk.copy_from_slice(&next().to_le_bytes());
        }
        Stream(Pcg64::from_seed(s))
    }

    /// A uniform integer in `0..n` (n > 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }

    /// A uniform float in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        self.0.random::<f64>()
    }
}

/// Stream ids of the mechanisms; task streams start at [`TASK_STREAM_BASE`].
pub mod streams {
    /// The workload generator.
    pub const WORKLOAD: u64 = 1;
    /// Benchmarks.
    pub const BENCH: u64 = 2;
    /// The memcg charge stock's choice of a slot to evict (refill_stock).
    pub const MEMCG_STOCK: u64 = 3;
    /// Page allocator randomization (mm/shuffle.c).
    pub const SHUFFLE: u64 = 4;
    /// Per-task streams are TASK_STREAM_BASE + task id.
    pub const TASK_STREAM_BASE: u64 = 1 << 20;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..5).map(|_| Stream::new(7, 1).below(1000)).collect();
        let mut s1 = Stream::new(7, 1);
        let mut s2 = Stream::new(7, 1);
        let mut s3 = Stream::new(7, 2);
        let x: Vec<u64> = (0..20).map(|_| s1.below(1 << 40)).collect();
        let y: Vec<u64> = (0..20).map(|_| s2.below(1 << 40)).collect();
        let z: Vec<u64> = (0..20).map(|_| s3.below(1 << 40)).collect();
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert!(a.iter().all(|&v| v < 1000));
    }
}
