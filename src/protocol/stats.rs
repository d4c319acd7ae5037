//! The tables' arithmetic: mean ± sd over splits, paired differences with
//! their standard error, median [range].

/// Mean, sample standard deviation (n − 1; None below two values) and count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanSd {
    pub mean: f64,
    pub sd: Option<f64>,
    pub count: usize,
}

/// Mean ± sd of the values; None when there are none.
pub fn mean_sd(xs: &[f64]) -> Option<MeanSd> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd = (n > 1)
        .then(|| (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt());
    Some(MeanSd { mean, sd, count: n })
}

/// A paired difference: the mean of a − b over the splits where both exist,
/// and its standard error sd/√k (None below two pairs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paired {
    pub mean: f64,
    pub se: Option<f64>,
    pub pairs: usize,
}

/// Paired differences of `a` and `b`, each given per split (None: no value on that split).
pub fn paired(a: &[Option<f64>], b: &[Option<f64>]) -> Option<Paired> {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .filter_map(|(x, y)| Some((*x)? - (*y)?))
        .collect();
    let m = mean_sd(&d)?;
    Some(Paired {
        mean: m.mean,
        se: m.sd.map(|sd| sd / (m.count as f64).sqrt()),
        pairs: m.count,
    })
}

/// Median and range; the median of an even count is the mean of the middle two.
pub fn median_range(xs: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some((median, v[0], v[n - 1]))
}
