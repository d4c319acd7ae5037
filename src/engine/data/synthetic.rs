//! Large synthetic tables for scale tests (`pacauc gen-demo --rows N`): a
//! probit linear model written as CSV (or Arrow IPC) in blocks, never held
//! in memory.
//!
//! Model: x ~ N(0, I_d); θ_k = ±1/√(k+1) on the first ⌈d/2⌉ features
//! (alternating signs), 0 on the rest; y = 1{xᵀθ + ε > q}, ε ~ N(0, 1),
//! with q = Φ⁻¹(1 − P)·√(‖θ‖² + 1) so that a row is positive with
//! probability P exactly (the share in the file is binomial around P).
//!
//! Determinism: block b of `BLOCK_ROWS` rows uses its own stream (seed, b),
//! blocks are formatted in parallel and written in order: the same bytes for
//! any thread count. Cells have 4 decimals, formatted from integers (the
//! `{:.4}` formatter ran at a third of the speed).

use std::io::Write;

use rayon::prelude::*;

use crate::engine::numerics::rng::{normal, stream};

/// Rows per independently seeded block.
pub const BLOCK_ROWS: usize = 8192;
const KEY: u64 = 0x7379_6e74;

#[derive(Debug, Clone, Copy)]
pub struct SyntheticSpec {
    pub rows: usize,
    pub features: usize,
    /// Probability that a row is positive, in (0, 1).
    pub positive_share: f64,
    pub seed: u64,
}

impl SyntheticSpec {
    /// The true coefficients of the linear score.
    pub fn theta(&self) -> Vec<f64> {
        let informative = self.features.div_ceil(2);
        (0..self.features)
            .map(|k| {
                if k < informative {
                    let s = if k % 2 == 0 { 1.0 } else { -1.0 };
                    s / ((k + 1) as f64).sqrt()
                } else {
                    0.0
                }
            })
            .collect()
    }

    /// The threshold of the latent score xᵀθ + ε.
    fn threshold(&self) -> f64 {
        let t2: f64 = self.theta().iter().map(|t| t * t).sum();
        let z = statrs::distribution::ContinuousCDF::inverse_cdf(
            &statrs::distribution::Normal::standard(),
            1.0 - self.positive_share,
        );
        z * (t2 + 1.0).sqrt()
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.rows < 2 {
            return Err(format!("--rows must be at least 2; got {}", self.rows));
        }
        if self.features < 1 {
            return Err("--features must be at least 1".into());
        }
        if !(self.positive_share > 0.0 && self.positive_share < 1.0) {
            return Err(format!(
                "--positive-share must lie strictly between 0 and 1; got {}",
                self.positive_share
            ));
        }
        Ok(())
    }

    /// The header line: x01 … xDD, y.
    pub fn header(&self) -> String {
        let width = self.features.to_string().len().max(2);
        let mut h: Vec<String> = (1..=self.features)
            .map(|k| format!("x{k:0width$}"))
            .collect();
        h.push("y".into());
        h.join(",") + "\n"
    }

    /// Block `b` (rows `b·BLOCK_ROWS ..`): its x row-major, each value the
    /// number its 4-decimal text reads back as, and its labels.
    pub fn block_values(&self, b: usize, theta: &[f64], q: f64) -> (Vec<f64>, Vec<bool>) {
        let r0 = b * BLOCK_ROWS;
        let rows = BLOCK_ROWS.min(self.rows - r0);
        let mut r = stream(self.seed, &[KEY, b as u64]);
        let mut x = Vec::with_capacity(rows * self.features);
        let mut y = Vec::with_capacity(rows);
        for _ in 0..rows {
            let mut latent = normal(&mut r);
            for t in theta {
                // Rounded to the 4 decimals written, so the label follows the file's x.
                let scaled = (normal(&mut r) * 1e4).round();
                latent += scaled * 1e-4 * t;
                // The correctly rounded decimal, what a reader parses (+ 0.0:
                // a rounded -0 is written "0.0000").
                x.push(scaled / 1e4 + 0.0);
            }
            y.push(latent > q);
        }
        (x, y)
    }

    /// The CSV text of block `b`.
    pub fn block(&self, b: usize, theta: &[f64], q: f64) -> Vec<u8> {
        let (x, y) = self.block_values(b, theta, q);
        let mut out = Vec::with_capacity(y.len() * (self.features * 8 + 2));
        for (row, label) in x.chunks(self.features.max(1)).zip(y) {
            for v in row {
                push_fixed4(&mut out, *v);
                out.push(b',');
            }
            out.extend_from_slice(if label { b"1\n" } else { b"0\n" });
        }
        out
    }

