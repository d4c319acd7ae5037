//! The Gaussian approximation q = N(m, V) rebuilt from the pair sites with
//! matrix products (ALGORITHMS.md §4):
//! `Q = P + X_Pᵀ diag(K1) X_P + X_Nᵀ diag(Kᵀ1) X_N − X_Pᵀ K X_N − (X_Pᵀ K X_N)ᵀ`,
//! `r = b + X_Pᵀ (H1) − X_Nᵀ (Hᵀ1)`, where P = diag(prior precisions) and b a
//! prior linear term (0 for a centred Gaussian prior; spike-and-slab's prior
//! sites put their (u, v) here).

use nalgebra::{DMatrix, DVector};

use super::kernel::{Aggregates, Marginals};
use crate::engine::numerics::linalg::{at_built, column_blocks, rows_b_into};

/// Rows of `Z_N V` computed at a time for u_j (`marginals`).
const ZV_BLOCK: usize = 4096;

/// The Gaussian prior part of q: precisions `prec` (diagonal) and linear term `lin`.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorTerms {
    pub prec: Vec<f64>,
    pub lin: Vec<f64>,
}

impl PriorTerms {
    /// N(0, diag(vars)).
    pub fn centred(vars: &[f64]) -> PriorTerms {
        PriorTerms {
            prec: vars.iter().map(|v| 1.0 / v).collect(),
            lin: vec![0.0; vars.len()],
        }
    }
}

/// q's moments and what the evidence needs.
#[derive(Debug, Clone)]
pub struct Posterior {
    pub v: DMatrix<f64>,
    pub m: DVector<f64>,
    /// log |Q|.
    pub log_det_q: f64,
    /// rᵀ Q⁻¹ r.
    pub r_v_r: f64,
}

impl Posterior {
    pub fn sd(&self) -> Vec<f64> {
        (0..self.m.len()).map(|k| self.v[(k, k)].sqrt()).collect()
    }
}

/// Q and r from the aggregates; None when Q is not positive definite.
pub fn rebuild(
    zp: &DMatrix<f64>,
    zn: &DMatrix<f64>,
    agg: &Aggregates,
    prior: &PriorTerms,
) -> Option<Posterior> {
    solve(&sites_part(zp, zn, agg), prior)
}

/// The pair sites' part of Q and r: `(Σ K a aᵀ, Σ h a)`, in two passes over the
/// rows (`at_built`: blocks on the thread pool, the same bits whatever the
/// threads). The positives' pass gives `Z_Pᵀ [diag(K1) Z_P − 2 K Z_N | H1]`,
/// whose symmetric part is `Z_Pᵀ diag(K1) Z_P − X_Pᵀ K X_N − (X_Pᵀ K X_N)ᵀ`;
/// the negatives' pass `Z_Nᵀ [diag(Kᵀ1) Z_N | Hᵀ1]`.
pub fn sites_part(
    zp: &DMatrix<f64>,
    zn: &DMatrix<f64>,
    agg: &Aggregates,
) -> (DMatrix<f64>, DVector<f64>) {
    let p = zp.ncols();
    let (np, nn) = (zp.nrows(), zn.nrows());
    assert_eq!(agg.g.shape(), (np, p), "K Z_N is n+ × p");
    let (zps, zns, gs) = (zp.as_slice(), zn.as_slice(), agg.g.as_slice());
    let pos = at_built(zp, p + 1, |r0, m, s| {
        let (w, h) = (&agg.k_row[r0..r0 + m], &agg.h_row[r0..r0 + m]);
        for k in 0..p {
            let (z, g) = (&zps[k * np + r0..][..m], &gs[k * np + r0..][..m]);
            for (((o, z), g), w) in s[k * m..][..m].iter_mut().zip(z).zip(g).zip(w) {
                *o = z * w - 2.0 * g;
            }
        }
        s[p * m..][..m].copy_from_slice(h);
    });
    let neg = at_built(zn, p + 1, |r0, m, s| {
        let (w, h) = (&agg.k_col[r0..r0 + m], &agg.h_col[r0..r0 + m]);
        for k in 0..p {
            let z = &zns[k * nn + r0..][..m];
            for ((o, z), w) in s[k * m..][..m].iter_mut().zip(z).zip(w) {
                *o = z * w;
            }
        }
        s[p * m..][..m].copy_from_slice(h);
    });
    let mut q = DMatrix::from_fn(p, p, |a, b| pos[(a, b)] + neg[(a, b)]);
    // Exact symmetry: the positives' product is symmetric only once its cross
    // terms are mirrored, the negatives' up to rounding.
    for a in 0..p {
        for b in 0..a {
            let s = 0.5 * (q[(a, b)] + q[(b, a)]);
            q[(a, b)] = s;
            q[(b, a)] = s;
        }
    }
    let r = DVector::from_fn(p, |a, _| pos[(a, p)] - neg[(a, p)]);
    (q, r)
}

