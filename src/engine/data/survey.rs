//! Synthetic survey exports (`pacauc gen-demo --survey ROWSxCOLS`): ordinal
//! codes 0–9 with skewed, tie-heavy columns and a rare positive class — the
//! shape on which the samplers were once surprised (a real 4,366 × 85 file:
//! many mostly-zero columns, 6% positives). Not tuned to that file: the shape
//! (rows, columns, positive share) is a parameter and every column draws its
//! own kind, level distribution and loading from the seed.
//!
//! Each column is a latent Gaussian `z = a·f + √(1 − |a|²)·e` (f: a few shared
//! factors, so columns correlate as survey items do) turned into codes by the
//! column's own level distribution, assigned by rank (the lowest p₀·n latent
//! values get 0, and so on): exact shares, no quantile function. Kinds:
//! mostly zero (p₀ 0.6–0.97, a geometric tail up to 9), skewed 0–9 (a peaked
//! distribution around a random mode), binary, and 0–4 counts. The label is the
//! top `positives` share of a sparse linear score of the standardised codes
//! plus the factors and logistic noise (AUC of the true score ≈ 0.8).
//!
//! **Hard posteriors** (`rare_effects` K > 0): the last K columns are rare
//! codes (98.5–99.8% zeros) each moving the label's score by N(0, 3²) per
//! code unit, so a handful of rows holding a code are nearly decided by it.
//! Each such column makes the AUC risk a soft step in its coefficient (the
//! rows' pairs flip together), and the posterior a prior cut by many steps at
//! once: skewed, half-normal-like marginals that no Gaussian fits, which is
//! what drives SMC's acceptance down to its 0.30 target and the moves per
//! stage up (docs/BENCHMARKS.md). The other columns and the label's other
//! terms are drawn exactly as with K = 0 (the same bytes in them).

use rand::RngExt;

use super::demo::DemoTable;
use crate::engine::numerics::rng::{self, Rng};

/// The table's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SurveyShape {
    pub rows: usize,
    pub cols: usize,
    /// Share of positive rows, in (0, 1).
    pub positives: f64,
    /// Rare, strongly predictive code columns among `cols` (see the module doc).
    pub rare_effects: usize,
}

impl SurveyShape {
    /// Parses `ROWSxCOLS` (e.g. `4400x85`).
    pub fn parse(s: &str, positives: f64) -> Result<SurveyShape, String> {
        let bad = || format!("`--survey {s}`: expected ROWSxCOLS, e.g. 4400x85");
        let (r, c) = s.split_once(['x', 'X']).ok_or_else(bad)?;
        let rows: usize = r.trim().parse().map_err(|_| bad())?;
        let cols: usize = c.trim().parse().map_err(|_| bad())?;
        let shape = SurveyShape {
            rows,
            cols,
            positives,
            rare_effects: 0,
        };
        shape.validate()?;
        Ok(shape)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.cols == 0 || self.rows < 10 {
            return Err(format!(
                "a survey table needs ≥ 10 rows and ≥ 1 column; got {}x{}",
                self.rows, self.cols
            ));
        }
        if !(self.positives > 0.0 && self.positives < 1.0) {
            return Err(format!(
                "the positive share must be in (0, 1); got {}",
                self.positives
            ));
        }
        if self.rare_effects > self.cols {
            return Err(format!(
                "--rare-effects {} exceeds the {} columns",
                self.rare_effects, self.cols
            ));
        }
        let n_pos = self.n_pos();
        if n_pos < 2 || n_pos + 2 > self.rows {
            return Err(format!(
                "{} rows at a positive share of {} leave {n_pos} positives: need ≥ 2 of each class",
                self.rows, self.positives
            ));
        }
        Ok(())
    }

    fn n_pos(&self) -> usize {
        (self.positives * self.rows as f64).round() as usize
    }
}

/// Shared latent factors behind the columns.
const FACTORS: usize = 5;

/// What a column looks like.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    MostlyZero,
    Skewed,
    Binary,
    Count,
    /// A rare code with a strong effect (`rare_effects`).
    Rare,
}

impl Kind {
    fn draw(r: &mut Rng) -> Kind {
        match r.random_range(0..100) {
            0..45 => Kind::MostlyZero,
            45..75 => Kind::Skewed,
            75..90 => Kind::Binary,
            _ => Kind::Count,
        }
    }

    /// The column's level probabilities (levels 0, 1, …).
    fn levels(self, r: &mut Rng) -> Vec<f64> {
        let geometric = |p0: f64, ratio: f64, top: usize| {
            let tail: Vec<f64> = (1..=top).map(|l| ratio.powi(l as i32 - 1)).collect();
            let s: f64 = tail.iter().sum();
            std::iter::once(p0)
                .chain(tail.iter().map(|t| (1.0 - p0) * t / s))
                .collect::<Vec<f64>>()
        };
        match self {
            Kind::MostlyZero => geometric(r.random_range(0.6..0.97), r.random_range(0.35..0.8), 9),
            Kind::Count => geometric(r.random_range(0.3..0.7), r.random_range(0.3..0.7), 4),
            Kind::Binary => {
                let p1 = r.random_range(0.05..0.5);
                vec![1.0 - p1, p1]
            }
            Kind::Rare => unreachable!("rare columns are drawn apart"),
            Kind::Skewed => {
                let mode = r.random_range(0..10) as f64;
                let decay = r.random_range(0.2..1.0);
                let w: Vec<f64> = (0..10)
                    .map(|l| (-decay * (l as f64 - mode).abs()).exp())
                    .collect();
                let s: f64 = w.iter().sum();
                w.iter().map(|x| x / s).collect()
            }
        }
    }
}

