//! `pacauc fit --method ep --prior spike-slab` and `pacauc path` as scripts use
//! them: inclusion probabilities in the record, the path in JSON and CSV,
//! atomic `--out`, clear errors.

mod common;
use common::{events, inclusion, json, pacauc};

const DEMO: &str = "demo-data/sparse_linear.csv";

#[test]
fn spike_slab_fit_reports_inclusion_and_evidence() {
    let v = json(&pacauc(&[
        "fit",
        DEMO,
        "--method",
        "ep",
        "--prior",
        "spike-slab",
        "--gamma",
        "1.5n",
        "--inclusion-prior",
        "0.2",
    ]));
    assert_eq!(v["method"], "ep");
    assert_eq!(v["prior"]["kind"], "spike_slab");
    assert_eq!(v["details"]["prior"], "spike-slab");
    // γ reached by the continuation, directly from the prior: a path of one
    // point, no walk.
    let g = &v["details"]["gamma"];
    assert_eq!(g["start"], "continuation");
    let points = g["path"]["points"].as_array().unwrap();
    assert!(points.len() == 1 && points[0]["direct"] == true, "{g}");
    assert!(g["warm_path"].is_null());
    assert!(v["log_evidence"].as_f64().unwrap() < 0.0);
    let incl = v["inclusion"].as_array().unwrap();
    assert_eq!(incl.len(), 20);
    let prob = |name: &str| {
        incl.iter().find(|i| i["name"] == name).unwrap()["prob"]
            .as_f64()
            .unwrap()
    };
    for name in ["x03", "x07", "x12"] {
        assert!(prob(name) > 0.9, "{name}: {}", prob(name));
    }
    assert!(prob("x01") < 0.3 && prob("x20") < 0.3);
    // Every sweep streams the inclusion (the explorer's pane fills live); the
    // last sweep's is the result's.
    let sweeps = events(&v, "ep_sweep");
    assert!(sweeps.len() > 1);
    let last = sweeps[sweeps.len() - 1]["inclusion"].as_array().unwrap();
    for (a, i) in last.iter().zip(incl) {
        let (a, b) = (a.as_f64().unwrap(), i["prob"].as_f64().unwrap());
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
    // The score of the selected features is evaluated beside the posterior mean.
    assert!(
        v["auc"]["alternatives"]["selected"]["test"]
            .as_f64()
            .unwrap()
            > 0.7
    );
    let sweeps = events(&v, "ep_sweep").len();
    assert_eq!(sweeps as u64, v["details"]["sweeps"].as_u64().unwrap());
}

#[test]
fn defaults_follow_theory_and_dirac_spikes_are_refused() {
    let v = json(&pacauc(&[
        "fit",
        DEMO,
        "--method",
        "ep",
        "--prior",
        "spike-slab",
    ]));
    let p = v["prior"]["incl"].as_f64().unwrap();
    assert!((p - (1.0 - (-1.0f64 / 20.0).exp())).abs() < 1e-15);
    assert_eq!(v["prior"]["spike_var"].as_f64().unwrap(), 1e-4);
    let out = pacauc(&[
        "fit",
        DEMO,
        "--method",
        "ep",
        "--prior",
        "spike-slab",
        "--spike-var",
        "1e-8",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("1e-6"));
    // `auto` is evidence maximisation by EP; SMC says so instead of ignoring it.
    for option in ["--slab-var", "--inclusion-prior"] {
        let out = pacauc(&[
            "fit",
            DEMO,
            "--method",
            "smc",
            "--prior",
            "spike-slab",
            option,
            "auto",
        ]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--method ep"), "{err}");
    }
}

#[test]
fn path_json_csv_and_atomic_out() {
    let dir = std::env::temp_dir().join(format!("pacauc-path-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out_json = dir.join("path.json");
    let common = [
        "path",
        DEMO,
        "--prior",
        "spike-slab",
        "--gamma",
        "1.5n",
        "--inclusion-prior",
        "0.2",
        "--spike-var-grid",
        "1e-4,1e-2,1e-6",
    ];
    let mut args = common.to_vec();
    args.extend(["--out", out_json.to_str().unwrap()]);
    let v = json(&pacauc(&args));
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out_json).unwrap()).unwrap();
    assert_eq!(saved, v);
    let points = v["points"].as_array().unwrap();
    let v0: Vec<f64> = points
        .iter()
        .map(|p| p["spike_var"].as_f64().unwrap())
        .collect();
    assert_eq!(v0, vec![1e-6, 1e-4, 1e-2]);
    for p in points {
        assert_eq!(p["converged"], true);
        let c = p["coefficients"].as_array().unwrap();
        assert_eq!(c.len(), 20);
        assert!(c[2]["inclusion"].as_f64().unwrap() > 0.9); // x03
        assert!(p["auc"]["mean"]["test"].as_f64().unwrap() > 0.7);
    }
    // A narrower spike shrinks the excluded coefficients further.
    let x01 = |i: usize| points[i]["coefficients"][0]["mean"].as_f64().unwrap().abs();
    assert!(x01(0) < x01(2));

    let mut args = common.to_vec();
    args.extend(["--format", "csv"]);
    let out = pacauc(&args);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "spike_var,feature,mean,sd,inclusion,log_evidence,converged"
    );
    assert_eq!(lines.len(), 1 + 3 * 20);
    assert!(lines[1].starts_with("0.000001,x01,"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn path_needs_the_spike_slab_prior_and_a_valid_grid() {
    let out = pacauc(&["path", DEMO]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--prior spike-slab"));
    let out = pacauc(&[
        "path",
        DEMO,
        "--prior",
        "spike-slab",
        "--spike-var-grid",
        "1e-9",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("1e-6"));
}

fn fit_demo(extra: &[&str]) -> serde_json::Value {
    fit_on(DEMO, extra)
}

/// `fit_demo` on another file.
fn fit_on(data: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "fit",
        data,
        "--test-frac",
        "0",
        "--method",
        "ep",
        "--prior",
        "spike-slab",
        "--gamma",
        "1.5n",
    ];
    args.extend(extra);
    json(&pacauc(&args))
}

/// `--inclusion-prior auto`: p = mean inclusion at the fixed point, where
/// ∂ log Z_EP/∂p = 0; its evidence beats p 25% lower or higher.
#[test]
fn inclusion_prior_auto_maximises_the_evidence() {
    let fit = |p: &str| fit_demo(&["--inclusion-prior", p]);
    let v = fit("auto");
    let tuned = &v["details"]["inclusion_prior"];
    assert_eq!(tuned["chosen_by"], "evidence");
    assert_eq!(tuned["converged"], true);
    let p = v["prior"]["incl"].as_f64().unwrap();
    let mean_incl = inclusion(&v).iter().sum::<f64>() / 20.0;
    assert!(
        (p / mean_incl - 1.0).abs() < 2e-3,
        "p {p} vs mean {mean_incl}"
    );
    let z = v["log_evidence"].as_f64().unwrap();
    for other in [0.75 * p, 1.25 * p] {
        let zo = fit(&other.to_string())["log_evidence"].as_f64().unwrap();
        assert!(zo < z, "log Z at p = {other}: {zo} vs {z} at {p}");
    }
}

/// `--slab-var auto` (v0 fixed): the chosen v1 has a larger log Z_EP than every
/// point of the half-decade grid and than v1 a quarter-decade either side;
/// the AUC risk is scale-free, so a 100× larger v0 gives the same v0/v1 and
/// log Z. Tolerances: EP stops at Δ < 1e-4·η, so log Z is known to ~1e-3.
#[test]
fn slab_var_auto_maximises_the_evidence() {
    let v = fit_demo(&["--slab-var", "auto"]);
    let tuned = &v["details"]["slab_var"];
    assert_eq!(tuned["chosen_by"], "evidence");
    let (v0, v1) = (
        v["prior"]["spike_var"].as_f64().unwrap(),
        v["prior"]["slab_var"].as_f64().unwrap(),
    );
    assert_eq!(v0, 1e-4);
    let ratio = v0 / v1;
    assert!(
        ratio > 2e-6 && ratio < 0.09,
        "v0/v1 = {ratio} (interior here)"
    );
    let z = v["log_evidence"].as_f64().unwrap();
    let trace = tuned["trace"].as_array().unwrap();
    let grid: Vec<&serde_json::Value> = trace.iter().filter(|p| p["phase"] == "grid").collect();
    assert_eq!(grid.len(), 11);
    // (EP need not converge at every v0/v1: here it cycles at 10^-3.5, next to
    // where the all-spike fixed point takes over.)
    let grid: Vec<f64> = grid.iter().filter_map(|p| p["log_z"].as_f64()).collect();
    assert!(grid.len() >= 9);
    assert!(grid.iter().all(|&g| g < z + 1e-3), "{grid:?} vs {z}");
    for f in [10f64.powf(-0.25), 10f64.powf(0.25)] {
        let other = (v1 * f).to_string();
        let zo = fit_demo(&["--spike-var", "1e-4", "--slab-var", &other])["log_evidence"]
            .as_f64()
            .unwrap();
        assert!(zo < z, "log Z at v1 = {other}: {zo} vs {z} at {v1}");
    }
    let w = fit_demo(&["--spike-var", "1e-2", "--slab-var", "auto"]);
    let ratio_w =
        w["prior"]["spike_var"].as_f64().unwrap() / w["prior"]["slab_var"].as_f64().unwrap();
    assert!(
        (ratio_w / ratio).log10().abs() < 0.05,
        "{ratio_w} vs {ratio}"
    );
    assert!((w["log_evidence"].as_f64().unwrap() - z).abs() < 1e-3);
}

/// Both `auto`: coordinate ascent settles, p is still the mean inclusion, and
/// the run beats each one-constant tuning on evidence.
#[test]
fn slab_var_and_inclusion_prior_auto_together() {
    let v = fit_demo(&["--slab-var", "auto", "--inclusion-prior", "auto"]);
    assert_eq!(v["details"]["tuning_rounds"]["settled"], true);
    let p = v["prior"]["incl"].as_f64().unwrap();
    let incl = inclusion(&v);
    let mean = incl.iter().sum::<f64>() / 20.0;
    assert!((p / mean - 1.0).abs() < 2e-3, "p {p} vs mean {mean}");
    let z = v["log_evidence"].as_f64().unwrap();
    for one in [["--slab-var", "auto"], ["--inclusion-prior", "auto"]] {
        let zo = fit_demo(&one)["log_evidence"].as_f64().unwrap();
        assert!(zo < z + 1e-3, "{one:?}: {zo} vs {z}");
    }
    // The four informative features x03, x07, x12, x18 are the selected ones.
    for (k, q) in incl.iter().enumerate() {
        assert_eq!(*q > 0.5, [2, 6, 11, 17].contains(&k), "x{:02}: {q}", k + 1);
    }
}

#[test]
fn an_all_spike_result_is_flagged() {
    // Default p = 1 − e^{−1/20} at γ = n and 2n: EP settles with every feature
    // in the spike on the 600-row demo (SMC includes four); the record must
    // say so. At 2n EP drifts there slowly (Δ ≈ 0.1·η for ~200 sweeps):
    // halving η on that stall, as for a cycle, made it fail ("η fell below its
    // minimum"). (On the 1000-row demo EP keeps the true features.)
    let data = common::sparse_demo_600("all-spike-flagged");
    for gamma in ["1n", "2n"] {
        let out = pacauc(&[
            "fit",
            &data,
            "--method",
            "ep",
            "--prior",
            "spike-slab",
            "--gamma",
            gamma,
        ]);
        assert!(
            out.status.success(),
            "γ = {gamma}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("all-spike"));
        let v = json(&out);
        let incl = v["inclusion"].as_array().unwrap();
        assert!(incl.iter().all(|i| i["prob"].as_f64().unwrap() <= 0.5));
        let warned = events(&v, "log")
            .iter()
            .any(|e| e["level"] == "warn" && e["message"].as_str().unwrap().contains("all-spike"));
        assert!(warned, "γ = {gamma}: no all-spike warning in the trace");
    }
}

/// On the 600-row sparse demo (γ = 1.5n, p = 0.2) the negative-site fix of §5 is still
/// active at convergence on x12 and x18: EP continues without it to a true
/// fixed point (two negative prior sites), which rescales the whole score
/// (the AUC risk is scale-free): informative means 5–13% larger than with
/// `--keep-fixes`, closer to SMC's (src/engine/ep/spike_slab/smc_agreement.rs).
#[test]
fn an_active_fix_is_released_at_convergence() {
    let data = common::sparse_demo_600("fix-release");
    let args = ["--inclusion-prior", "0.2"];
    let released = fit_on(&data, &args);
    let kept = fit_on(&data, &[&args[..], &["--keep-fixes"]].concat());
    let rel = &released["details"]["fix_release"];
    assert_eq!(rel["status"], "released");
    assert_eq!(rel["negative_prior_sites"], 2);
    assert_eq!(kept["details"]["fix_release"]["status"], "off (keep_fixes)");
    let mean = |v: &serde_json::Value, k: usize| v["coefficients"][k]["mean"].as_f64().unwrap();
    for k in [2, 6, 11, 17] {
        let ratio = mean(&released, k) / mean(&kept, k);
        assert!(
            (1.03..1.15).contains(&ratio),
            "x{:02}: ratio {ratio}",
            k + 1
        );
    }
}

/// Glass split 15 at γ = 161 (= n; 7 positives, the cell `pacauc reproduce`
/// lost): EP drops every feature but K into the spike, and the score's scale
/// then creeps to its fixed point by ~0.4% a sweep. Before spike-and-slab EP
/// extrapolated that tail it hit 1000 sweeps. It converges now, to the point
/// an η = 0.2 run reaches (the fixed point does not depend on the steps),
/// which agrees with SMC on what a one-feature Gaussian can get right; and
/// the active fix is said.
#[test]
fn glass_split_15_converges_and_agrees_with_smc_on_its_feature() {
    let Some(fit) = glass_split_15() else {
        return;
    };
    let a = fit(&["--method", "ep"]);
    let b = fit(&["--method", "ep", "--damping", "0.2"]);
    let s = fit(&["--method", "smc"]);
    for v in [&a, &b, &s] {
        assert_eq!(v["converged"], true, "{}", v["method"]);
    }
    let (za, zb) = (
        a["log_evidence"].as_f64().unwrap(),
        b["log_evidence"].as_f64().unwrap(),
    );
    // Both stop at Δ < 1e-4·η on a tail falling 0.4% a sweep: up to ~0.01 sd
    // from the limit.
    assert!((za - zb).abs() < 1e-3, "{za} vs {zb}");
    let coef = |v: &serde_json::Value, k: usize, f: &str| v["coefficients"][k][f].as_f64().unwrap();
    for k in 0..9 {
        let (ma, mb) = (coef(&a, k, "mean"), coef(&b, k, "mean"));
        assert!(
            (ma - mb).abs() < 0.02 * coef(&b, k, "sd"),
            "{k}: {ma} vs {mb}"
        );
    }
    let (incl_ep, incl_smc) = (inclusion(&a), inclusion(&s));
    let k = (0..9)
        .max_by(|&i, &j| incl_smc[i].total_cmp(&incl_smc[j]))
        .unwrap();
    assert_eq!(a["coefficients"][k]["name"], "K");
    assert!(
        incl_ep[k] > 0.9 && incl_smc[k] > 0.7,
        "{incl_ep:?} {incl_smc:?}"
    );
    // SMC's posterior of K is a slab/spike mixture (sd 0.65); EP's one
    // Gaussian matches its mean (seen: −0.85 vs −0.85), not its spread.
    let (m_ep, m_smc, sd_smc) = (coef(&a, k, "mean"), coef(&s, k, "mean"), coef(&s, k, "sd"));
    assert!(
        (m_ep - m_smc).abs() < 0.25 * sd_smc,
        "{m_ep} vs {m_smc} ± {sd_smc}"
    );
    let warned = a["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["message"].as_str().unwrap().contains("negative-site fix"));
    assert!(warned, "{}", a["warnings"]);
}

/// The case above at `--damping 0.2` under the anderson controller and the
/// continuation (issue 28): without mixing its sites the direct try at γ = n
/// got "no contraction", the walk stalled at 0.094n and the answer was
/// power EP's (α = 0.5, log Z −12.22). With the pair and prior sites mixed
/// it converges directly, at the default step's fixed point (the former
/// classic driver's: log Z −9.138156).
#[test]
fn glass_split_15_at_a_small_step_converges_under_anderson() {
    let Some(glass) = glass_split_15() else {
        return;
    };
    let fit = |extra: &[&str]| glass(&[&["--method", "ep", "--is-draws", "0"][..], extra].concat());
    let default = fit(&[]);
    let a = fit(&["--damping", "0.2"]);
    assert_eq!(a["converged"], true);
    assert!(a["details"]["power"].is_null(), "{}", a["details"]["power"]);
    let points = a["details"]["gamma"]["path"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "directly at γ: {points:?}");
    let (za, zd) = (
        a["log_evidence"].as_f64().unwrap(),
        default["log_evidence"].as_f64().unwrap(),
    );
    assert!((za - zd).abs() < 1e-3, "{za} vs {zd}");
    assert!((zd + 9.138156).abs() < 1e-3, "{zd}");
}

/// Colon split 17 at γ = 92 (= 2n) under the anderson controller and the
/// continuation (issue 28): the mixing's window without contraction halved
/// η to 0.35, and when the verdict then turned the mixing off, plain damping
/// left classic's fixed point there (Δ ×1.2 a sweep) and power EP answered
/// (α = 0.5, log Z −16.036). Plain damping now restarts at 0.7 and the direct
/// try converges to classic's fixed point (log Z −15.660681, 94 sweeps).
#[test]
fn colon_split_17_converges_under_anderson_at_classics_fixed_point() {
    let path = "../shared/datasets/colon.csv";
    if !std::path::Path::new(path).is_file() {
        eprintln!("skipped: {path} is absent");
        return;
    }
    let a = json(&pacauc(&[
        "fit",
        path,
        "--seed",
        "17",
        "--gamma",
        "92",
        "--prior",
        "spike-slab",
        "--method",
        "ep",
        "--is-draws",
        "0",
        "--ep-start",
        "continuation",
        "--ep-controller",
        "anderson",
    ]));
    assert_eq!(a["converged"], true);
    assert!(a["details"]["power"].is_null(), "{}", a["details"]["power"]);
    let points = a["details"]["gamma"]["path"]["points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "directly at γ: {points:?}");
    let z = a["log_evidence"].as_f64().unwrap();
    assert!((z + 15.660681).abs() < 1e-4 * 15.66, "log Z {z}");
}

/// Colon split 14 at γ = 23 (= n/2), a cell without an EP fixed point in
/// reach (issue 28): the direct try and the walk's point at 0.49n end in a
/// verdict, and the walk hands over to power EP there. It bisected on below
/// 0.49n before (two more failed points, 640 more sweeps) for the same
/// answer: α = 0.5 from the prior, log Z −9.263831.
#[test]
fn colon_split_14_hands_over_to_power_ep_at_the_walks_first_failure() {
    let path = "../shared/datasets/colon.csv";
    if !std::path::Path::new(path).is_file() {
        eprintln!("skipped: {path} is absent");
        return;
    }
    let a = json(&pacauc(&[
        "fit",
        path,
        "--seed",
        "14",
        "--gamma",
        "23",
        "--prior",
        "spike-slab",
        "--method",
        "ep",
        "--is-draws",
        "0",
    ]));
    let power = &a["details"]["power"];
    assert_eq!(power["alpha"], 0.5, "{power}");
    let points = power["ep_path"]["points"].as_array().unwrap();
    let failed: Vec<_> = points.iter().filter(|p| p["converged"] == false).collect();
    assert_eq!(
        failed.len(),
        2,
        "the direct try and one walk point: {points:?}"
    );
    assert_eq!(points.last(), failed.last().copied());
    let sweeps = power["ep_path"]["sweeps"].as_u64().unwrap();
    assert!(sweeps < 200, "{sweeps}");
    let z = a["log_evidence"].as_f64().unwrap();
    assert!((z + 9.263831485).abs() < 1e-6 * 9.26, "log Z {z}");
}

/// Fits of glass split 15 at γ = 161 (= n) with the spike-and-slab prior
/// plus `extra`; None (the test skipped) when the shared data is absent.
fn glass_split_15() -> Option<impl Fn(&[&str]) -> serde_json::Value> {
    let path = "../shared/datasets/glass.csv";
    if !std::path::Path::new(path).is_file() {
        eprintln!("skipped: {path} is absent");
        return None;
    }
    let base = [
        "fit",
        path,
        "--seed",
        "15",
        "--gamma",
        "161",
        "--prior",
        "spike-slab",
    ];
    Some(move |extra: &[&str]| json(&pacauc(&[&base[..], extra].concat())))
}
