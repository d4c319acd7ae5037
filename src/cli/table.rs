//! `--format table`: the run record as a short human summary.

use super::settings_args::render_message;
use crate::engine::quality;
use crate::engine::record::RunRecord;
use crate::engine::record_details::CvCurve;

fn num(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.digits$}"),
        _ => "-".into(),
    }
}

/// `v` to `digits` significant digits, for people: 16.08, 0.003162, 1785.
pub fn sig(v: f64, digits: usize) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    let magnitude = v.abs().log10().floor() as i64;
    let decimals = (digits as i64 - 1 - magnitude).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A cross-validation's curve (`details.cv`) on one line: each grid point's
/// mean held-out AUC, the chosen one starred, points without one "failed".
fn cv_curve(cv: &CvCurve) -> Option<String> {
    let unit = match cv.parameter.as_str() {
        "gamma_over_n" => "n",
        _ => "",
    };
    let points: Vec<String> = cv
        .grid
        .iter()
        .zip(&cv.mean_auc)
        .map(|(&g, a)| {
            let star = if Some(g) == cv.chosen { "*" } else { "" };
            match a {
                Some(a) => format!("{}{unit} {a:.4}{star}", sig(g, 3)),
                None => format!("{}{unit} failed", sig(g, 3)),
            }
        })
        .collect();
    Some(format!(
        "{}-fold held-out AUC: {}",
        cv.folds?,
        points.join(", ")
    ))
}

