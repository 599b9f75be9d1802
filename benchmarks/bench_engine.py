"""Sweep speed under real conditions, ratios measured in one run:

1. neighbour: rows of the ``routers`` quick sweep computed in this process, quiet and beside
   one busy single-threaded process (``while True: pass``), under the thread policy (one
   thread: ``experiments.runner.threads``) and under torch's and Numba's default thread counts (one
   per core), each busy time over the quiet time of the same rows. Wanted: ≤ 2.2 with the
   policy.
2. workers: rows per second of the ``fig2`` quick sweep (all its rows, in sweep order) on a
   local Dask cluster of 2 workers over 1 worker (``experiments.runner.engine``; cluster start and
   each worker's first row, its imports, not counted). Wanted: ≥ 1.7 on 2 free cores. (A cut
   of 40 rows, as an earlier version timed, is ~10 s of work, where the last long row — an
   exact fit of width 4096, ~3 s — leaves one worker idle for a third of the time.)

``--cpus N`` pins the benchmark (and its workers and neighbour) to N CPUs, to measure the
2-core case on a bigger machine. Rows are a spread over the sweep's models and sizes
(``--rows``); a condition stops after ``--cap`` seconds (the default threads beside a
neighbour can take 10–35× longer), and its ratio is then taken over the rows it finished.

Usage: ``python benchmarks/bench_engine.py [--out DIR] [--cpus 2] [--rows 14] [--fig2-rows N]``
(``--fig2-rows``: a spread of N rows instead of the whole sweep).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _timing import machine, thread_limit  # noqa: E402 (the benchmarks' folder)


def spread(name: str, preset: str, n_rows: int) -> list[tuple]:
    """``n_rows`` (config, spec, seed) rows of an experiment, taken from its model kinds in
    turn (each kind's rows in sweep order, spread over its sizes), so that every kind weighs
    alike whatever its share of the sweep."""
    from experiments.papers.catalogue import experiment_configs

    by_kind: dict[str, list] = {}
    for c in experiment_configs(name, preset):
        for seed in c.seeds:
            for spec in c.models:
                by_kind.setdefault(spec.kind, []).append((c, spec, seed))
    per_kind = -(-n_rows // len(by_kind))
    picked = {kind: rows[::max(1, len(rows) // per_kind)][:per_kind]
              for kind, rows in by_kind.items()}
    return [row for i in range(per_kind) for rows in picked.values() if i < len(rows)
            for row in [rows[i]]][:n_rows]


@contextlib.contextmanager
def busy_neighbour():
    """One single-threaded busy process beside the block (on the same CPUs)."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        yield process
    finally:
        process.kill()
        process.wait()


def time_rows(rows, cap_s: float) -> list[float]:
    """Seconds of each row computed in this process (``compute_row`` on the CPU), stopping
    after ``cap_s`` seconds."""
    from experiments.runner.rows import compute_row

    seconds, start = [], time.perf_counter()
    for config, spec, seed in rows:
        t = time.perf_counter()
        compute_row(config, spec, seed, "cpu")
        seconds.append(time.perf_counter() - t)
        if time.perf_counter() - start > cap_s:
            break
    return seconds


def neighbour_ratios(rows, cap_s: float) -> dict:
    """Busy over quiet time of the same rows, with one thread and with the default threads."""
    from experiments.runner.threads import single_threaded

    cpus = len(os.sched_getaffinity(0))
    time_rows(rows, cap_s)  # warm-up: imports, Numba compilation (minutes on a new machine)
    result = {}
    for policy, threads in (("one_thread", single_threaded), ("default_threads",
                                                              lambda: thread_limit(cpus))):
        with threads():
            quiet = time_rows(rows, cap_s)
            with busy_neighbour():
                busy = time_rows(rows, cap_s)
        n = min(len(quiet), len(busy))
        result[policy] = {"threads": 1 if policy == "one_thread" else cpus,
                          "rows_quiet": len(quiet), "rows_busy": len(busy),
                          "quiet_s": round(sum(quiet[:n]), 3), "busy_s": round(sum(busy[:n]), 3),
                          "busy_over_quiet": round(sum(busy[:n]) / sum(quiet[:n]), 3)}
        print(f"  {policy:16s} {n} rows: quiet {sum(quiet[:n]):7.2f} s, beside a busy process "
              f"{sum(busy[:n]):7.2f} s: x{sum(busy[:n]) / sum(quiet[:n]):.2f}", flush=True)
    return result


def warm_up(rows) -> None:
    """Compute ``rows`` here (on a worker, through ``Client.run``), discarding them."""
    from experiments.runner.engine import run_task
    from experiments.kinds.registry import model_kind

    for config, spec, seed in rows:
        run_task(config, spec, seed, model_kind(spec.kind), "cpu")


def worker_rows_per_second(rows, workers: int) -> dict:
    """Rows per second of ``rows`` on a local cluster of ``workers`` (warm workers)."""
    from experiments.runner.engine import Engine

    # each kind once on every worker first: imports, Numba compilation (cached on disk after
    # the first worker), so that the timed rows measure the steady state. Not through
    # ``engine.rows``: it computes rows of one identity once, on one worker
    first = list({spec.kind: (c, spec, seed) for c, spec, seed in reversed(rows)}.values())
    with Engine(workers=workers, device="cpu") as engine:
        engine.client.run(warm_up, first)
        start = time.perf_counter()
        n = sum(1 for _ in engine.rows(rows))
        seconds = time.perf_counter() - start
    return {"workers": workers, "rows": n, "seconds": round(seconds, 3),
            "rows_per_s": round(n / seconds, 4)}


def sweep_rows(name: str, preset: str) -> list[tuple]:
    """Every (config, spec, seed) row of an experiment, in the order of its sweep."""
    from experiments.papers.catalogue import experiment_configs

    return [(c, spec, seed) for c in experiment_configs(name, preset) for seed in c.seeds
            for spec in c.models]


def main(out: pathlib.Path, cpus: int | None = None, n_rows: int = 14,
         fig2_rows: int | None = None, cap_s: float = 240.0) -> dict:
    """Run both measurements; write ``out/engine.json``."""
    if cpus is not None:
        os.sched_setaffinity(0, list(sorted(os.sched_getaffinity(0)))[:cpus])
    result = {"machine": machine(), "cpus_used": len(os.sched_getaffinity(0))}
    print(f"  neighbour: {n_rows} rows of the routers quick sweep on "
          f"{result['cpus_used']} CPUs", flush=True)
    result["neighbour"] = neighbour_ratios(spread("routers", "quick", n_rows), cap_s)
    rows = (sweep_rows("fig2", "quick") if fig2_rows is None
            else spread("fig2", "quick", fig2_rows))
    one = worker_rows_per_second(rows, 1)
    two = worker_rows_per_second(rows, 2)
    result["workers"] = {"one": one, "two": two,
                         "two_over_one": round(two["rows_per_s"] / one["rows_per_s"], 3)}
    print(f"  fig2 quick, {len(rows)} rows: 1 worker {one['rows_per_s']:.3f} rows/s, 2 workers "
          f"{two['rows_per_s']:.3f} rows/s: x{result['workers']['two_over_one']:.2f}",
          flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "engine.json").write_text(json.dumps(result, indent=2, default=str))
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/bench"))
    parser.add_argument("--cpus", type=int, default=None)
    parser.add_argument("--rows", type=int, default=14)
    parser.add_argument("--fig2-rows", type=int, default=None)
    parser.add_argument("--cap", type=float, default=240.0)
    args = parser.parse_args()
    main(args.out, args.cpus, args.rows, args.fig2_rows, args.cap)