/// q from the sites' part of Q and r plus the prior terms; None when Q is not PD.
pub fn solve(sites: &(DMatrix<f64>, DVector<f64>), prior: &PriorTerms) -> Option<Posterior> {
    let mut q = sites.0.clone();
    for (a, p) in prior.prec.iter().enumerate() {
        q[(a, a)] += p;
    }
    let r = &sites.1 + DVector::from_column_slice(&prior.lin);
    if !q.iter().all(|v| v.is_finite()) || !r.iter().all(|v| v.is_finite()) {
        return None;
    }
    let chol = q.cholesky()?;
    let log_det_q = 2.0
        * chol
            .l_dirty()
            .diagonal()
            .iter()
            .map(|d| d.ln())
            .sum::<f64>();
    let m = chol.solve(&r);
    let v = chol.inverse();
    let r_v_r = r.dot(&m);
    if !log_det_q.is_finite() || !v.iter().all(|x| x.is_finite()) {
        return None;
    }
    Some(Posterior {
        v,
        m,
        log_det_q,
        r_v_r,
    })
}

/// Per-row marginal quantities of q for the next pass. Rows go by blocks of
/// `ZV_BLOCK` on the thread pool: each value is its own row's sum, in the
/// order of the serial products (`u` as `Σ_k z_k (zV)_k` from 0, `z·m` as
/// nalgebra's gemv: `z_0 m_0` then `+ z_k m_k`), so the same whatever the
/// threads; the vectors are written in place (no n-row allocation a sweep).
pub fn marginals(zp: &DMatrix<f64>, zn: &DMatrix<f64>, q: &Posterior, out: &mut Marginals) {
    use rayon::prelude::*;
    let p = zp.ncols();
    let m = q.m.as_slice();
    let np = zp.nrows();
    if out.zv_p.shape() != (np, p) {
        out.zv_p = DMatrix::zeros(np, p);
    }
    out.up.resize(np, 0.0);
    out.mp.resize(np, 0.0);
    // Z_P V by the same blocks (its rows kept for the pass): cols[b][k] is
    // block b's part of column k.
    let cols = column_blocks(&mut out.zv_p, ZV_BLOCK);
    let zps = zp.as_slice();
    out.up
        .par_chunks_mut(ZV_BLOCK)
        .zip(out.mp.par_chunks_mut(ZV_BLOCK))
        .zip(cols.into_par_iter())
        .enumerate()
        .for_each_init(Vec::new, |zv, (b, ((u, mp), cols))| {
            let (r0, rows) = (b * ZV_BLOCK, u.len());
            zv.resize(rows * p, 0.0);
            rows_b_into(zp, r0, rows, &q.v, zv);
            for (k, col) in cols.into_iter().enumerate() {
                col.copy_from_slice(&zv[k * rows..(k + 1) * rows]);
            }
            quad_rows((zps, np, r0), (zv, rows, 0), p, u);
            dot_rows((zps, np, r0), m, mp);
        });
    // u_j = z_j V z_jᵀ by blocks of rows (the same sums as the whole product's).
    let nn = zn.nrows();
    out.un.resize(nn, 0.0);
    out.mn.resize(nn, 0.0);
    let zns = zn.as_slice();
    out.un
        .par_chunks_mut(ZV_BLOCK)
        .zip(out.mn.par_chunks_mut(ZV_BLOCK))
        .enumerate()
        .for_each_init(Vec::new, |zv, (b, (u, mn))| {
            let (r0, rows) = (b * ZV_BLOCK, u.len());
            zv.resize(rows * p, 0.0);
            rows_b_into(zn, r0, rows, &q.v, zv);
            quad_rows((zns, nn, r0), (zv, rows, 0), p, u);
            dot_rows((zns, nn, r0), m, mn);
        });
}

