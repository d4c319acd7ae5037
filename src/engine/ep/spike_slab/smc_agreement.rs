//! Spike-and-slab EP against spike-and-slab SMC (the gold standard) on sparse
//! problems with 4 informative features of 20 (issue 5). Multi-minute SMC
//! runs: ignored tests, run with
//! `cargo test --release --lib -- --ignored agrees_with_smc --nocapture`.

use nalgebra::DMatrix;
use rand::RngExt;

use super::model::{SpikeSlab, SpikeSlabEp};
use super::sweep::SsSettings;
use super::tests::{INFORMATIVE, sparse_demo};
use crate::engine::ep::store::Precision;
use crate::engine::fit::Fit;
use crate::engine::interface::{Control, Engine};
use crate::engine::numerics::rng::{normal, stream};
use crate::engine::prior::Prior;
use crate::engine::smc::{Smc, SmcSettings};

/// γ = 1.5n, p = 0.2, v0 = 1e-4, v1 = 1 (as `tests::sparse_settings`).
const PRIOR: SpikeSlab = SpikeSlab {
    spike_var: 1e-4,
    slab_var: 1.0,
    incl: 0.2,
};

/// EP (with or without releasing the fix) against SMC pooled over its seeds.
#[derive(Debug)]
struct Agreement {
    /// Largest |EP mean − SMC mean| / SMC sd, and its feature.
    worst: f64,
    worst_k: usize,
    /// The same over the features SMC selects (inclusion > 0.9).
    worst_selected: f64,
    /// EP sd / SMC sd: smallest and largest.
    sd_ratio: (f64, f64),
    /// Largest |Δ inclusion|.
    incl: f64,
    log_z_ep: f64,
}

/// SMC's seeds pooled as an equal mixture: means, sds, inclusion, mean log Z.
struct Pooled {
    mean: Vec<f64>,
    sd: Vec<f64>,
    incl: Vec<f64>,
    log_z: f64,
}

fn pool(fits: &[Fit]) -> Pooled {
    let (n, d) = (fits.len() as f64, fits[0].mean.len());
    let mean: Vec<f64> = (0..d)
        .map(|k| fits.iter().map(|f| f.mean[k]).sum::<f64>() / n)
        .collect();
    let sd = (0..d)
        .map(|k| {
            let m2 = fits
                .iter()
                .map(|f| f.sd[k].powi(2) + f.mean[k].powi(2))
                .sum::<f64>()
                / n;
            (m2 - mean[k].powi(2)).sqrt()
        })
        .collect();
    let incl = (0..d)
        .map(|k| {
            fits.iter()
                .map(|f| f.inclusion.as_ref().unwrap()[k])
                .sum::<f64>()
                / n
        })
        .collect();
    let log_z = fits.iter().map(|f| f.log_evidence.unwrap()).sum::<f64>() / n;
    Pooled {
        mean,
        sd,
        incl,
        log_z,
    }
}

/// The seeds' spread: largest |Δmean| in sd, |Δ inclusion|, |Δ log Z| over pairs.
fn spread(fits: &[Fit]) -> (f64, f64, f64) {
    let mut s = (0.0f64, 0.0f64, 0.0f64);
    for a in fits {
        for b in fits {
            for k in 0..a.mean.len() {
                s.0 = s.0.max((a.mean[k] - b.mean[k]).abs() / a.sd[k]);
                let (pa, pb) = (
                    a.inclusion.as_ref().unwrap()[k],
                    b.inclusion.as_ref().unwrap()[k],
                );
                s.1 = s.1.max((pa - pb).abs());
            }
            s.2 =
                s.2.max((a.log_evidence.unwrap() - b.log_evidence.unwrap()).abs());
        }
    }
    s
}

fn ep(
    x: &DMatrix<f64>,
    y: &[bool],
    gamma: f64,
    release: bool,
) -> (Vec<f64>, Vec<f64>, Vec<f64>, f64) {
    let mut m = SpikeSlabEp::new(x, y, PRIOR, Precision::F64).unwrap();
    m.set_release_fixes(release);
    let s = SsSettings::default();
    let out = m.run(gamma, &s, &Control::new(), &mut |_, _| {}).unwrap();
    (
        m.mean(),
        m.sd(),
        out.inclusion,
        out.evidence.log_z().unwrap(),
    )
}

