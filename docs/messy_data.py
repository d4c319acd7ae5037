#!/usr/bin/env python3
"""Three messy, real-style CSV files for EP's convergence table (docs/BENCHMARKS.md).

Usage:  python3 docs/messy_data.py [OUT_DIR]      (default /tmp/pacauc-messy; seeded, so
        the files are the same on every run; pure Python, no numpy)

What makes them messy, as in real exports: skewed counts (negative binomial, many zeros),
money amounts (log-normal bodies with Pareto tails: a few rows 50-1000x the median), sentinel
codes mixed into numbers (-1 = never, 999 = unknown, 99999 = top-coded), a few
categoricals (text levels, one-hot encoded by pacauc), a few missing cells, a target that
depends on the *log* of the amounts (the linear score on raw values is misspecified), and
overlapping classes (held-out AUC 0.7-0.85).

- clinic.csv   500 rows,  9 features: the size of the "small clinical file" of issue 17; costs
              with a Pareto tail, over-dispersed counts, a 999 "unknown" sentinel.
- bank.csv    6000 rows,  9 features: bank-marketing-like; balances with negatives and a heavy
              tail, a -1 "never contacted" sentinel, rare huge counts.
- claims.csv  3000 rows, 10 features: census-like fraud, rare positives; zero-heavy gains and
              losses with a 99999 sentinel, claim amounts with an infinite-variance tail.
"""
import math
import os
import random
import sys


def poisson(r, lam):
    """Poisson draw by inversion (lam < ~500)."""
    u, k, p = r.random(), 0, math.exp(-lam)
    c = p
    while u > c and k < 10000:
        k += 1
        p *= lam / k
        c += p
    return k


def negbin(r, mean, shape):
    """Negative binomial as a gamma-Poisson mixture: over-dispersed counts."""
    return poisson(r, r.gammavariate(shape, mean / shape))


def amount(r, median, sigma, tail_p, tail_alpha):
    """A money amount: log-normal body, with probability tail_p a Pareto tail."""
    a = median * math.exp(sigma * r.gauss(0.0, 1.0))
    if r.random() < tail_p:
        a *= 10.0 * r.paretovariate(tail_alpha)
    return round(a, 2)


def label(r, logit):
    return 1 if r.random() < 1.0 / (1.0 + math.exp(-logit)) else 0


def maybe_missing(r, v, p):
    return "NA" if r.random() < p else v


def clinic(r):
    rows = []
    for _ in range(500):
        age = int(min(95, max(18, r.gauss(58, 15))))
        bmi = round(min(60, max(15, r.lognormvariate(math.log(27), 0.18))), 1)
        visits = negbin(r, 3.0, 0.5)
        if r.random() < 0.01:
            visits *= 20  # a few frequent attenders
        admissions = negbin(r, 0.4, 0.3)
        crp = round(max(0.1, r.lognormvariate(math.log(4.0), 1.3)), 1)  # a lab value, log-normal
        cost = amount(r, 1800.0, 1.0, 0.05, 0.9)
        icu_days = 999 if r.random() < 0.04 else (0 if r.random() < 0.85 else negbin(r, 4.0, 0.6))
        smoker = r.choice(["yes", "no", "no", "no"])
        site = r.choice(["north", "south", "east", "west"])
        z = (-1.6 + 0.035 * (age - 58) + 0.06 * (bmi - 27) + 0.25 * math.log1p(visits)
             + 0.6 * math.log1p(admissions) + 0.45 * math.log(crp) + 0.25 * math.log(cost / 1800)
             + (0.4 if 0 < icu_days < 999 else 0.0)
             + (0.5 if smoker == "yes" else 0.0) + (0.3 if site == "east" else 0.0)
             + r.gauss(0.0, 0.8))
        rows.append([age, maybe_missing(r, bmi, 0.01), visits, admissions, crp, cost, icu_days,
                     smoker, site, "sick" if label(r, z) else "well"])
    head = ["age", "bmi", "visits_12m", "admissions_5y", "crp_mg_l", "cost_eur", "icu_days",
            "smoker", "site", "outcome"]
    return head, rows


