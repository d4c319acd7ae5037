//! The value types of a run specification that are more than a number: γ (one
//! type for every front end) and a hyper-parameter that may be tuned (`auto`).
//! Both read and write the words users type (`400`, `2n`, `auto`), and are
//! stored in JSON as a number where they are one (scripts read them as such).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The inverse temperature γ of the Gibbs posterior `π ∝ prior · exp(−γ R_n)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gamma {
    /// A number.
    Value(f64),
    /// A multiple of the number of training rows n (`2n`; RACL14 Thm 2.3 gives γ ∝ n).
    PerN(f64),
    /// Chosen by the method (cross-validation), where the registry allows it.
    Auto,
    /// The method's theory value (vb: ARC16's λ, converted to this program's γ).
    Theory,
}

impl Default for Gamma {
    fn default() -> Self {
        Gamma::PerN(1.0)
    }
}

impl Gamma {
    /// γ for `n` training rows; None for `Auto` and `Theory` (the engine chooses).
    pub fn resolve(self, n: usize) -> Option<f64> {
        match self {
            Gamma::Value(g) => Some(g),
            Gamma::PerN(k) => Some(k * n as f64),
            Gamma::Auto | Gamma::Theory => None,
        }
    }

    /// Reads `400`, `2n`, `n`, `0.5n`, `auto` or `theory`; the value must be finite and > 0
    /// (γ = 0 is the prior alone: the data would be ignored).
    pub fn parse(text: &str) -> Result<Gamma, String> {
        let s = text.trim();
        let bad = || format!("must be a number > 0 or a multiple of n like `2n`; got '{s}'");
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Gamma::Auto);
        }
        if s.eq_ignore_ascii_case("theory") {
            return Ok(Gamma::Theory);
        }
        let g = match s.strip_suffix('n') {
            Some("") => Gamma::PerN(1.0),
            Some(k) => Gamma::PerN(k.parse::<f64>().map_err(|_| bad())?),
            None => Gamma::Value(s.parse::<f64>().map_err(|_| bad())?),
        };
        match g {
            Gamma::Value(v) | Gamma::PerN(v) if !(v.is_finite() && v >= 0.0) => Err(bad()),
            Gamma::Value(v) | Gamma::PerN(v) if v == 0.0 => Err(format!(
                "must be > 0: γ = {s} is the prior alone, which ignores the data (its AUC is a \
                 random score's); give e.g. `n`, `0.25n` or `auto`"
            )),
            g => Ok(g),
        }
    }
}

impl fmt::Display for Gamma {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gamma::Value(v) => write!(f, "{v}"),
            Gamma::PerN(k) if *k == 1.0 => write!(f, "n"),
            Gamma::PerN(k) => write!(f, "{k}n"),
            Gamma::Auto => write!(f, "auto"),
            Gamma::Theory => write!(f, "theory"),
        }
    }
}

impl Serialize for Gamma {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Gamma::Value(v) => s.serialize_f64(*v),
            other => s.serialize_str(&other.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Gamma {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Gamma, D::Error> {
        match NumberOrWord::deserialize(d)? {
            NumberOrWord::Number(v) => Ok(Gamma::Value(v)),
            NumberOrWord::Word(w) => Gamma::parse(&w).map_err(serde::de::Error::custom),
        }
    }
}

/// A hyper-parameter given as a number or chosen by the method (`auto`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tunable {
    Value(f64),
    Auto,
}

impl Tunable {
    pub fn value(self) -> Option<f64> {
        match self {
            Tunable::Value(v) => Some(v),
            Tunable::Auto => None,
        }
    }

    pub fn is_auto(self) -> bool {
        self == Tunable::Auto
    }
}

impl fmt::Display for Tunable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tunable::Value(v) => write!(f, "{v}"),
            Tunable::Auto => write!(f, "auto"),
        }
    }
}

impl Serialize for Tunable {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Tunable::Value(v) => s.serialize_f64(*v),
            Tunable::Auto => s.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for Tunable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Tunable, D::Error> {
        match NumberOrWord::deserialize(d)? {
            NumberOrWord::Number(v) => Ok(Tunable::Value(v)),
            NumberOrWord::Word(w) if w.eq_ignore_ascii_case("auto") => Ok(Tunable::Auto),
            NumberOrWord::Word(w) => Err(serde::de::Error::custom(format!(
                "expected a number or `auto`; got '{w}'"
            ))),
        }
    }
}