    /// Writes the whole table as an Arrow IPC file: float64 features and an
    /// int64 label, one record batch per group of blocks; the same values a
    /// reader parses from the CSV.
    pub fn write_arrow(&self, w: &mut dyn Write) -> Result<(), String> {
        use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
        use arrow_schema::{DataType, Field, Schema};
        use std::sync::Arc;
        let theta = self.theta();
        let q = self.threshold();
        let names: Vec<String> = self
            .header()
            .trim_end()
            .split(',')
            .map(String::from)
            .collect();
        let fields: Vec<Field> = names
            .iter()
            .enumerate()
            .map(|(k, n)| {
                let ty = if k < self.features {
                    DataType::Float64
                } else {
                    DataType::Int64
                };
                Field::new(n, ty, false)
            })
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let mut writer =
            arrow_ipc::writer::FileWriter::try_new(w, &schema).map_err(|e| e.to_string())?;
        let blocks = self.rows.div_ceil(BLOCK_ROWS);
        let batch = 4 * rayon::current_num_threads().max(1);
        let mut b0 = 0;
        while b0 < blocks {
            let b1 = (b0 + batch).min(blocks);
            let parts: Vec<(Vec<f64>, Vec<bool>)> = (b0..b1)
                .into_par_iter()
                .map(|b| self.block_values(b, &theta, q))
                .collect();
            let mut columns: Vec<ArrayRef> = (0..self.features)
                .map(|k| {
                    let col: Vec<f64> = parts
                        .iter()
                        .flat_map(|(x, _)| x.iter().skip(k).step_by(self.features).copied())
                        .collect();
                    Arc::new(Float64Array::from(col)) as ArrayRef
                })
                .collect();
            let y: Vec<i64> = parts
                .iter()
                .flat_map(|(_, y)| y.iter().map(|&l| i64::from(l)))
                .collect();
            columns.push(Arc::new(Int64Array::from(y)));
            let rb =
                RecordBatch::try_new(Arc::clone(&schema), columns).map_err(|e| e.to_string())?;
            writer.write(&rb).map_err(|e| e.to_string())?;
            b0 = b1;
        }
        writer.finish().map_err(|e| e.to_string())
    }

    /// Writes the whole table to `w`, `threads`-blocks at a time in parallel.
    pub fn write(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let theta = self.theta();
        let q = self.threshold();
        w.write_all(self.header().as_bytes())?;
        let blocks = self.rows.div_ceil(BLOCK_ROWS);
        let batch = 4 * rayon::current_num_threads().max(1);
        let mut b0 = 0;
        while b0 < blocks {
            let b1 = (b0 + batch).min(blocks);
            let texts: Vec<Vec<u8>> = (b0..b1)
                .into_par_iter()
                .map(|b| self.block(b, &theta, q))
                .collect();
            for t in texts {
                w.write_all(&t)?;
            }
            b0 = b1;
        }
        Ok(())
    }
}

/// `v` with exactly 4 decimals, as `format!("{v:.4}")` writes it for |v| < 10¹⁴.
fn push_fixed4(out: &mut Vec<u8>, v: f64) {
    let scaled = (v * 1e4).round() as i64;
    if scaled < 0 {
        out.push(b'-');
    }
    let a = scaled.unsigned_abs();
    let (int, frac) = (a / 10_000, a % 10_000);
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = int;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
    out.push(b'.');
    out.extend_from_slice(&[
        b'0' + (frac / 1000) as u8,
        b'0' + (frac / 100 % 10) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed4_matches_the_formatter() {
        for v in [
            0.0, -0.0, 1.0, -1.0, 0.00004, -0.00004, 0.00005, 1.23456, -2.71823, 123.4, -0.5,
            9.99996,
        ] {
            let v = (v * 1e4f64).round() * 1e-4;
            let mut out = Vec::new();
            push_fixed4(&mut out, v);
            let want = format!("{v:.4}");
            // The formatter writes "-0.0000" for −0; a rounded zero has no sign here.
            let want = if want == "-0.0000" {
                "0.0000".to_string()
            } else {
                want
            };
            assert_eq!(String::from_utf8(out).unwrap(), want, "{v}");
        }
    }

    #[test]
    fn the_same_bytes_for_any_thread_count_and_the_stated_share() {
        let s = SyntheticSpec {
            rows: 3 * BLOCK_ROWS + 17,
            features: 5,
            positive_share: 0.2,
            seed: 7,
        };
        let mut one = Vec::new();
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| s.write(&mut one).unwrap());
        let mut many = Vec::new();
        rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap()
            .install(|| s.write(&mut many).unwrap());
        assert_eq!(one, many);
        let text = String::from_utf8(one).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "x01,x02,x03,x04,x05,y");
        assert_eq!(lines.len(), s.rows + 1);
        let pos = lines[1..].iter().filter(|l| l.ends_with(",1")).count() as f64;
        // Binomial: sd √(nP(1−P)) ≈ 71 here; 5 sd.
        let n = s.rows as f64;
        assert!((pos - 0.2 * n).abs() < 5.0 * (n * 0.16).sqrt(), "{pos}");
    }
}
