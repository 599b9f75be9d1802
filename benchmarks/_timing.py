"""Timing helpers shared by the benchmarks: interleaved repetitions and a thread limit.

Interleaving (every function once per round, rounds repeated) makes machine load hit every
timed function alike, so ratios measured in one run stay meaningful on a shared machine.
"""

from __future__ import annotations

import contextlib
import time

import numba
import numpy as np
import torch

__all__ = ["time_interleaved", "thread_limit"]


def time_interleaved(fns: dict, repeats: int, sync=lambda: None) -> dict:
    """Time each zero-argument function of ``fns`` ``repeats`` times, calls interleaved.

    Two warm-up calls each first (Numba compilation, allocator). ``sync`` runs after every
    call (``torch.cuda.synchronize`` for GPU work).

    Returns:
        {name: {"median_s", "min_s", "cpu_median_s", "cpu_min_s"}}: wall-clock and process
        CPU seconds per call (CPU time is less sensitive to other processes on the machine).
    """
    for fn in fns.values():
        fn()
        fn()
    sync()
    wall = {name: [] for name in fns}
    cpu = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            sync()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return {name: {"median_s": float(np.median(wall[name])), "min_s": float(np.min(wall[name])),
                   "cpu_median_s": float(np.median(cpu[name])),
                   "cpu_min_s": float(np.min(cpu[name]))}
            for name in fns}


@contextlib.contextmanager
def thread_limit(threads: int):
    """Run the block with ``threads`` torch and Numba threads, then restore both."""
    old = torch.get_num_threads(), numba.get_num_threads()
    torch.set_num_threads(threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        torch.set_num_threads(old[0])
        numba.set_num_threads(old[1])
