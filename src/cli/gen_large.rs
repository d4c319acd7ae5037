//! `pacauc gen-demo --rows N --features D --out FILE`: a large synthetic
//! table streamed to disk (`engine::data::synthetic`), written to a temporary
//! file beside the target and renamed at the end.

use std::io::{BufWriter, Write};
use std::time::Instant;

use super::gen_demo::GenDemoArgs;
use crate::engine::data::synthetic::SyntheticSpec;

pub fn run(args: &GenDemoArgs, rows: usize) -> Result<(), String> {
    let spec = SyntheticSpec {
        rows,
        features: args.features,
        positive_share: args.positive_share,
        seed: args.seed,
    };
    spec.validate()?;
    let path = &args.out;
    if path.is_dir() {
        return Err(format!(
            "{}: is a folder; with --rows, --out names the file to write (e.g. --out /tmp/large.csv, or /tmp/large.arrow for Arrow IPC)",
            path.display()
        ));
    }
    let t0 = Instant::now();
    let arrow = is_arrow_name(path);
    let tmp = path.with_extension(if arrow {
        "arrow.partial"
    } else {
        "csv.partial"
    });
    // `--out /dev/null` (or a pipe): written straight, never replaced.
    let special = crate::engine::record::is_special(path);
    let written = (|| -> std::io::Result<u64> {
        let f = if special {
            std::fs::OpenOptions::new().write(true).open(path)?
        } else {
            std::fs::File::create(&tmp)?
        };
        let mut w = Counted {
            inner: BufWriter::with_capacity(1 << 22, f),
            bytes: 0,
        };
        if arrow {
            spec.write_arrow(&mut w).map_err(std::io::Error::other)?;
        } else {
            spec.write(&mut w)?;
        }
        w.flush()?;
        let f = w.inner.into_inner().map_err(|e| e.into_error())?;
        if !special {
            f.sync_all()?;
            std::fs::rename(&tmp, path)?;
        }
        Ok(w.bytes)
    })();
    let bytes = written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })?;
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "wrote {} ({} rows × {} features, P(positive) = {}, seed {}; {:.0} MB in {:.1} s): \
         a probit linear model, y = 1{{xᵀθ + ε > q}}, θ_k = ±1/√k on the first {} features, 0 on the rest",
        path.display(),
        rows,
        spec.features,
        spec.positive_share,
        spec.seed,
        bytes as f64 / 1e6,
        secs,
        spec.features.div_ceil(2),
    );
    Ok(())
}

/// Whether `--out` names an Arrow IPC file (.arrow, .feather, .ipc): the
/// table is then written in that format.
fn is_arrow_name(path: &std::path::Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["arrow", "feather", "ipc"].contains(&e.to_ascii_lowercase().as_str()))
}

/// A writer that counts what passes through it (a device has no length).
struct Counted<W: Write> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
