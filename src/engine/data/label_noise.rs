//! A synthetic classification set with label noise (GH00 §5's setting): rows
//! x ~ N(0, I_d), labels from a fixed linear rule through the origin,
//! `y = 1{<w*, x> > 0}`, each flipped with probability `flip`. Balanced in
//! expectation and through the origin, so no intercept is needed; the rows near
//! the rule and the flipped ones are where a posterior vote should be unsure.

use nalgebra::DMatrix;
use rand::RngExt;

use crate::engine::numerics::rng::{normal, stream};

/// The rule's weights: decreasing, so some features matter more than others.
pub fn true_weights(d: usize) -> Vec<f64> {
    (0..d).map(|k| 1.0 / (1.0 + k as f64)).collect()
}

/// `n` rows of `d` features and their noisy labels (true = positive).
pub fn generate(n: usize, d: usize, flip: f64, seed: u64) -> (DMatrix<f64>, Vec<bool>) {
    let mut r = stream(seed, &[0x006e_6f69_7379]);
    let w = true_weights(d);
    let x = DMatrix::from_fn(n, d, |_, _| normal(&mut r));
    let y = (0..n)
        .map(|i| {
            let clean = (0..d).map(|k| w[k] * x[(i, k)]).sum::<f64>() > 0.0;
            clean != (r.random::<f64>() < flip)
        })
        .collect();
    (x, y)
}
