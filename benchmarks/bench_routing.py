"""Speed of the routing hashes against plain-numpy recipes.

All numbers come from one run on the same data: N = 10⁶ points, dim = 64, float32, uniform on
a random 4-dimensional subspace of R^64 (coordinates of a point of [-1, 1]^4 in an orthonormal
basis, the input model of Baykal et al. 2022, Theorem 4.1), 16 bits / 16 hashes per key.

Measured (best of ``ROUNDS`` interleaved repetitions, so that load from other processes on
the machine hits all contenders alike, with a pause of ``PAUSE_S`` after each call: the
worker threads of OpenBLAS and of OpenMP spin for a while after a call, and without the pause
the contender timed next shares the cores with them; on 2 cores this made the hyperplane
kernel 1.7x slower right after the numpy recipe than after an idle pause):
- ``HyperplaneLSH.bucket_ids`` vs the best numpy recipe (chunked ``X @ A.T`` then packing the
  signs with a second small matmul; the chunk size is tuned in the run), and faiss
  ``IndexLSH(64, 16, rotate_data=True).sa_encode`` when faiss-cpu is installed;
- ``EuclideanLSH.bucket_ids`` (exact codebook, fresh hasher each time) vs chunked numpy
  ``floor`` + ``np.unique(axis=0, return_inverse=True)``;
- the memory-bandwidth bound: bytes moved per point (X row read + key written) divided by the
  bandwidth of a large ``np.copyto`` measured in the same run, and achieved / bound;
- ``routing.bucket_geometry.n_nonempty_buckets`` on the 10⁶ hyperplane keys vs ``np.sort`` +
  counting changes;
- peak extra memory of each ``bucket_ids`` call beyond its input and output (peak resident
  set via /proc/self/status VmHWM, reset through /proc/self/clear_refs, which also sees
  Numba's allocations; tracemalloc's peak of numpy allocations as a cross-check), against
  2× the output size;
- JIT compile time with an empty Numba cache, in a subprocess, and the time of the first call
  in this process (which loads the cached machine code).

Usage: ``python benchmarks/bench_routing.py [--out DIR]`` or through ``benchmarks/run_all.py``.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

N, DIM, BITS, SUBSPACE = 1_000_000, 64, 16, 4
WIDTH = 1.0  # Euclidean bucket width on the subspace data (|x| <= 2): ~4·10⁴ buckets
ROUNDS = 5
PAUSE_S = 0.3  # idle time after each timed call (see the module docstring)
SEED = 0


def make_data(seed: int = SEED) -> np.ndarray:
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((DIM, SUBSPACE)))  # (64, 4) orthonormal
    Z = rng.uniform(-1, 1, (N, SUBSPACE))
    return np.ascontiguousarray((Z @ basis.T).astype(np.float32))  # (N, 64)


# --- numpy baselines -------------------------------------------------------------------------

def numpy_hyperplane(X: np.ndarray, directions: np.ndarray, chunk: int) -> np.ndarray:
    """Chunked sgemm, then the signs packed by a second (chunk, 16) @ (16,) matmul."""
    A_T = np.ascontiguousarray(directions.astype(np.float32).T)  # (64, 16)
    powers = (2.0 ** np.arange(directions.shape[0])).astype(np.float32)
    out = np.empty(len(X), np.int64)
    for s in range(0, len(X), chunk):
        proj = X[s:s + chunk] @ A_T
        out[s:s + chunk] = ((proj >= 0).astype(np.float32) @ powers).astype(np.int64)
    return out


def numpy_euclidean(X: np.ndarray, directions: np.ndarray, offsets: np.ndarray, width: float,
                    chunk: int = 65536) -> np.ndarray:
    """Chunked floor codes, then np.unique(axis=0) for exact bucket ids."""
    A_T = np.ascontiguousarray(directions.astype(np.float32).T)
    codes = np.empty((len(X), directions.shape[0]), np.int64)
    for s in range(0, len(X), chunk):
        proj = (X[s:s + chunk] @ A_T).astype(np.float64)
        codes[s:s + chunk] = np.floor((proj + offsets) / width)
    _, inverse = np.unique(codes, axis=0, return_inverse=True)
    return inverse.ravel()


def numpy_count(keys: np.ndarray) -> int:
    s = np.sort(keys)
    return int(1 + np.count_nonzero(s[1:] != s[:-1]))


# --- measurement helpers ---------------------------------------------------------------------

def best_times(contenders: dict, rounds: int = ROUNDS) -> dict:
    """Best wall time of each callable over ``rounds`` interleaved rounds."""
    best = {name: float("inf") for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
            time.sleep(PAUSE_S)
    return best


def copy_bandwidth(n_bytes: int = 512 * 2**20) -> float:
    """Bytes moved (read + written) per second by np.copyto of a large array, best of 5."""
    src = np.ones(n_bytes // 8)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    t = min(_timed(lambda: np.copyto(dst, src)) for _ in range(5))
    return 2 * n_bytes / t


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _status_kb(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _release_free_memory() -> None:
    gc.collect()
    try:  # return freed heap pages to the OS so that RSS counts live memory only
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:  # pragma: no cover - not glibc
        pass


def peak_extra_bytes(fn) -> dict:
    """Peak memory of ``fn()`` beyond what was resident before and beyond its result."""
    result = fn()  # warm up: thread pools, caches
    del result
    out = {}
    try:
        _release_free_memory()
        pathlib.Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to VmRSS
        before = _status_kb("VmRSS") * 1024
        result = fn()
        out["rss_extra_bytes"] = _status_kb("VmHWM") * 1024 - before - result.nbytes
    except OSError:  # pragma: no cover - not Linux, or not allowed
        out["rss_extra_bytes"] = None
    del result
    _release_free_memory()
    tracemalloc.start()
    result = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out["tracemalloc_extra_bytes"] = peak - result.nbytes
    out["output_bytes"] = result.nbytes
    return out


COMPILE_SNIPPET = """
import time, numpy as np
t0 = time.perf_counter()
from routing.hyperplane_lsh import HyperplaneLSH
from routing.euclidean_lsh import EuclideanLSH
from routing.cross_polytope_lsh import CrossPolytopeLSH
from routing.uniform_hash import UniformHash
t1 = time.perf_counter()
X = np.random.default_rng(0).standard_normal((10, 64)).astype(np.float32)
times = {"import": t1 - t0}
for name, fn in [("hyperplane", lambda: HyperplaneLSH(64, 16).bucket_ids(X)),
                 ("euclidean", lambda: EuclideanLSH(64, 16, 0.5).bucket_ids(X)),
                 ("cross_polytope", lambda: CrossPolytopeLSH(64, 2).bucket_ids(X)),
                 ("uniform", lambda: UniformHash(100).bucket_ids(X))]:
    t = time.perf_counter(); fn(); times[name] = time.perf_counter() - t