/// Column-major rows `(data, rows of the matrix, first row)`.
type Rows<'a> = (&'a [f64], usize, usize);

/// `u_i = Σ_k a_ik b_ik` (k in order, from 0) for the rows of `u`.
fn quad_rows(a: Rows<'_>, b: Rows<'_>, p: usize, u: &mut [f64]) {
    let len = u.len();
    u.fill(0.0);
    for k in 0..p {
        let ak = &a.0[k * a.1 + a.2..][..len];
        let bk = &b.0[k * b.1 + b.2..][..len];
        for ((ui, x), y) in u.iter_mut().zip(ak).zip(bk) {
            *ui += x * y;
        }
    }
}

/// `out_i = z_i · m` as nalgebra's gemv sums it: `z_i0 m_0`, then `z_ik m_k +`.
fn dot_rows(z: Rows<'_>, m: &[f64], out: &mut [f64]) {
    let len = out.len();
    if m.is_empty() {
        out.fill(0.0);
        return;
    }
    for (k, &mk) in m.iter().enumerate() {
        let zk = &z.0[k * z.1 + z.2..][..len];
        if k == 0 {
            for (o, x) in out.iter_mut().zip(zk) {
                *o = x * mk;
            }
        } else {
            for (o, x) in out.iter_mut().zip(zk) {
                *o += x * mk;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::numerics::linalg::{PAR_BLOCK, at_b};

    /// The two-pass sites' part against the formula's products taken one by
    /// one, on rows spanning several blocks; the same bits on 1 and 3 threads.
    #[test]
    fn sites_part_matches_the_formula_and_ignores_threads() {
        let (np, nn, p) = (PAR_BLOCK + 777, 2 * PAR_BLOCK + 5, 4);
        let zp = DMatrix::from_fn(np, p, |i, j| ((i * 13 + j * 5) as f64 * 0.31).sin());
        let zn = DMatrix::from_fn(nn, p, |i, j| ((i * 7 + j * 11) as f64 * 0.17).cos());
        // A sparse K: each positive paired with three negatives.
        let mut k = vec![Vec::new(); np];
        for (i, ki) in k.iter_mut().enumerate() {
            for t in 0..3 {
                ki.push((
                    (i * 3 + t) * 7919 % nn,
                    0.1 + ((i + t) as f64 * 0.7).sin().abs(),
                ));
            }
        }
        let mut g = DMatrix::zeros(np, p);
        let (mut k_row, mut k_col) = (vec![0.0; np], vec![0.0; nn]);
        for (i, ki) in k.iter().enumerate() {
            for &(j, v) in ki {
                k_row[i] += v;
                k_col[j] += v;
                for a in 0..p {
                    g[(i, a)] += v * zn[(j, a)];
                }
            }
        }
        let h_row: Vec<f64> = (0..np).map(|i| (i as f64 * 0.01).sin()).collect();
        let h_col: Vec<f64> = (0..nn).map(|j| (j as f64 * 0.02).cos()).collect();
        let scale = |z: &DMatrix<f64>, w: &[f64]| {
            DMatrix::from_fn(z.nrows(), z.ncols(), |i, a| z[(i, a)] * w[i])
        };
        let cross = at_b(&zp, &g);
        let want_q = at_b(&zp, &scale(&zp, &k_row)) + at_b(&zn, &scale(&zn, &k_col))
            - &cross
            - cross.transpose();
        let want_r = zp.tr_mul(&DVector::from_column_slice(&h_row))
            - zn.tr_mul(&DVector::from_column_slice(&h_col));
        let agg = Aggregates {
            k_row,
            k_col,
            h_row,
            h_col,
            g,
        };
        let on = |t: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap();
            pool.install(|| sites_part(&zp, &zn, &agg))
        };
        let (q, r) = on(1);
        assert!(
            (&q - &want_q).amax() < 1e-12 * want_q.amax(),
            "{q} vs {want_q}"
        );
        assert!((&r - &want_r).amax() < 1e-12 * want_r.amax());
        assert_eq!(q, q.transpose());
        assert_eq!((q.clone(), r.clone()), on(3));
    }
}
