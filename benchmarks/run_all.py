"""Run every benchmark (``benchmarks/bench_*.py``) and collect their JSON results.

Each benchmark module defines ``main(out: pathlib.Path) -> dict``: it measures its targets and
its baselines in the same run, prints a short table, writes ``out/<name>.json`` and returns the
same dictionary. Speeds are reported as ratios against a baseline measured in that run;
``summary.json`` also records the machine (platform, CPU model, CPU counts: ``_timing.machine``),
since absolute times differ severalfold between machines.

Usage: ``python benchmarks/run_all.py [--out DIR] [--only NAME ...]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _timing import machine  # noqa: E402 (the benchmarks' folder)


def _load(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(out: pathlib.Path, only: list[str] | None = None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    here = pathlib.Path(__file__).resolve().parent
    results = {"machine": machine(), "python": sys.version.split()[0], "benchmarks": {}}
    for path in sorted(here.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_")
        if only and name not in only:
            continue
        print(f"== {path.name}", flush=True)
        start = time.perf_counter()
        results["benchmarks"][name] = _load(path).main(out)
        print(f"   ({time.perf_counter() - start:.1f} s)", flush=True)
    (out / "summary.json").write_text(json.dumps(results, indent=2, default=str))
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/bench"))
    parser.add_argument("--only", nargs="*", help="benchmark names, e.g. routing sdm")
    args = parser.parse_args()
    run(args.out, args.only)
