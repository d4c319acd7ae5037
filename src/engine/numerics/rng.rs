//! Seeded random streams. Every consumer derives its own stream from the run
//! seed and a few integer keys (stage, particle, fold, …), so results do not
//! depend on thread scheduling.

use rand::SeedableRng;
pub use rand_xoshiro::Xoshiro256PlusPlus as Rng;

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// An independent stream for (seed, keys…).
pub fn stream(seed: u64, keys: &[u64]) -> Rng {
    let mut h = splitmix64(seed);
    for &k in keys {
        h = splitmix64(h ^ splitmix64(k.wrapping_add(0x632B_E59B_D9B4_E019)));
    }
    Rng::seed_from_u64(h)
}

/// One standard normal draw.
pub fn normal(r: &mut Rng) -> f64 {
    use rand_distr::Distribution;
    rand_distr::StandardNormal.sample(r)
}
