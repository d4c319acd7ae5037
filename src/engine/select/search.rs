//! Evidence searches (ALGORITHMS.md §8): prior hyper-parameters chosen by
//! maximising log Z, each evaluation a (warm-started) run of the method.
//! Generic over what is searched: ARD's variances and spike-and-slab's p use
//! `fixed_point`, spike-and-slab's v0/v1 uses `maximise`, both of them
//! together `coordinate_ascent`; GP-EP's length-scale search its `golden`.
//!
//! An evaluation that fails (the method did not converge there) counts as
//! log Z = −∞ in `maximise`, and makes `fixed_point` step back.

use crate::engine::interface::EngineError;

/// Which part of `maximise` asked for a value (for traces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Grid,
    Walk,
    Golden,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Grid => "grid",
            Phase::Walk => "walk",
            Phase::Golden => "golden",
        }
    }
}

/// The interval of a 1-D search, its grid step and the final bracket width.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range1d {
    pub lo: f64,
    pub hi: f64,
    pub step: f64,
    pub tol: f64,
}

impl Range1d {
    /// Whether `t` is within `tol` of an end (the maximum may lie beyond it).
    pub fn at_edge(&self, t: f64) -> bool {
        t - self.lo < self.tol || self.hi - t < self.tol
    }
}

/// The largest finite value among `seen`.
fn best(seen: &[(f64, f64)]) -> Option<f64> {
    seen.iter()
        .filter(|(_, f)| f.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|&(t, _)| t)
}

/// Maximises `f` (log Z; −∞ where the method fails) over `range`. Without a
/// `start`, a grid from `hi` down to `lo` in `step`s (warm starts along it)
/// finds the best grid point; with one, the search walks uphill from it in
/// grid steps instead (later rounds of a coordinate ascent). Then golden
/// section within a step of the best point down to `tol`. Each point is
/// evaluated once. Returns the best point seen, None when every value was −∞.
pub fn maximise(
    f: &mut dyn FnMut(f64, Phase) -> Result<f64, EngineError>,
    range: &Range1d,
    start: Option<f64>,
) -> Result<Option<f64>, EngineError> {
    let mut seen: Vec<(f64, f64)> = Vec::new();
    let mut value = |t: f64, phase: Phase| -> Result<f64, EngineError> {
        if let Some(&(_, v)) = seen.iter().find(|(u, _)| (u - t).abs() < 1e-9) {
            return Ok(v);
        }
        let v = f(t, phase)?;
        seen.push((t, v));
        Ok(v)
    };
    let inside = |t: f64| t >= range.lo - 1e-9 && t <= range.hi + 1e-9;
    let mut centre = match start {
        Some(t) => t,
        None => {
            let steps = ((range.hi - range.lo) / range.step).round() as usize;
            let mut grid = Vec::with_capacity(steps + 1);
            for i in 0..=steps {
                let t = range.hi - i as f64 * range.step;
                grid.push((t, value(t, Phase::Grid)?));
            }
            match best(&grid) {
                Some(t) => t,
                None => return Ok(None),
            }
        }
    };
    loop {
        let fc = value(centre, Phase::Walk)?;
        let mut next = (centre, fc);
        for t in [centre - range.step, centre + range.step] {
            if inside(t) {
                let v = value(t, Phase::Walk)?;
                if v > next.1 {
                    next = (t, v);
                }
            }
        }
        if next.0 == centre {
            break;
        }
        centre = next.0;
    }
    golden(
        &mut |t| value(t, Phase::Golden),
        (centre - range.step).max(range.lo),
        (centre + range.step).min(range.hi),
        range.tol,
    )?;
    Ok(best(&seen))
}

/// Golden-section search for the maximum of `f` in [a, b], down to a bracket
/// of width `tol`; returns its two inner points and their values (the best
/// point evaluated inside is one of them).
pub fn golden(
    f: &mut dyn FnMut(f64) -> Result<f64, EngineError>,
    mut a: f64,
    mut b: f64,
    tol: f64,
) -> Result<[(f64, f64); 2], EngineError> {
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - r * (b - a), a + r * (b - a));
    let mut fc = f(c)?;
    let mut fd = f(d)?;
    while b - a > tol {
        if fc >= fd {
            (b, d, fd) = (d, c, fc);
            c = b - r * (b - a);
            fc = f(c)?;
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + r * (b - a);
            fd = f(d)?;
        }
    }
    Ok([(c, fc), (d, fd)])
}