/// Codes of one column: the latent values' ranks cut by the level shares.
fn codes_by_rank(latent: &[f64], levels: &[f64]) -> Vec<u8> {
    let n = latent.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| latent[a].total_cmp(&latent[b]));
    let mut out = vec![0u8; n];
    let mut cum = 0.0;
    let mut start = 0;
    for (l, p) in levels.iter().enumerate() {
        cum += p;
        let end = if l + 1 == levels.len() {
            n
        } else {
            ((cum * n as f64).round() as usize).clamp(start, n)
        };
        for &i in &order[start..end] {
            out[i] = l as u8;
        }
        start = end;
    }
    out
}

/// The table for `shape` and `seed` (deterministic).
pub fn survey_codes(seed: u64, shape: SurveyShape) -> Result<DemoTable, String> {
    shape.validate()?;
    let SurveyShape {
        rows: n,
        cols: total,
        rare_effects: rare,
        ..
    } = shape;
    let d = total - rare;
    let mut r = rng::stream(seed, &[4]);
    let factors: Vec<[f64; FACTORS]> = (0..n)
        .map(|_| std::array::from_fn(|_| rng::normal(&mut r)))
        .collect();
    let mut kinds = Vec::with_capacity(d);
    let mut cols: Vec<Vec<u8>> = Vec::with_capacity(d);
    for _ in 0..d {
        let kind = Kind::draw(&mut r);
        let levels = kind.levels(&mut r);
        // One main factor per column, loading 0.3–0.8 (items of one scale).
        let f = r.random_range(0..FACTORS);
        let a: f64 = r.random_range(0.3..0.8);
        let latent: Vec<f64> = factors
            .iter()
            .map(|fr| a * fr[f] + (1.0 - a * a).sqrt() * rng::normal(&mut r))
            .collect();
        kinds.push(kind);
        cols.push(codes_by_rank(&latent, &levels));
    }
    // The label: a sparse score on ~15% of the standardised codes (at least
    // one), the first factor, and logistic noise.
    let mut score: Vec<f64> = factors.iter().map(|f| 0.5 * f[0]).collect();
    let informative = (d as f64 * 0.15).ceil() as usize;
    for j in 0..informative {
        let k = r.random_range(0..d);
        let w = rng::normal(&mut r) * if j == 0 { 2.0 } else { 1.0 };
        let col = &cols[k];
        let mean = col.iter().map(|&c| c as f64).sum::<f64>() / n as f64;
        let var = col.iter().map(|&c| (c as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        if var > 0.0 {
            let sd = var.sqrt();
            for (s, &c) in score.iter_mut().zip(col) {
                *s += w * (c as f64 - mean) / sd;
            }
        }
    }
    // The rare columns draw from their own stream (the rest stays as at K = 0).
    let mut rr = rng::stream(seed, &[5]);
    for _ in 0..rare {
        let f = rr.random_range(0..FACTORS);
        let a: f64 = rr.random_range(0.3..0.8);
        let latent: Vec<f64> = factors
            .iter()
            .map(|fr| a * fr[f] + (1.0 - a * a).sqrt() * rng::normal(&mut rr))
            .collect();
        let p0 = rr.random_range(0.985..0.998);
        let ratio: f64 = rr.random_range(0.35..0.8);
        let tail: Vec<f64> = (1..=9).map(|l| ratio.powi(l - 1)).collect();
        let t: f64 = tail.iter().sum();
        let levels: Vec<f64> = std::iter::once(p0)
            .chain(tail.iter().map(|x| (1.0 - p0) * x / t))
            .collect();
        let col = codes_by_rank(&latent, &levels);
        let w = 3.0 * rng::normal(&mut rr);
        for (s, &c) in score.iter_mut().zip(&col) {
            *s += w * c as f64;
        }
        kinds.push(Kind::Rare);
        cols.push(col);
    }
    for s in score.iter_mut() {
        let u: f64 = r.random_range(1e-12..1.0);
        *s += 1.2 * (u / (1.0 - u)).ln();
    }
    let n_pos = shape.n_pos();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| score[b].total_cmp(&score[a]));
    let mut y = vec![false; n];
    for &i in &order[..n_pos] {
        y[i] = true;
    }
    let d = total;
    let mut header: Vec<String> = (1..=d).map(|k| format!("q{k:03}")).collect();
    header.push("y".into());
    let rows = (0..n)
        .map(|i| {
            cols.iter()
                .map(|c| c[i].to_string())
                .chain(std::iter::once(u8::from(y[i]).to_string()))
                .collect()
        })
        .collect();
    let count = |k: Kind| kinds.iter().filter(|&&x| x == k).count();
    Ok(DemoTable {
        file_name: "survey.csv",
        description: format!(
            "{n} rows, {d} ordinal survey codes (seed {seed}): {} mostly-zero columns (codes 0–9, \
             60–97% zeros), {} skewed 0–9, {} binary, {} counts 0–4, driven by {FACTORS} shared \
             factors; label y = the top {n_pos} rows ({:.1}%) of a sparse score of ~15% of the \
             columns plus a factor and logistic noise{}.",
            count(Kind::MostlyZero),
            count(Kind::Skewed),
            count(Kind::Binary),
            count(Kind::Count),
            100.0 * n_pos as f64 / n as f64,
            if rare > 0 {
                format!(
                    "; the last {rare} columns are rare codes (98.5–99.8% zeros) with strong \
                     effects on the label (a hard posterior for samplers)"
                )
            } else {
                String::new()
            }
        ),
        header,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(rows: usize, cols: usize, positives: f64) -> SurveyShape {
        SurveyShape {
            rows,
            cols,
            positives,
            rare_effects: 0,
        }
    }

    /// Rare-effect columns: the asked number of rare columns at the end,
    /// the other columns the same bytes as without them, seeded; too many
    /// refused.
    #[test]
    fn rare_effects_add_rare_decisive_columns() {
        let plain = survey_codes(3, shape(3000, 30, 0.06)).unwrap();
        let hard = survey_codes(
            3,
            SurveyShape {
                rare_effects: 10,
                ..shape(3000, 40, 0.06)
            },
        )
        .unwrap();
        assert_eq!(hard.header.len(), 41);
        for (a, b) in plain.rows.iter().zip(&hard.rows) {
            assert_eq!(a[..30], b[..30]);
        }
        for k in 30..40 {
            let nonzero = hard.rows.iter().filter(|r| r[k] != "0").count();
            assert!((3..=50).contains(&nonzero), "column {k}: {nonzero} nonzero");
        }
        let again = survey_codes(
            3,
            SurveyShape {
                rare_effects: 10,
                ..shape(3000, 40, 0.06)
            },
        )
        .unwrap();
        assert_eq!(hard.to_csv(), again.to_csv());
        let too_many = SurveyShape {
            rare_effects: 41,
            ..shape(3000, 40, 0.06)
        };
        assert!(too_many.validate().unwrap_err().contains("rare-effects"));
    }

    /// The shape asked for, integer codes 0–9, mostly-zero columns, many tied
    /// rows' codes, the positive share, and the same bytes for the same seed.
    #[test]
    fn tables_have_the_asked_shape_and_are_seeded() {
        let t = survey_codes(7, shape(2000, 40, 0.06)).unwrap();
        assert_eq!(t.header.len(), 41);
        assert_eq!(t.rows.len(), 2000);
        let pos = t.rows.iter().filter(|r| r[40] == "1").count();
        assert_eq!(pos, 120);
        let mut mostly_zero = 0;
        for k in 0..40 {
            let codes: Vec<u8> = t.rows.iter().map(|r| r[k].parse().unwrap()).collect();
            assert!(codes.iter().all(|&c| c <= 9));
            let zeros = codes.iter().filter(|&&c| c == 0).count();
            mostly_zero += usize::from(zeros as f64 > 0.6 * 2000.0);
        }
        assert!(mostly_zero >= 10, "{mostly_zero} mostly-zero columns of 40");
        assert_eq!(
            t.to_csv(),
            survey_codes(7, shape(2000, 40, 0.06)).unwrap().to_csv()
        );
        assert_ne!(
            t.to_csv(),
            survey_codes(8, shape(2000, 40, 0.06)).unwrap().to_csv()
        );
    }

    /// d ≥ n works, and bad shapes are refused with the reason.
    #[test]
    fn wide_tables_and_bad_shapes() {
        let t = survey_codes(1, shape(40, 120, 0.3)).unwrap();
        assert_eq!((t.rows.len(), t.header.len()), (40, 121));
        assert!(SurveyShape::parse("4400x85", 0.06).is_ok());
        assert!(
            SurveyShape::parse("4400", 0.06)
                .unwrap_err()
                .contains("ROWSxCOLS")
        );
        assert!(
            SurveyShape::parse("20x5", 0.01)
                .unwrap_err()
                .contains("positives")
        );
        assert!(
            SurveyShape::parse("20x5", 1.5)
                .unwrap_err()
                .contains("(0, 1)")
        );
    }

    #[test]
    fn codes_follow_the_level_shares_by_rank() {
        let latent: Vec<f64> = (0..10).map(|i| (9 - i) as f64).collect();
        let c = codes_by_rank(&latent, &[0.5, 0.3, 0.2]);
        assert_eq!(c, vec![2, 2, 1, 1, 1, 0, 0, 0, 0, 0]);
    }
}
