#!/usr/bin/env python3
"""Three messy, real-style CSV files for EP's convergence table (docs/BENCHMARKS.md).

Usage:  python3 docs/messy_data.py [OUT_DIR]      (default /tmp/pacauc-messy; seeded, so
        the files are the same on every run; pure Python, no numpy)

What makes them messy, as in real exports: skewed counts (negative binomial, many zeros),
money amounts (log-normal bodies with Pareto tails: a few rows 50-1000x the median), a few
categoricals (text levels, one-hot encoded by pacauc), a few missing cells, a target that
depends on the *log* of the amounts (the linear score on raw values is misspecified), and
overlapping classes (held-out AUC 0.7-0.85).

- clinic.csv   500 rows,  9 columns: the size of the "small clinical file" of issue 17.
- retail.csv  6000 rows, 10 columns: churn of shop customers, 15% positive.
- claims.csv  3000 rows, 10 columns: fraud among insurance claims, 8% positive, zero-heavy
              amounts and counts.
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
        visits = negbin(r, 3.0, 0.8)
        admissions = negbin(r, 0.4, 0.5)
        crp = round(max(0.1, r.lognormvariate(math.log(4.0), 1.1)), 1)  # a lab value, log-normal
        cost = amount(r, 1800.0, 0.9, 0.03, 1.2)
        smoker = r.choice(["yes", "no", "no", "no"])
        site = r.choice(["north", "south", "east", "west"])
        insured = r.choice(["public", "private", "none"])
        z = (-3.2 + 0.035 * (age - 58) + 0.06 * (bmi - 27) + 0.25 * math.log1p(visits)
             + 0.6 * math.log1p(admissions) + 0.45 * math.log(crp) + 0.25 * math.log(cost / 1800)
             + (0.5 if smoker == "yes" else 0.0) + (0.3 if site == "east" else 0.0)
             + r.gauss(0.0, 0.8))
        rows.append([age, maybe_missing(r, bmi, 0.01), visits, admissions, crp, cost, smoker,
                     site, insured, "sick" if label(r, z + 1.6) else "well"])
    head = ["age", "bmi", "visits_12m", "admissions_5y", "crp_mg_l", "cost_eur", "smoker",
            "site", "insurance", "outcome"]
    return head, rows


def retail(r):
    rows = []
    for _ in range(6000):
        tenure = int(r.expovariate(1 / 30.0)) + 1  # months
        orders = negbin(r, 2.0 + 0.15 * tenure, 0.7)
        spend = round(sum(amount(r, 45.0, 0.8, 0.02, 1.1) for _ in range(min(orders, 60))), 2)
        returns = negbin(r, 0.1 + 0.08 * orders, 0.6)
        days_since = int(r.expovariate(1 / 40.0))
        tickets = negbin(r, 0.6, 0.4)
        discount = round(r.betavariate(0.7, 6.0), 3)
        channel = r.choice(["web", "web", "app", "store"])
        region = r.choice(["NE", "NW", "SE", "SW", "C", "islands"])
        plan = r.choice(["basic", "basic", "plus", "gold"])
        z = (-1.9 + 0.022 * days_since - 0.45 * math.log1p(orders) - 0.12 * math.log1p(spend)
             + 0.35 * math.log1p(tickets) + 0.3 * math.log1p(returns) + 1.5 * discount
             - 0.012 * tenure + (0.35 if channel == "store" else 0.0)
             - (0.3 if plan == "gold" else 0.0) + r.gauss(0.0, 0.9))
        rows.append([tenure, orders, maybe_missing(r, spend, 0.005), returns, days_since, tickets,
                     discount, channel, region, plan, label(r, z)])
    head = ["tenure_months", "orders", "spend", "returns", "days_since_order", "support_tickets",
            "discount_rate", "channel", "region", "plan", "churned"]
    return head, rows


def claims(r):
    rows = []
    for _ in range(3000):
        age = int(min(90, max(18, r.gauss(44, 14))))
        vehicle_value = amount(r, 14000.0, 0.6, 0.02, 1.5)
        claim = 0.0 if r.random() < 0.35 else amount(r, 2500.0, 1.2, 0.04, 1.05)
        prior_claims = negbin(r, 0.5, 0.3)
        days_to_report = int(r.expovariate(1 / 6.0)) if r.random() < 0.9 else int(r.expovariate(1 / 120.0))
        witnesses = negbin(r, 0.7, 1.0)
        policy_age = round(r.expovariate(1 / 3.0), 1)
        vehicle = r.choice(["sedan", "suv", "van", "sport", "truck"])
        night = r.choice(["yes", "no", "no", "no"])
        z = (-3.9 + 0.35 * math.log1p(claim / 1000) + 0.5 * math.log1p(prior_claims)
             + 0.3 * math.log1p(days_to_report) - 0.35 * witnesses - 0.2 * math.log1p(policy_age)
             + (0.6 if vehicle == "sport" else 0.0) + (0.5 if night == "yes" else 0.0)
             - 0.01 * (age - 44) + r.gauss(0.0, 0.7))
        rows.append([age, vehicle_value, claim, prior_claims, days_to_report, witnesses,
                     maybe_missing(r, policy_age, 0.01), vehicle, night, label(r, z)])
    head = ["driver_age", "vehicle_value", "claim_amount", "prior_claims", "days_to_report",
            "witnesses", "policy_years", "vehicle", "night", "fraud"]
    return head, rows


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/pacauc-messy"
    os.makedirs(out, exist_ok=True)
    for seed, (name, make) in enumerate([("clinic", clinic), ("retail", retail), ("claims", claims)]):
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