/// How `fixed_point` iterates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedPointRule {
    /// Most updates.
    pub max_iter: usize,
    /// Halvings of a step whose evaluation failed before giving up.
    pub halvings: usize,
    /// After giving up, evaluate the last good point again (so the method's
    /// state is its fixed point).
    pub reevaluate: bool,
}

/// What `fixed_point` ended with.
#[derive(Debug, Clone)]
pub struct FixedPoint<P, E> {
    /// The last point whose evaluation succeeded, and that evaluation.
    pub point: P,
    pub eval: E,
    /// The update rule said the point no longer moves.
    pub settled: bool,
    /// A step failed even at its smallest: the point it tried.
    pub gave_up_at: Option<P>,
}

/// Iterates `x ← update(x)` where `update` is a fixed point of the evidence
/// (MacKay's ARD update, p ← mean inclusion): `eval` runs the method at x
/// (`NotConverged` when it fails there; its other errors end the search),
/// `propose(x, eval, iteration)` gives the next point and whether x has
/// settled. Each step goes to `interpolate(x, next, t)`, t = 1 first; when its
/// evaluation fails, t is halved up to `rule.halvings` times, then the search
/// gives up at x. The first evaluation's error is returned as is.
pub fn fixed_point<P, E>(
    start: P,
    rule: &FixedPointRule,
    eval: &mut dyn FnMut(&P) -> Result<E, EngineError>,
    propose: &mut dyn FnMut(&P, &E, usize) -> (P, bool),
    interpolate: &dyn Fn(&P, &P, f64) -> P,
) -> Result<FixedPoint<P, E>, EngineError> {
    let mut x = start;
    let mut e = eval(&x)?;
    let max_iter = rule.max_iter.max(1);
    for iteration in 1..=max_iter {
        let (next, settled) = propose(&x, &e, iteration);
        if settled || iteration == max_iter {
            return Ok(FixedPoint {
                point: x,
                eval: e,
                settled,
                gave_up_at: None,
            });
        }
        let (mut t, mut halvings) = (1.0, 0);
        loop {
            let trial = interpolate(&x, &next, t);
            match eval(&trial) {
                Ok(e2) => {
                    (x, e) = (trial, e2);
                    break;
                }
                Err(EngineError::NotConverged { .. }) if halvings < rule.halvings => {
                    t *= 0.5;
                    halvings += 1;
                }
                Err(EngineError::NotConverged { .. }) => {
                    if rule.reevaluate {
                        e = eval(&x)?;
                    }
                    return Ok(FixedPoint {
                        point: x,
                        eval: e,
                        settled: false,
                        gave_up_at: Some(trial),
                    });
                }
                Err(err) => return Err(err),
            }
        }
    }
    unreachable!("the loop returns")
}

