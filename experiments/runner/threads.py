"""The thread policy of sparselab's sweeps: one thread per process, parallelism across rows.

Why. A sweep's per-row work is many small operations (a router's training step multiplies
(256, 8) by (8, 64) matrices): a second torch, Numba or BLAS thread buys almost nothing
(the `routers` quick sweep: 116 s with two threads, 121 s with one, on a quiet 2-core
machine), but those pools wait for each other at every operation, spinning, so as soon as
anything else runs beside them — a busy neighbour, or another Dask worker — every step waits
for a descheduled thread: the same sweep took 10–35× longer beside one busy single-threaded
process (docs/performance.md, "Threads"). With one thread everywhere the neighbour cost
nothing measurable. So:

- a sweep runs its rows with one torch (intra-op), Numba and BLAS thread in the process
  (``single_threaded``, used by ``experiments.runner.sweep.run_sweep``'s serial path);
- a Dask worker is one process with one thread, and its environment fixes every pool at one
  thread before any library starts (``WORKER_ENV``, ``limit_process_threads``, used by
  ``experiments.runner.engine``);
- more cores are used by more workers (``--workers N``), which scale with the rows, not by
  more threads per row. Large linear algebra (an exact fit of width 4096) is the one place a
  second thread pays when the machine is quiet; one thread is kept there too, so that the
  serial path and every worker compute the same numbers bit for bit (a reduction split over
  two threads adds in another order).

This module is the one place the policy lives; nothing else sets thread counts. The serial
``sparselab reproduce`` runs every step under ``single_threaded``, and the image experiments
train their rows under it (``experiments.papers.real_data``).
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["WORKER_ENV", "single_threaded", "limit_process_threads"]

#: Environment of a worker process, set before it imports torch, NumPy or Numba (their pools
#: read it once, at start-up): one OpenMP (torch), MKL, OpenBLAS and Numba thread.
WORKER_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1"}


def _set_threads(threads: int) -> tuple[int, int, object]:
    """Set torch's intra-op, Numba's and the BLAS pools to ``threads``; return what undoes it:
    (torch threads, Numba threads, threadpoolctl limiter or None)."""
    import numba
    import torch

    old = torch.get_num_threads(), numba.get_num_threads()
    torch.set_num_threads(threads)
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:  # NumPy's own BLAS (OpenBLAS in its wheels); torch's MKL follows set_num_threads
        from threadpoolctl import threadpool_limits

        # threadpoolctl limits the libraries loaded when it is called: load SciPy's own
        # BLAS now (the exact fits' dsyrk), or a first import inside the block would run it
        # on every core, and its sums in another order than a single-threaded worker's
        import scipy.linalg  # noqa: F401
        limiter = threadpool_limits(limits=threads)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        limiter = None
    return old[0], old[1], limiter


@contextlib.contextmanager
def single_threaded():
    """Run the block with one torch intra-op, Numba and BLAS thread, then restore the counts
    the process had (the thread policy above; ``threadpoolctl`` limits NumPy's BLAS where it
    is installed).

    Yields:
        None.
    """
    import numba
    import torch

    torch_threads, numba_threads, limiter = _set_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(torch_threads)
        numba.set_num_threads(numba_threads)
        if limiter is not None:
            limiter.restore_original_limits()


def limit_process_threads() -> dict[str, int]:
    """Fix this process's pools at one thread for good (a Dask worker's start-up): the
    ``WORKER_ENV`` variables for libraries not loaded yet, and torch, Numba and BLAS now.

    Returns:
        {"torch": torch.get_num_threads(), "numba": numba.get_num_threads()} afterwards
        (both 1), for the caller to check.
    """
    os.environ.update(WORKER_ENV)
    _set_threads(1)
    import numba
    import torch

    return {"torch": torch.get_num_threads(), "numba": numba.get_num_threads()}