/// How the GP prior is represented: `auto`, `exact`, `nystrom:D` (D landmark
/// rows) or `rff:D` (D random Fourier features); stored as that text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GpApproxSpec {
    /// Exact up to a size the engine states, a Nyström approximation above.
    #[default]
    Auto,
    Exact,
    Nystrom(usize),
    Rff(usize),
}

impl GpApproxSpec {
    /// The plain words and the sized names (`NAME:D`), as the registry lists them.
    pub const WORDS: &'static [&'static str] = &["auto", "exact"];
    pub const SIZED: &'static [&'static str] = &["nystrom", "rff"];

    pub fn parse(text: &str) -> Result<GpApproxSpec, String> {
        let t = text.trim().to_ascii_lowercase();
        let bad = || format!("must be auto, exact, nystrom:D or rff:D with D ≥ 1; got '{text}'");
        let size = |d: &str| d.parse::<usize>().ok().filter(|&d| d > 0).ok_or_else(bad);
        match t.split_once(':') {
            None if t == "auto" => Ok(GpApproxSpec::Auto),
            None if t == "exact" => Ok(GpApproxSpec::Exact),
            Some(("nystrom", d)) => Ok(GpApproxSpec::Nystrom(size(d)?)),
            Some(("rff", d)) => Ok(GpApproxSpec::Rff(size(d)?)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for GpApproxSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpApproxSpec::Auto => write!(f, "auto"),
            GpApproxSpec::Exact => write!(f, "exact"),
            GpApproxSpec::Nystrom(d) => write!(f, "nystrom:{d}"),
            GpApproxSpec::Rff(d) => write!(f, "rff:{d}"),
        }
    }
}

impl Serialize for GpApproxSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for GpApproxSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<GpApproxSpec, D::Error> {
        let w = String::deserialize(d)?;
        GpApproxSpec::parse(&w).map_err(serde::de::Error::custom)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NumberOrWord {
    Number(f64),
    Word(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_reads_what_users_type_and_writes_it_back() {
        for (text, g) in [
            ("400", Gamma::Value(400.0)),
            ("2n", Gamma::PerN(2.0)),
            ("n", Gamma::PerN(1.0)),
            ("0.5n", Gamma::PerN(0.5)),
            ("AUTO", Gamma::Auto),
            ("theory", Gamma::Theory),
            ("1e-3", Gamma::Value(1e-3)),
        ] {
            assert_eq!(Gamma::parse(text), Ok(g), "{text}");
            assert_eq!(Gamma::parse(&g.to_string()), Ok(g));
            let json = serde_json::to_value(g).unwrap();
            assert_eq!(serde_json::from_value::<Gamma>(json).unwrap(), g);
        }
        for zero in ["0", "0n", "0.0"] {
            assert!(
                Gamma::parse(zero).unwrap_err().contains("ignores the data"),
                "{zero}"
            );
        }
        for bad in ["-1", "xn", "", "inf", "-2n", "NaN"] {
            assert!(Gamma::parse(bad).unwrap_err().contains("must be"), "{bad}");
        }
        assert_eq!(serde_json::to_value(Gamma::Value(3.5)).unwrap(), 3.5);
        assert_eq!(serde_json::to_value(Gamma::PerN(2.0)).unwrap(), "2n");
        assert_eq!(Gamma::PerN(2.0).resolve(100), Some(200.0));
        assert_eq!(Gamma::Auto.resolve(100), None);
        assert_eq!(Gamma::Theory.resolve(100), None);
    }

    #[test]
    fn tunable_is_a_number_or_auto() {
        for t in [Tunable::Value(0.25), Tunable::Auto] {
            let json = serde_json::to_value(t).unwrap();
            assert_eq!(serde_json::from_value::<Tunable>(json).unwrap(), t);
        }
        assert!(serde_json::from_value::<Tunable>(serde_json::json!("often")).is_err());
    }

    #[test]
    fn gp_approximations_read_and_write_their_text() {
        for (text, a) in [
            ("auto", GpApproxSpec::Auto),
            ("EXACT", GpApproxSpec::Exact),
            ("nystrom:128", GpApproxSpec::Nystrom(128)),
            ("rff:512", GpApproxSpec::Rff(512)),
        ] {
            assert_eq!(GpApproxSpec::parse(text), Ok(a), "{text}");
            let json = serde_json::to_value(a).unwrap();
            assert_eq!(json, serde_json::json!(a.to_string()));
            assert_eq!(serde_json::from_value::<GpApproxSpec>(json).unwrap(), a);
        }
        for bad in ["rff:0", "nystrom", "rff:x", "svd:3", ""] {
            assert!(
                GpApproxSpec::parse(bad).unwrap_err().contains("must be"),
                "{bad}"
            );
        }
    }
}
