//! Numerics shared by the methods: SIMD lanes and the detected instruction
//! set, vectorisable Φ, GEMM on strided views and packed rows, small dense
//! linear algebra, the exact O(n log n) AUC risk kernels, a Gaussian
//! score's expected AUC risk over pairs (all, or sampled), and seeded random
//! streams. Nothing here imports anything else of the engine (the
//! architecture test checks it), so every method (smc, ep, vb, gcs, baseline)
//! can use it without importing another method.

pub mod cpu_time;
pub mod fast_risk;
#[cfg(test)]
mod fast_risk_tests;
pub mod gemm;
pub mod huge_pages;
pub mod isa;
pub mod linalg;
pub mod normal;
pub mod packed_gemm;
pub mod pair_risk;
pub mod pair_sample;
pub mod rng;
pub mod simd;
pub mod sparse_rows;