pub fn print_table(r: &RunRecord) {
    let d = &r.dataset;
    println!(
        "data      {}  ({} rows, {} features, {} positive / {} negative)",
        d.path, d.rows, d.features, d.positives, d.negatives
    );
    if !d.target_rule.is_empty() {
        println!("target    {}", d.target_rule);
    }
    println!("positive  {}", d.positive_rule);
    // The loader's "dropped …" warnings say what the lines below say: each
    // drop is reported once, the rows with the loader's counts by column.
    let (drops, others): (Vec<&String>, Vec<&String>) =
        d.warnings.iter().partition(|w| w.starts_with("dropped "));
    match drops.iter().find(|w| w.contains("row(s)")) {
        Some(w) => println!("dropped   {}", &w["dropped ".len()..]),
        None if d.dropped_rows > 0 => {
            println!("dropped   {} row(s) with missing values", d.dropped_rows)
        }
        None => {}
    }
    for c in &d.dropped_columns {
        println!("dropped   column '{}' ({})", c.name, c.reason);
    }
    for w in others {
        println!("warning   {w}");
    }
    for e in &d.encoded {
        println!("encoded   '{}' → {}", e.column, e.features.join(", "));
    }
    let s = &r.split;
    println!(
        "split     {}: {} train ({} positive), {} test ({} positive)",
        s.kind, s.train_rows, s.train_positives, s.test_rows, s.test_positives
    );
    println!(
        "method    {}{}",
        r.method,
        if r.converged { "" } else { "  (NOT CONVERGED)" }
    );
    for w in r.warnings.iter().filter(|w| w.code != quality::code::DATA) {
        println!("warning   [{}] {}", w.code, render_message(&w.message));
    }
    if let Some(g) = r.gamma {
        let n = r.split.train_rows;
        println!(
            "gamma     {}{}",
            sig(g, 4),
            if n > 0 {
                format!(" = {}·n (n = {n} training rows)", sig(g / n as f64, 3))
            } else {
                String::new()
            }
        );
    }
    match r.cv_curve() {
        Some(Ok(c)) => {
            if let Some(line) = cv_curve(&c) {
                println!("cv        {line}");
            }
        }
        Some(Err(e)) => println!("cv        {e}"),
        None => {}
    }
    if let Some(z) = r.log_evidence {
        println!("log Z     {z:.4}");
    }
    if let Some(x) = &r.runs {
        println!(
            "runs      {}: log Z {:.4} ± {:.4} across runs (MCSE of the mean {:.4}); max R-hat {} \
             ({}); max MCSE/sd {}",
            x.count,
            x.log_z.mean,
            x.log_z.sd,
            x.log_z.mcse,
            num(x.rhat_max, 4),
            x.rhat_worst.as_deref().unwrap_or("-"),
            num(x.mcse_over_sd_max(), 4)
        );
    } else if r.is_single_smc_run() {
        println!("runs      1 (no R-hat or log Z spread: they need --runs 2 or more)");
    }
    let a = &r.auc;
    match &a.train_interval {
        Some(i) => println!("AUC       train {} (in-sample)", i.describe()),
        None => println!("AUC       train {}", num(Some(a.train), 4)),
    }
    match (&a.test_interval, a.test) {
        (Some(i), _) => println!(
            "          test  {} on {} positive / {} negative test rows",
            i.describe(),
            i.positives,
            i.negatives
        ),
        (None, Some(t)) => println!("          test  {}", num(Some(t), 4)),
        (None, None) => println!("          test  - (no test rows)"),
    }
    if let Some(p) = &a.test_posterior {
        println!(
            "          test  posterior draws' AUC: mean {:.4}, 95% of draws in {:.4}–{:.4} \
             ({} draws; uncertainty about θ, not over test rows)",
            p.mean, p.lower, p.upper, p.draws
        );
    } else if let Some(why) = &a.test_posterior_missing {
        println!("          test  no posterior spread of the AUC: {why}");
    }
    if let Some(b) = &r.bound {
        println!("bound     {}", super::bound::headline(b));
        if let Some(s) = &b.split {
            println!(
                "          split prior: learned on {} rows, certified on the other {} (m = {})",
                s.prior_rows, s.certified_rows, b.m
            );
        }
        println!("          {}", b.meaning());
        if let Some(why) = b.why_loose() {
            println!("          {why}");
        }
    }
    if let Some(c) = r.is_check() {
        println!(
            "IS check  k̂ = {}, ESS {} of {} draws",
            num(c.khat, 2),
            num(c.ess, 0),
            c.draws.map_or("null".to_string(), |d| d.to_string())
        );
    }
    for (name, a) in &r.auc.alternatives {
        println!(
            "AUC ({name})  train {}   test {}",
            num(Some(a.train), 4),
            a.test_interval
                .as_ref()
                .map_or_else(|| num(a.test, 4), |i| i.describe())
        );
    }
    println!(
        "time      load {:.3}s  fit {:.3}s  total {:.3}s",
        r.seconds.load, r.seconds.fit, r.seconds.total
    );
    if !r.coefficients.is_empty() {
        let w = r
            .coefficients
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(7, 40);
        let runs = r.runs.as_ref();
        println!(
            "\n{:<w$}  {:>9}  {:>9}{}",
            "feature",
            "mean",
            "sd",
            if runs.is_some() {
                "   R-hat  MCSE/sd"
            } else {
                ""
            }
        );
        let incl = r.inclusion.as_ref();
        for (k, c) in r.coefficients.iter().enumerate() {
            let mut p = runs.map_or(String::new(), |x| {
                format!(
                    "  {:>6}  {:>7}",
                    num(x.rhat.get(k).copied().flatten(), 4),
                    num(x.mcse_over_sd.get(k).copied().flatten(), 4)
                )
            });
            p += &incl
                .and_then(|v| v.get(k))
                .map_or(String::new(), |i| format!("  P(incl) {:.3}", i.prob));
            println!(
                "{:<w$}  {:>9}  {:>9}{p}",
                c.name,
                num(Some(c.mean), 4),
                num(Some(c.sd), 4)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sig;

    #[test]
    fn numbers_are_rounded_for_people() {
        assert_eq!(sig(16.07777657071141, 4), "16.08");
        assert_eq!(sig(0.0031622776601683794, 3), "0.00316");
        assert_eq!(sig(1785.0, 4), "1785");
        assert_eq!(sig(0.25, 3), "0.25");
        assert_eq!(sig(123456.7, 3), "123457");
    }
}