def bank(r):
    """Bank-marketing-like: balances with negatives and a heavy tail, contact counts with a
    long tail, a 'days since last contact' sentinel (-1 = never), rare huge 'previous'."""
    rows = []
    for _ in range(6000):
        age = int(min(95, max(18, r.gauss(41, 11))))
        balance = round(amount(r, 450.0, 1.4, 0.03, 1.0) - (r.expovariate(1 / 800.0) if r.random() < 0.08 else 0.0), 2)
        campaign = 1 + negbin(r, 1.8, 0.5)
        contacted = r.random() < 0.18
        pdays = int(r.uniform(1, 871)) if contacted else -1
        previous = negbin(r, 2.5, 0.4) if contacted else 0
        if r.random() < 0.002:
            previous = int(r.uniform(40, 275))
        duration = int(r.lognormvariate(math.log(180), 0.8))
        job = r.choice(["admin", "blue-collar", "management", "technician", "services", "retired"])
        month = r.choice(["may", "may", "jun", "jul", "aug", "nov", "mar"])
        contact = r.choice(["cellular", "cellular", "telephone", "unknown"])
        z = (-2.6 + 0.0045 * duration - 0.12 * campaign + 0.18 * math.log1p(max(balance, 0) / 100)
             + (0.9 if 0 < pdays < 200 else 0.0) + 0.3 * math.log1p(previous)
             + (0.6 if month == "mar" else 0.0) - (0.4 if contact == "unknown" else 0.0)
             + (0.5 if job == "retired" else 0.0) + 0.01 * (age - 41) + r.gauss(0.0, 0.9))
        rows.append([age, balance, campaign, pdays, previous, maybe_missing(r, duration, 0.005), job,
                     month, contact, label(r, z)])
    head = ["age", "balance", "campaign", "pdays", "previous", "duration", "job", "month",
            "contact", "subscribed"]
    return head, rows


def claims(r):
    """Census-like claims: zero-heavy gains and losses with a 99999 sentinel, amounts with a
    Pareto tail, counts, a few categoricals; a rare positive class."""
    rows = []
    for _ in range(3000):
        age = int(min(90, max(18, r.gauss(44, 14))))
        vehicle_value = amount(r, 14000.0, 0.6, 0.02, 1.5)
        claim = 0.0 if r.random() < 0.35 else amount(r, 2500.0, 1.2, 0.05, 0.8)
        gain = 0 if r.random() < 0.92 else (99999 if r.random() < 0.05 else int(r.lognormvariate(math.log(7000), 0.9)))
        loss = 0 if r.random() < 0.95 else int(r.gauss(1900, 350))
        prior_claims = negbin(r, 0.5, 0.3)
        days_to_report = int(r.expovariate(1 / 6.0)) if r.random() < 0.9 else int(r.expovariate(1 / 120.0))
        hours = 40 if r.random() < 0.5 else int(min(99, max(1, r.gauss(40, 12))))
        vehicle = r.choice(["sedan", "suv", "van", "sport", "truck"])
        night = r.choice(["yes", "no", "no", "no"])
        z = (-3.6 + 0.35 * math.log1p(claim / 1000) + 0.5 * math.log1p(prior_claims)
             + 0.3 * math.log1p(days_to_report) + (1.2 if gain > 5000 else 0.0)
             + (0.7 if loss > 0 else 0.0) + 0.015 * (hours - 40)
             + (0.6 if vehicle == "sport" else 0.0) + (0.5 if night == "yes" else 0.0)
             - 0.01 * (age - 44) + r.gauss(0.0, 0.7))
        rows.append([age, vehicle_value, claim, gain, loss, prior_claims, days_to_report,
                     maybe_missing(r, hours, 0.01), vehicle, night, label(r, z)])
    head = ["driver_age", "vehicle_value", "claim_amount", "capital_gain", "capital_loss",
            "prior_claims", "days_to_report", "hours_per_week", "vehicle", "night", "fraud"]
    return head, rows


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/pacauc-messy"
    os.makedirs(out, exist_ok=True)
    for seed, (name, make) in enumerate([("clinic", clinic), ("bank", bank), ("claims", claims)]):
        head, rows = make(random.Random(1000 + seed))
        path = os.path.join(out, name + ".csv")
        with open(path, "w") as f:
            f.write(",".join(head) + "\n")
            for row in rows:
                f.write(",".join(str(v) for v in row) + "\n")
        pos = sum(1 for row in rows if row[-1] in (1, "sick"))
        print(f"{path}: {len(rows)} rows, {len(head) - 1} columns, {pos} positive")


if __name__ == "__main__":
    main()
