//! A small seeded random number generator (SplitMix64).
//!
//! Written here rather than taken from a crate so that a seed means the
//! same schedule in every version of this program: `--replay 1:4` printed
//! today must replay the same faults after a dependency update.

/// SplitMix64: a 64-bit state stepped by a constant and mixed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`, one stream per `stream` (trial, client…):
    /// streams of one seed do not repeat each other.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut rng = Self(seed ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        // Mix once so that neighbouring seeds start far apart.
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            return low;
        }
        low + self.next_u64() % (high - low + 1)
    }

    /// An index below `len` (0 when `len` is 0).
    pub fn index(&mut self, len: usize) -> usize {
        if len == 0 {
            return 0;
        }
        usize::try_from(self.next_u64() % len as u64).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_numbers_every_time() {
        let a: Vec<u64> = (0..5).map(|_| Rng::new(7, 1).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut one = Rng::new(7, 1);
        let mut other = Rng::new(7, 2);
        assert_ne!(one.next_u64(), other.next_u64());
    }

    #[test]
    fn between_stays_in_bounds() {
        let mut rng = Rng::new(1, 0);
        for _ in 0..1000 {
            let n = rng.between(3, 9);
            assert!((3..=9).contains(&n));
        }
        assert_eq!(rng.between(5, 5), 5);
    }
}