fn compare(names: &[String], ep: &(Vec<f64>, Vec<f64>, Vec<f64>, f64), smc: &Pooled) -> Agreement {
    let (mean, sd, incl, log_z) = ep;
    let mut a = Agreement {
        worst: 0.0,
        worst_k: 0,
        worst_selected: 0.0,
        sd_ratio: (f64::INFINITY, 0.0),
        incl: 0.0,
        log_z_ep: *log_z,
    };
    for k in 0..mean.len() {
        let z = (mean[k] - smc.mean[k]).abs() / smc.sd[k];
        let r = sd[k] / smc.sd[k];
        eprintln!(
            "  {}: EP {:8.4} sd {:.4} incl {:.3} | SMC {:8.4} sd {:.4} incl {:.3} | Δ/sd {z:.3}, sd ratio {r:.2}",
            names[k], mean[k], sd[k], incl[k], smc.mean[k], smc.sd[k], smc.incl[k]
        );
        if z > a.worst {
            (a.worst, a.worst_k) = (z, k);
        }
        if smc.incl[k] > 0.9 {
            a.worst_selected = a.worst_selected.max(z);
        }
        a.sd_ratio = (a.sd_ratio.0.min(r), a.sd_ratio.1.max(r));
        a.incl = a.incl.max((incl[k] - smc.incl[k]).abs());
    }
    eprintln!("  {a:?}; SMC log Z {:.3}", smc.log_z);
    a
}

/// Three SMC seeds (N = 10 000, adaptive moves) on one problem.
fn smc_fits(names: Vec<String>, x: DMatrix<f64>, y: Vec<bool>, gamma: f64) -> Vec<Fit> {
    let prior = Prior::SpikeSlab {
        spike_var: PRIOR.spike_var,
        slab_var: PRIOR.slab_var,
        incl: PRIOR.incl,
    };
    let pb = crate::engine::Problem::new(names, x, y, gamma, prior).unwrap();
    (1..=3)
        .map(|seed| {
            let smc = Smc {
                settings: SmcSettings {
                    seed,
                    ..SmcSettings::default()
                },
            };
            smc.run(&pb, &Control::new(), &mut |_| {}).unwrap()
        })
        .collect()
}

/// Both EP variants against pooled SMC; asserts the seeds agree (means within
/// 0.1 sd, inclusion within 0.05, log Z within 0.2), the same clear selection
/// (SMC's features with inclusion > 0.9 have EP inclusion > 0.9, every other
/// feature < 0.3 in both) and log Z within 0.6 (§4). Returns the comparison
/// with the fix released and kept, and SMC's selection.
fn run_comparison(
    names: Vec<String>,
    x: DMatrix<f64>,
    y: Vec<bool>,
    gamma: f64,
) -> (Agreement, Agreement, Vec<usize>) {
    let released = ep(&x, &y, gamma, true);
    let fixed = ep(&x, &y, gamma, false);
    let fits = smc_fits(names.clone(), x, y, gamma);
    let sp = spread(&fits);
    eprintln!(
        "SMC seed spread: mean {:.3} sd, inclusion {:.3}, log Z {:.3}",
        sp.0, sp.1, sp.2
    );
    assert!(sp.0 < 0.1 && sp.1 < 0.05 && sp.2 < 0.2, "{sp:?}");
    let smc = pool(&fits);
    eprintln!("EP, fix released:");
    let r = compare(&names, &released, &smc);
    eprintln!("EP, fix kept (§5 as written):");
    let f = compare(&names, &fixed, &smc);
    let selected: Vec<usize> = (0..names.len()).filter(|&k| smc.incl[k] > 0.9).collect();
    for (k, name) in names.iter().enumerate() {
        let sel = selected.contains(&k);
        for p in [smc.incl[k], released.2[k]] {
            assert_eq!(p > 0.9, sel, "{name}: {p}");
            assert_eq!(p < 0.3, !sel, "{name}: {p}");
        }
    }
    assert!((r.log_z_ep - smc.log_z).abs() < 0.6);
    (r, f, selected)
}

