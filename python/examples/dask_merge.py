"""R independent SMC runs on a Dask cluster, pooled into one record.

Each task fits run r of R (`runs=R, run=r`: the seed `--runs R` gives run r)
on the same CSV file, which every worker must be able to read at the same
path, and returns its record as JSON; `pacauc.merge` pools them into the
record `runs=R` makes in one process (R-hat across runs, log Z mean ± sd,
the pooled cloud) — equal to `pacauc fit DATA --method smc --runs R`,
timings aside.

    python dask_merge.py DATA.csv [R] [SCHEDULER]   # no SCHEDULER: a local cluster

Workers should be processes (each run uses every core of its worker through
its own thread pool; give `n_jobs` to share a machine).
"""

import sys

import pacauc


def one_run(path, r, runs, settings):
    est = pacauc.fit_file(path, method="smc", runs=runs, run=r, **settings)
    return est.to_json()


def pooled(client, path, runs, **settings):
    futures = [client.submit(one_run, path, r, runs, settings, pure=False) for r in range(1, runs + 1)]
    return pacauc.merge(client.gather(futures))


def main():
    from dask.distributed import Client, LocalCluster

    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    if len(sys.argv) > 3:
        client = Client(sys.argv[3])
    else:
        client = Client(LocalCluster(n_workers=min(runs, 2), threads_per_worker=1, processes=True))
    with client:
        est = pooled(client, path, runs, particles=2000, seed=1)
    r = est.record_["runs"]
    print(f"{r['count']} runs: log Z {r['log_z']['mean']:.3f} ± {r['log_z']['sd']:.3f}, "
          f"R-hat max {r['rhat_max']:.4f} ({r['rhat_worst']})")


if __name__ == "__main__":
    main()
