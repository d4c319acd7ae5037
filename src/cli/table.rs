//! `--format table`: the run record as a short human summary.

use crate::engine::record::RunRecord;

fn num(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.digits$}"),
        _ => "-".into(),
    }
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
    if d.dropped_rows > 0 {
        println!("dropped   {} row(s) with missing values", d.dropped_rows);
    }
    for c in &d.dropped_columns {
        println!("dropped   column '{}' ({})", c.name, c.reason);
    }
    for w in &d.warnings {
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
    if let Some(g) = r.gamma {
        println!("gamma     {g}");
    }
    if let Some(z) = r.log_evidence {
        println!("log Z     {z:.4}");
    }
    println!(
        "AUC       train {}   test {}",
        num(Some(r.auc.train), 4),
        num(r.auc.test, 4)
    );
    if let Some(b) = &r.bound {
        println!(
            "bound     1 − AUC ≤ {:.4} with probability ≥ {} (empirical {:.4}, KL {:.2}){}",
            b.risk,
            1.0 - b.epsilon,
            b.empirical_risk,
            b.kl,
            // A bound at or above ½ certifies nothing better than chance.
            if b.risk >= 0.5 { "; vacuous" } else { "" }
        );
    }
    if let Some(c) = r.details.get("is_check").filter(|c| c.is_object()) {
        println!(
            "IS check  k̂ = {}, ESS {} of {} draws",
            num(c["khat"].as_f64(), 2),
            num(c["ess"].as_f64(), 0),
            c["draws"]
        );
    }
    for (name, a) in &r.auc.alternatives {
        println!(
            "AUC ({name})  train {}   test {}",
            num(Some(a.train), 4),
            num(a.test, 4)
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
        println!("\n{:<w$}  {:>9}  {:>9}", "feature", "mean", "sd");
        let incl = r.inclusion.as_ref();
        for (k, c) in r.coefficients.iter().enumerate() {
            let p = incl
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
