//! Cells as numbers: a decimal parser that returns exactly what
//! `str::parse::<f64>` returns (the same bits, the same refusals), fast on the
//! plain decimals CSV files are made of; decimal commas; missing-value tokens.
//!
//! Why not only `str::parse`: at 10⁷ rows × 20 columns the loader parses
//! 2·10⁸ cells, and std's general parser (sign, special values, exponent,
//! Eisel–Lemire) is the largest single cost of a load. A plain decimal
//! `[+-]digits[.digits]` (optionally `e±digits`) with at most 19 digits is an
//! integer w < 10¹⁹ times 10^e; when w ≤ 2⁵³ and |e| ≤ 22 both w and 10^|e|
//! are exact doubles, so one IEEE multiplication or division gives the
//! correctly rounded value (Clinger's fast path) — the value std's correctly
//! rounded parser returns. Anything else goes to `str::parse`.

/// 10^0 … 10^22: every one an exact double.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `s.parse::<f64>().ok()`, bit for bit.
pub fn parse_f64(s: &str) -> Option<f64> {
    fast_decimal(s.as_bytes()).or_else(|| s.parse().ok())
}

/// The value of a plain decimal within Clinger's fast path, or None (then the
/// caller asks std, which also decides whether `s` is a number at all).
#[inline]
fn fast_decimal(s: &[u8]) -> Option<f64> {
    let (negative, rest) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let mut w: u64 = 0;
    let (mut digits, mut fraction) = (0usize, 0i32);
    let mut dot = false;
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            c @ b'0'..=b'9' => {
                // At most 19 digits are kept (checked below): no overflow.
                w = w.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
                digits += 1;
                fraction += i32::from(dot);
            }
            b'.' if !dot => dot = true,
            b'e' | b'E' => break,
            _ => return None,
        }
        i += 1;
    }
    if digits == 0 || digits > 19 {
        return None;
    }
    let mut exponent = -fraction;
    if i < rest.len() {
        let (sign, mut e_digits) = match rest.get(i + 1)? {
            b'-' => (-1, &rest[i + 2..]),
            b'+' => (1, &rest[i + 2..]),
            _ => (1, &rest[i + 1..]),
        };
        if e_digits.is_empty() || e_digits.len() > 4 {
            return None;
        }
        let mut e = 0i32;
        while let [c @ b'0'..=b'9', tail @ ..] = e_digits {
            e = 10 * e + i32::from(c - b'0');
            e_digits = tail;
        }
        if !e_digits.is_empty() {
            return None;
        }
        exponent += sign * e;
    }
    let magnitude = if w == 0 {
        0.0
    } else if w > 1 << 53 || exponent.unsigned_abs() > 22 {
        return None;
    } else if exponent >= 0 {
        w as f64 * POW10[exponent as usize]
    } else {
        w as f64 / POW10[(-exponent) as usize]
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// A number, also with a decimal comma ("1,5") where the delimiter is not a comma.
pub fn parse_number(cell: &str, decimal_comma: bool) -> Option<f64> {
    if let Some(v) = parse_f64(cell) {
        return Some(v);
    }
    let one_comma = cell.bytes().filter(|&b| b == b',').count() == 1 && !cell.contains('.');
    if decimal_comma && one_comma {
        return parse_f64(&cell.replacen(',', ".", 1));
    }
    None
}

/// Tokens that mean "no value" (compared case-insensitively).
pub fn is_missing(cell: &str) -> bool {
    match cell.as_bytes().first() {
        None => true,
        Some(b'0'..=b'9' | b'-' | b'+' | b'.') if cell.len() > 1 || cell != "-" => false,
        _ => {
            cell.len() <= 4
                && ["na", "n/a", "nan", "null", "?"]
                    .iter()
                    .any(|m| cell.eq_ignore_ascii_case(m))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same(s: &str) {
        let want = s.parse::<f64>().ok().map(f64::to_bits);
        let got = parse_f64(s).map(f64::to_bits);
        assert_eq!(got, want, "{s:?}");
    }

    #[test]
    fn equals_std_on_edge_cases() {
        for s in [
            "",
            "+",
            "-",
            ".",
            "-.",
            "+.",
            "0",
            "-0",
            "+0",
            "0.0",
            "-0.0",
            "1.",
            ".5",
            "-.5",
            "+.5",
            "1..2",
            "1.2.3",
            "1e",
            "1e+",
            "1e-",
            "1e5",
            "1E5",
            "1e-5",
            "1.5e+3",
            "-1.5E-3",
            "e5",
            ".e5",
            "1.e5",
            "0e999",
            "-0e-999",
            "1e22",
            "1e23",
            "1e-22",
            "1e-23",
            "123456789e-22",
            "9007199254740992",
            "9007199254740993",
            "9007199254740993.0",
            "0.1",
            "0.2",
            "0.3",
            "-2.3000",
            "1.7976931348623157e308",
            "2.2250738585072014e-308",
            "4.9e-324",
            "1e400",
            "-1e400",
            "1e-400",
            "inf",
            "-inf",
            "+inf",
            "Infinity",
            "INF",
            "nan",
            "NaN",
            "-nan",
            "infinity",
            "in",
            "na",
            "1_000",
            " 1",
            "1 ",
            "0x10",
            "1,5",
            "00000000000000000001",
            "0000000000000000000.1",
            "1234567890123456789",
            "12345678901234567890",
            "99999999999999999999",
            "0.00000000000000000000001",
            "1e0000",
            "1e00005",
            "1e+0022",
            "18446744073709551615",
            "18446744073709551616",
            "٣",
            "1e٣",
            "--1",
            "+-1",
            "1-",
            "1+",
            "1e5.0",
            "1.5e5e5",
        ] {
            same(s);
        }
        // Every plain decimal of a generated demo file's shape.
        for k in 0..20_000i64 {
            same(&format!("{:.4}", (k - 10_000) as f64 / 4321.0));
            same(&format!("{:.9}", (k * 7919 - 70_000_000) as f64 / 3.0e6));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        #[test]
        fn equals_std_on_random_strings(s in "[-+]?[0-9.]{0,24}([eE][-+]?[0-9]{0,5})?") {
            same(&s);
        }
        #[test]
        fn equals_std_on_random_alphabet(s in "[-+0-9.eEinfaINFA]{0,12}") {
            same(&s);
        }
        #[test]
        fn equals_std_on_random_doubles(bits in any::<u64>(), digits in 0usize..20) {
            let v = f64::from_bits(bits);
            same(&format!("{v}"));
            same(&format!("{v:e}"));
            same(&format!("{v:.digits$}"));
            same(&format!("{v:.digits$e}"));
        }
    }

    #[test]
    fn decimal_commas_only_off_comma_files() {
        assert_eq!(parse_number("1,5", true), Some(1.5));
        assert_eq!(parse_number("1,5", false), None);
        assert_eq!(parse_number("1,5,0", true), None);
        assert_eq!(parse_number("1.0,5", true), None);
    }
}