print(repr(times))
"""


def compile_times() -> dict:
    """Seconds of the first float32 call of each family with an empty Numba cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        res = subprocess.run([sys.executable, "-c", COMPILE_SNIPPET], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        return {"error": res.stderr[-2000:]}
    return eval(res.stdout.strip().splitlines()[-1])  # a dict literal printed by the snippet


# --- the benchmark ---------------------------------------------------------------------------

def main(out: pathlib.Path) -> dict:
    from routing.cross_polytope_lsh import CrossPolytopeLSH
    from routing.euclidean_lsh import EuclideanLSH
    from routing.hyperplane_lsh import HyperplaneLSH
    from routing.uniform_hash import UniformHash

    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {"N": N, "dim": DIM, "bits_or_hashes": BITS, "dtype": "float32",
                     "data": f"uniform on a random {SUBSPACE}-dim subspace, coordinates in [-1, 1]",
                     "rounds": ROUNDS, "pause_s": PAUSE_S, "cpu_count": os.cpu_count(),
                     "load_average_start": os.getloadavg()}
    X = make_data()

    # JIT: first calls in this process (cache load or compile), then a cold-cache subprocess
    first = {}
    for name, fn in [("hyperplane", lambda: HyperplaneLSH(DIM, BITS).bucket_ids(X[:10])),
                     ("euclidean", lambda: EuclideanLSH(DIM, BITS, WIDTH).bucket_ids(X[:10]))]:
        first[name] = _timed(fn)
    results["first_call_s_this_process"] = first
    results["jit_compile_s_cold_cache"] = compile_times()

    bandwidth = copy_bandwidth()
    results["copy_bandwidth_GBps"] = bandwidth / 1e9

    # Hyperplane
    hp = HyperplaneLSH(DIM, BITS, seed=SEED)
    directions = hp.directions[0]
    contenders = {f"numpy_chunk{c}": (lambda c=c: numpy_hyperplane(X, directions, c))
                  for c in (4096, 16384, 65536)}
    contenders["sparselab"] = lambda: hp.bucket_ids(X)
    faiss_index = None
    try:
        import faiss

        faiss_index = faiss.IndexLSH(DIM, BITS, True, False)  # rotate_data, no thresholds
        contenders["faiss_sa_encode"] = lambda: faiss_index.sa_encode(X)
        results["faiss_version"] = faiss.__version__
    except ImportError:
        results["faiss_version"] = None
    times = best_times(contenders)
    numpy_best = min(v for k, v in times.items() if k.startswith("numpy"))
    keys = hp.bucket_ids(X)[:, 0]
    agree = float(np.mean(keys == numpy_hyperplane(X, directions, 16384)))
    bytes_per_point = X.shape[1] * X.itemsize + 8  # read one row, write one int64 key
    bound = bandwidth / bytes_per_point
    results["hyperplane"] = {
        "points_per_s": N / times["sparselab"],
        "numpy_best_points_per_s": N / numpy_best,
        "numpy_points_per_s_by_chunk": {k: N / v for k, v in times.items() if k.startswith("numpy")},
        "speedup_vs_numpy": numpy_best / times["sparselab"],
        "faiss_points_per_s": N / times["faiss_sa_encode"] if faiss_index else None,
        "speedup_vs_faiss": times["faiss_sa_encode"] / times["sparselab"] if faiss_index else None,
        "bytes_per_point": bytes_per_point,
        "bandwidth_bound_points_per_s": bound,
        "achieved_over_bound": N / times["sparselab"] / bound,
        "keys_equal_to_numpy": agree,
    }

    # Euclidean
    eu = EuclideanLSH(DIM, BITS, WIDTH, seed=SEED)
    times = best_times({
        "numpy_unique": lambda: numpy_euclidean(X, eu.directions[0], eu.offsets[0], WIDTH),
        "sparselab": lambda: EuclideanLSH(DIM, BITS, WIDTH, seed=SEED).bucket_ids(X),
    }, rounds=3)
    ids = eu.bucket_ids(X)[:, 0]
    ref = numpy_euclidean(X, eu.directions[0], eu.offsets[0], WIDTH)
    # float32 projections by BLAS and by the kernel can round differently for points at a
    # bucket boundary: compare the codes, and the partitions on the points with equal codes
    A_T = eu.directions[0].astype(np.float32).T
    ref_codes = np.floor(((X @ A_T).astype(np.float64) + eu.offsets[0]) / WIDTH).astype(np.int64)
    same_codes = (eu.hash(X)[:, 0] == ref_codes).all(axis=1)
    pairs = np.unique(np.stack([ids[same_codes], ref[same_codes]], axis=1), axis=0)
    consistent = len(pairs) == len(np.unique(ids[same_codes])) == len(np.unique(ref[same_codes]))
    results["euclidean"] = {
        "width": WIDTH,
        "buckets": eu.n_buckets_seen(),
        "points_per_s": N / times["sparselab"],
        "numpy_points_per_s": N / times["numpy_unique"],
        "speedup_vs_numpy": times["numpy_unique"] / times["sparselab"],
        "achieved_over_bound": N / times["sparselab"] / bound,
        "codes_equal_to_numpy": float(same_codes.mean()),
        "same_partition_on_equal_codes": bool(consistent),
        "codebook_bytes": eu.codebook_nbytes,
    }

    # Counting non-empty buckets
    try:
        from routing.bucket_geometry import n_nonempty_buckets

        times = best_times({"numpy_sort": lambda: numpy_count(keys),
                            "sparselab": lambda: n_nonempty_buckets(keys)})
        assert n_nonempty_buckets(keys) == numpy_count(keys)
        results["count_nonempty"] = {
            "buckets": numpy_count(keys),
            "time_ratio_vs_numpy_sort": times["sparselab"] / times["numpy_sort"],
            "speedup_vs_numpy_sort": times["numpy_sort"] / times["sparselab"],
        }
    except ImportError as err:
        results["count_nonempty"] = {"error": f"routing.bucket_geometry: {err}"}

    # Other families (no baseline; for scale)
    cp = CrossPolytopeLSH(DIM, n_rotations=2, seed=SEED)
    un = UniformHash(1 << 16, seed=SEED)
    times = best_times({"cross_polytope_2rot": lambda: cp.bucket_ids(X),
                        "uniform": lambda: un.bucket_ids(X)}, rounds=2)
    results["other_points_per_s"] = {k: N / v for k, v in times.items()}

    # Peak extra memory
    memory = {}
    fresh = {}

    def euclidean_fresh():
        fresh["hasher"] = EuclideanLSH(DIM, BITS, WIDTH, seed=SEED)
        return fresh["hasher"].bucket_ids(X)

    for name, fn in [("hyperplane", lambda: hp.bucket_ids(X)), ("euclidean", euclidean_fresh)]:
        m = peak_extra_bytes(fn)
        m["limit_bytes"] = 2 * m["output_bytes"]
        if name == "euclidean":  # the codebook is state kept by the hasher, not scratch
            m["codebook_bytes"] = fresh["hasher"].codebook_nbytes
            m["rss_extra_without_codebook_bytes"] = (
                None if m["rss_extra_bytes"] is None else m["rss_extra_bytes"] - m["codebook_bytes"])
        memory[name] = m
    results["peak_extra_memory"] = memory
    results["load_average_end"] = os.getloadavg()

    _print_table(results)
    (out / "routing.json").write_text(json.dumps(results, indent=2, default=str))
    return results


def _print_table(r: dict) -> None:
    hp, eu = r["hyperplane"], r["euclidean"]
    rows = [
        ("hyperplane bucket_ids", f"{hp['points_per_s'] / 1e6:.1f} M pts/s",
         f"{hp['speedup_vs_numpy']:.2f}x numpy (best {hp['numpy_best_points_per_s'] / 1e6:.1f} M/s)"),
        ("  vs faiss sa_encode", "" if hp["faiss_points_per_s"] is None else
         f"{hp['faiss_points_per_s'] / 1e6:.1f} M pts/s",
         "faiss not installed" if hp["speedup_vs_faiss"] is None else f"{hp['speedup_vs_faiss']:.2f}x faiss"),
        ("  bandwidth bound", f"{hp['bandwidth_bound_points_per_s'] / 1e6:.1f} M pts/s",
         f"achieved/bound {hp['achieved_over_bound']:.2f} (copy {r['copy_bandwidth_GBps']:.1f} GB/s)"),
        ("euclidean bucket_ids", f"{eu['points_per_s'] / 1e6:.1f} M pts/s",
         f"{eu['speedup_vs_numpy']:.2f}x numpy unique ({eu['buckets']} buckets; codes equal "
         f"{eu['codes_equal_to_numpy']:.6f}, same partition {eu['same_partition_on_equal_codes']})"),
    ]
    c = r["count_nonempty"]
    rows.append(("count non-empty buckets", "", c.get("error") or
                 f"time ratio {c['time_ratio_vs_numpy_sort']:.3f} vs np.sort ({c['buckets']} buckets)"))
    for name, m in r["peak_extra_memory"].items():
        extra = f"limit 2x output = {m['limit_bytes'] / 2**20:.1f} MiB " \
                f"(tracemalloc {m['tracemalloc_extra_bytes'] / 2**20:.1f} MiB)"
        if "codebook_bytes" in m:
            extra += f"; of which codebook {m['codebook_bytes'] / 2**20:.1f} MiB"
        rows.append((f"peak extra memory {name}", f"{(m['rss_extra_bytes'] or 0) / 2**20:.1f} MiB",
                     extra))
    jit = r["jit_compile_s_cold_cache"]
    rows.append(("JIT compile, cold cache", "", ", ".join(f"{k} {v:.1f}s" for k, v in jit.items())
                 if "error" not in jit else jit["error"][-200:]))
    for k, v in r["other_points_per_s"].items():
        rows.append((f"{k} bucket_ids", f"{v / 1e6:.1f} M pts/s", ""))
    width = max(len(a) for a, _, _ in rows)
    for a, b, c in rows:
        print(f"{a:<{width}}  {b:>14}  {c}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/bench"))
    main(parser.parse_args().out)
