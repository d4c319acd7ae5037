//! The bundled font and text measurement, and number formats for ticks.

use std::sync::OnceLock;

/// DejaVu Sans (Bitstream Vera licence: assets/DejaVuSans-LICENSE.txt), so the
/// binary draws text without any font on the host.
pub const FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
/// The family name the SVG asks for (the bundled font's).
pub const FAMILY: &str = "DejaVu Sans";

fn face() -> Option<&'static ttf_parser::Face<'static>> {
    static FACE: OnceLock<Option<ttf_parser::Face<'static>>> = OnceLock::new();
    FACE.get_or_init(|| ttf_parser::Face::parse(FONT, 0).ok())
        .as_ref()
}

/// Width in pixels of `text` at `size` px in the bundled font (advance widths,
/// no kerning: within a pixel or two at label sizes).
pub fn width(text: &str, size: f64) -> f64 {
    let Some(face) = face() else {
        return 0.6 * size * text.chars().count() as f64;
    };
    let em = f64::from(face.units_per_em());
    text.chars()
        .map(|c| {
            face.glyph_index(c)
                .and_then(|g| face.glyph_hor_advance(g))
                .map_or(0.6 * size, |a| f64::from(a) * size / em)
        })
        .sum()
}

/// `text` cut to at most `max` px wide, with an ellipsis when cut.
pub fn fit(text: &str, size: f64, max: f64) -> String {
    if width(text, size) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    for c in text.chars() {
        out.push(c);
        if width(&out, size) + width("…", size) > max {
            out.pop();
            break;
        }
    }
    out.push('…');
    out
}

/// A number as a tick label: `decimals` places, typographic minus; very large
/// or small magnitudes in e-notation.
pub fn number(v: f64, decimals: usize) -> String {
    let a = v.abs();
    let s = if v == 0.0 {
        "0".to_string()
    } else if !(1e-4..1e6).contains(&a) {
        let s = format!("{v:e}");
        // 1.5e-7 stays; 1e-7 rather than 1.0e-7.
        s.replace(".0e", "e")
    } else {
        format!("{v:.decimals$}")
    };
    s.replace('-', "−")
}

/// Decimal places that show every multiple of `step` exactly (at most 6).
pub fn decimals_for(step: f64) -> usize {
    (0..=6)
        .find(|&d| {
            let x = step * 10f64.powi(d as i32);
            (x - x.round()).abs() < 1e-6 * x.abs().max(1.0)
        })
        .unwrap_or(6)
}

/// XML-escapes text for the SVG.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