/// The sparse demo (600 rows, AR(1) correlation 0.3 between neighbouring
/// features, 15% positives, label noise), γ = 900. Measured (pooled SMC, seed
/// spread 0.042 sd / 0.012 inclusion / 0.07 log Z; a 4th run with N = 30 000
/// is within 0.015 sd of the pool):
/// - fix released: worst 0.148 sd (x13, a neighbour of x12 with inclusion
///   0.17 vs 0.21), informative features ≤ 0.058, sd ratios 0.66–0.81,
///   log Z −148.70 vs −148.31;
/// - fix kept: worst 0.198 sd (x18), informative 0.14–0.20, sd ratios
///   0.58–0.72, log Z −148.72.
///
/// Gaussian prior (var 1) on the same data and γ, for scale: EP vs SMC
/// (3 seeds) 0.045 sd worst, sd ratios 0.82–0.99: the pair sites are not
/// where the spike-and-slab gap came from. Both tests together: ~6.5 min.
///
/// The 0.15 is met on the informative features with a wide margin
/// and overall only just (x13: EP's factorised inclusion for a feature
/// correlated with an informative one, §5's known weakness).
#[test]
#[ignore]
fn sparse_demo_agrees_with_smc() {
    let (x, y, names) = sparse_demo();
    let (r, f, selected) = run_comparison(names, x, y, 900.0);
    assert_eq!(selected, INFORMATIVE);
    assert!(r.worst < 0.16, "{r:?}");
    assert!(r.worst_selected < 0.1, "{r:?}");
    assert!(r.sd_ratio.0 > 0.6 && r.sd_ratio.1 < 1.05, "{r:?}");
    assert!(f.worst > r.worst);
}

/// The demo's generator without the correlation between features: 600 rows,
/// 20 independent N(0, 1) features, latent `2x03 − 1.5x07 + x12 + 0.75x18` +
/// logistic noise, the top 90 rows positive, 12 + 12 labels swapped (seeded).
fn independent_sparse(seed: u64) -> (DMatrix<f64>, Vec<bool>, Vec<String>) {
    let (n, d, n_pos) = (600usize, 20usize, 90usize);
    let mut r = stream(seed, &[5]);
    let mut x = DMatrix::from_fn(n, d, |_, _| normal(&mut r));
    for mut col in x.column_iter_mut() {
        let m = col.mean();
        col.add_scalar_mut(-m);
        let sd = (col.norm_squared() / n as f64).sqrt();
        col /= sd;
    }
    let weights = [(2, 2.0), (6, -1.5), (11, 1.0), (17, 0.75)];
    let latent: Vec<f64> = (0..n)
        .map(|i| {
            let u: f64 = r.random_range(1e-12..1.0);
            weights.iter().map(|&(k, w)| w * x[(i, k)]).sum::<f64>() + (u / (1.0 - u)).ln()
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| latent[b].total_cmp(&latent[a]));
    let mut y = vec![false; n];
    for &i in &order[..n_pos] {
        y[i] = true;
    }
    // 12 + 12 swaps: the first 12 positives and negatives in a random order.
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        perm.swap(i, r.random_range(0..=i));
    }
    let pos: Vec<usize> = perm.iter().copied().filter(|&i| y[i]).take(12).collect();
    let neg: Vec<usize> = perm.iter().copied().filter(|&i| !y[i]).take(12).collect();
    for (&p, &q) in pos.iter().zip(&neg) {
        y[p] = false;
        y[q] = true;
    }
    let names = (1..=d).map(|k| format!("x{k:02}")).collect();
    (x, y, names)
}

/// The same problem with independent features (`independent_sparse`, seed 1),
/// γ = 900. In this sample x09 is informative by chance: SMC selects x03, x07,
/// x09, x12, x18 (inclusion ≥ 0.988), and EP the same. Measured (pooled SMC,
/// seed spread 0.032 sd / 0.009 inclusion / 0.10 log Z):
/// - fix released: worst 0.119 sd (x14, inclusion 0.18 vs 0.22), selected
///   features ≤ 0.037, sd ratios 0.70–0.94, log Z −170.96 vs −170.69;
/// - fix kept: worst 0.468 sd (x03), selected features 0.42–0.47 (every slab
///   mean 15–20% small), sd ratios 0.58–0.76, log Z −171.09.
#[test]
#[ignore]
fn independent_sparse_agrees_with_smc() {
    let (x, y, names) = independent_sparse(1);
    let (r, f, _) = run_comparison(names, x, y, 900.0);
    assert!(r.worst < 0.15 && r.worst_selected < 0.1, "{r:?}");
    assert!(r.sd_ratio.0 > 0.65 && r.sd_ratio.1 < 1.05, "{r:?}");
    assert!(f.worst > 0.3, "{f:?}");
}