/// Coordinate ascent over `coords` coordinates: each round runs
/// `search(state, i)` for every coordinate i (each returns whether its
/// coordinate moved) until a round moves none; one round when there is a
/// single coordinate. Returns the rounds run and whether it settled before
/// `max_rounds`.
pub fn coordinate_ascent<S>(
    state: &mut S,
    max_rounds: usize,
    coords: usize,
    search: &mut dyn FnMut(&mut S, usize) -> Result<bool, EngineError>,
) -> Result<(usize, bool), EngineError> {
    let (mut rounds, mut settled) = (0, true);
    for round in 1..=max_rounds {
        rounds = round;
        let mut moved = false;
        for i in 0..coords {
            moved |= search(state, i)?;
        }
        if coords < 2 || !moved {
            break;
        }
        settled = round < max_rounds;
    }
    Ok((rounds, settled))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::NonConvergence;

    /// A smooth concave function: golden section ends within `tol` of its peak,
    /// from the grid and from a start point, and evaluates no point twice.
    #[test]
    fn maximise_finds_the_peak_once_per_point() {
        let range = Range1d {
            lo: -6.0,
            hi: -1.0,
            step: 0.5,
            tol: 0.05,
        };
        for start in [None, Some(-5.0)] {
            let mut calls = Vec::new();
            let best = maximise(
                &mut |t, _| {
                    calls.push(t);
                    Ok(-(t + 2.37f64).powi(2))
                },
                &range,
                start,
            )
            .unwrap()
            .unwrap();
            assert!((best + 2.37).abs() < 0.05, "{best}");
            let mut sorted = calls.clone();
            sorted.sort_by(f64::total_cmp);
            sorted.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
            assert_eq!(sorted.len(), calls.len(), "{calls:?}");
        }
    }

    /// Failed evaluations (−∞) are never chosen; all failing gives None.
    #[test]
    fn maximise_skips_failures() {
        let range = Range1d {
            lo: 0.0,
            hi: 2.0,
            step: 0.5,
            tol: 0.01,
        };
        let f = |t: f64| if t > 1.2 { f64::NEG_INFINITY } else { t };
        let best = maximise(&mut |t, _| Ok(f(t)), &range, None).unwrap();
        assert!(best.unwrap() <= 1.2 && best.unwrap() > 1.1, "{best:?}");
        let none = maximise(&mut |_, _| Ok(f64::NEG_INFINITY), &range, None).unwrap();
        assert_eq!(none, None);
    }

    fn not_converged() -> EngineError {
        EngineError::NotConverged {
            reason: NonConvergence::MaxSweeps,
            account: None,
            message: "no".into(),
            diagnostics: serde_json::Value::Null,
        }
    }

    /// x ← (x + 2)/2 converges to 2; a region where evaluation fails makes the
    /// step halve, and giving up keeps the last good point.
    #[test]
    fn fixed_point_iterates_halves_and_gives_up() {
        let rule = FixedPointRule {
            max_iter: 100,
            halvings: 4,
            reevaluate: true,
        };
        let lerp = |a: &f64, b: &f64, t: f64| a + t * (b - a);
        let r = fixed_point(
            0.0,
            &rule,
            &mut |x: &f64| Ok(*x),
            &mut |x, _, _| ((x + 2.0) / 2.0, (x - 2.0).abs() < 1e-9),
            &lerp,
        )
        .unwrap();
        assert!(r.settled && (r.point - 2.0).abs() < 1e-8);
        // Evaluation fails above 1.5: steps are halved until they fit, then it gives up.
        let mut evals = Vec::new();
        let r = fixed_point(
            0.0,
            &rule,
            &mut |x: &f64| {
                evals.push(*x);
                if *x > 1.5 {
                    Err(not_converged())
                } else {
                    Ok(*x)
                }
            },
            &mut |x, _, _| (x + 1.0, false),
            &lerp,
        )
        .unwrap();
        assert!(!r.settled);
        assert!(r.point <= 1.5 && r.point > 1.4, "{}", r.point);
        assert!(r.gave_up_at.unwrap() > 1.5);
        assert_eq!(
            *evals.last().unwrap(),
            r.point,
            "re-evaluated at the last good point"
        );
    }

    #[test]
    fn coordinate_ascent_stops_when_nothing_moves() {
        let mut s = (3, 1);
        let (rounds, settled) = coordinate_ascent(&mut s, 6, 2, &mut |s, i| {
            Ok(match i {
                0 => {
                    s.0 -= 1;
                    s.0 > 0
                }
                _ => s.1 != 1,
            })
        })
        .unwrap();
        assert_eq!((rounds, settled), (3, true));
        let (rounds, settled) = coordinate_ascent(&mut s, 2, 2, &mut |_, _| Ok(true)).unwrap();
        assert_eq!((rounds, settled), (2, false));
        let (rounds, _) = coordinate_ascent(&mut s, 6, 1, &mut |_, _| Ok(true)).unwrap();
        assert_eq!(rounds, 1, "a single coordinate: one round");
    }
}
