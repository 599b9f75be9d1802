"""Timing helpers shared by the benchmarks: interleaved repetitions, a thread limit, fixed
malloc thresholds and a description of the machine.

Interleaving (every function once per round, rounds repeated) makes machine load hit every
timed function alike, so ratios measured in one run stay meaningful on a shared machine.
Bursts (several consecutive calls of one function per round) time each function in its own
steady state, as the steps of a training loop run, rather than right after another one.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import platform
import time

import numba
import numpy as np
import torch

__all__ = ["machine", "steady_malloc", "time_interleaved", "thread_limit"]


def time_interleaved(fns: dict, repeats: int, sync=lambda: None, burst: int = 1) -> dict:
    """Time each zero-argument function of ``fns`` ``repeats`` times, calls interleaved.

    Two warm-up calls each first (Numba compilation, allocator). ``sync`` runs after every
    call (``torch.cuda.synchronize`` for GPU work).

    With ``burst`` > 1 each round calls every function ``burst`` times in a row: the first
    call of a burst runs right after another function (its caches evicted, as in the
    alternating measurement of ``burst`` = 1) and is reported apart ("after_other_*"); the
    statistics are taken over the others, which run in the function's own steady state, as
    consecutive steps of a training loop do. (On the development VM a DSM step right after a
    dense step of width 4096 took 0.5-0.7 ms more than right after another DSM step.) Rounds
    still interleave the functions, so slow machine drift hits all alike.

    Returns:
        {name: {"median_s", "min_s", "cpu_median_s", "cpu_min_s"}}: wall-clock and process
        CPU seconds per call (CPU time is less sensitive to other processes on the machine),
        over ``repeats`` · max(burst - 1, 1) calls; with ``burst`` > 1 also
        "after_other_median_s" and "after_other_min_s" over the first call of each burst.

    Raises:
        ValueError: if repeats < 1 or burst < 1.
    """
    if repeats < 1 or burst < 1:
        raise ValueError(f"repeats and burst must be >= 1, got {repeats} and {burst}")
    for fn in fns.values():
        fn()
        fn()
    sync()
    wall = {name: [] for name in fns}
    cpu = {name: [] for name in fns}
    first = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            for call in range(burst):
                start, start_cpu = time.perf_counter(), time.process_time()
                fn()
                sync()
                seconds = time.perf_counter() - start
                if call == 0 and burst > 1:
                    first[name].append(seconds)
                    continue
                wall[name].append(seconds)
                cpu[name].append(time.process_time() - start_cpu)
    result = {name: {"median_s": float(np.median(wall[name])), "min_s": float(np.min(wall[name])),
                     "cpu_median_s": float(np.median(cpu[name])),
                     "cpu_min_s": float(np.min(cpu[name]))}
              for name in fns}
    if burst > 1:
        for name in fns:
            result[name]["after_other_median_s"] = float(np.median(first[name]))
            result[name]["after_other_min_s"] = float(np.min(first[name]))
    return result


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


@contextlib.contextmanager
def steady_malloc(nbytes: int = 32 << 20):
    """Run the block with glibc malloc's mmap threshold fixed at ``nbytes`` (at most 32 MB)
    and its trim threshold at twice that, so that blocks up to ``nbytes`` come from the heap
    and are reused from step to step instead of freshly mapped pages that fault on first
    touch; then fix both back at glibc's initial 128 KiB. Yields False (nothing done) where
    the C library is not glibc.

    glibc adjusts both thresholds as a process runs (a freed mapped block raises them to its
    size), so whether a dense step's megabyte-sized intermediates are mapped anew, or the
    heap under them trimmed, at every step depends on what the process did before: on the
    development VM the same dense step of width 256 took 0-580 page faults per step in
    fresh processes, and 2.3-3.9 ms. Fixed thresholds make every run measure the same,
    steadier (and for dense, faster) state.
    """
    import ctypes
    import ctypes.util
    import platform

    if platform.libc_ver()[0] != "glibc":
        yield False
        return
    mallopt = ctypes.CDLL(ctypes.util.find_library("c")).mallopt
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    mallopt(m_mmap_threshold, nbytes)
    mallopt(m_trim_threshold, 2 * nbytes)
    try:
        yield True
    finally:
        mallopt(m_mmap_threshold, 128 << 10)
        mallopt(m_trim_threshold, 128 << 10)


def machine(cpuinfo: pathlib.Path = pathlib.Path("/proc/cpuinfo")) -> dict:
    """The machine the timings come from (the same code ran 3x apart on two VMs' CPUs).

    Arguments:
        cpuinfo: Linux's CPU description, read for its first "model name" line.

    Returns:
        {"platform": platform.platform(), "cpu_model": that model name, or
        platform.processor() where the file or line is missing (None if that is empty too),
        "n_cpus": os.cpu_count(), "n_cpus_usable": the CPUs this process may run on
        (os.sched_getaffinity where the OS has it, else n_cpus)}.
    """
    model = None
    try:
        for line in pathlib.Path(cpuinfo).read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                model = value.strip()
                break
    except OSError:
        pass
    usable = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
              else os.cpu_count())
    return {"platform": platform.platform(), "cpu_model": model or platform.processor() or None,
            "n_cpus": os.cpu_count(), "n_cpus_usable": usable}
