//! Figures (`figures/`) drawn to files with no system libraries: the SVG is
//! written here as text, and the PNG is that same SVG rasterised by resvg with
//! the bundled DejaVu Sans, so the two formats cannot disagree.

mod scale;
mod svg;
pub mod text;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::engine::record::write_atomic;
use crate::figures::{Figure, REFERENCE};

/// Okabe & Ito's colour-blind-safe palette, ordered for white paper (yellow last).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442",
];
/// Guides and de-emphasised series.
pub const GREY: &str = "#9a9a9a";
/// PNG pixels per SVG unit (crisp on high-density screens and in papers).
pub const PNG_SCALE: f32 = 2.0;

pub fn color(slot: usize) -> &'static str {
    if slot == REFERENCE {
        GREY
    } else {
        PALETTE[slot % PALETTE.len()]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Svg => "svg",
            Format::Png => "png",
        }
    }
}

/// The figure as SVG text, and its size in SVG units.
pub fn to_svg(fig: &Figure) -> (Size, String) {
    svg::render(fig)
}

fn fonts() -> Arc<resvg::usvg::fontdb::Database> {
    static DB: OnceLock<Arc<resvg::usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = resvg::usvg::fontdb::Database::new();
        db.load_font_data(text::FONT.to_vec());
        Arc::new(db)
    })
    .clone()
}

/// The figure as PNG bytes, `PNG_SCALE` times its SVG size.
pub fn to_png(fig: &Figure) -> Result<Vec<u8>, String> {
    let (size, svg) = to_svg(fig);
    let opts = resvg::usvg::Options {
        font_family: text::FAMILY.to_string(),
        fontdb: fonts(),
        ..Default::default()
    };
    let tree = resvg::usvg::Tree::from_str(&svg, &opts)
        .map_err(|e| format!("figure '{}': the drawing is not valid SVG: {e}", fig.id))?;
    let (w, h) = (
        (size.width as f32 * PNG_SCALE).round() as u32,
        (size.height as f32 * PNG_SCALE).round() as u32,
    );
    let mut pixmap = resvg::tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| format!("figure '{}': no pixmap of {w} × {h}", fig.id))?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(PNG_SCALE, PNG_SCALE),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| format!("figure '{}': PNG encoding failed: {e}", fig.id))
}

/// Writes the figure as `DIR/ID.svg` and/or `DIR/ID.png` (each atomically) and
/// returns the paths written.
pub fn write(fig: &Figure, dir: &Path, formats: &[Format]) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::new();
    for &f in formats {
        let path = dir.join(format!("{}.{}", fig.id, f.extension()));
        let bytes = match f {
            Format::Svg => to_svg(fig).1.into_bytes(),
            Format::Png => to_png(fig)?,
        };
        write_atomic(&path, &bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests;
