"""The worker side of ``experiments.runner.engine``: the plugin that sets a Dask worker's GPU and
thread pools when it joins (kept apart so that importing ``experiments.runner.engine``, as every
CLI does for its options, does not import distributed)."""

from __future__ import annotations

import os
import sys

from distributed.diagnostics.plugin import WorkerPlugin

from experiments.runner.threads import limit_process_threads

__all__ = ["ThreadPolicy"]


def _iterable(value, name: str):
    try:
        return list(value)
    except TypeError:
        raise ValueError(f"{name} must be a list, got {value!r}") from None


class ThreadPolicy(WorkerPlugin):
    """Worker plugin: on joining, a worker takes its GPU (``gpus[name % len(gpus)]`` for a
    local worker, whose name is its index; none for a worker of an existing cluster, whose
    GPUs its own start-up decides) and fixes torch, Numba and BLAS at one thread
    (``experiments.runner.threads.limit_process_threads``). A worker restarted after a crash runs
    it again.

    Arguments:
        gpus: GPU ids (strings, as in ``CUDA_VISIBLE_DEVICES``) to share round robin, or [].

    Raises:
        ValueError: ``gpus`` not a list of non-empty strings.

    Raises (in the worker's setup):
        RuntimeError: CUDA already started in the worker before its GPU could be chosen.
    """

    idempotent = True
    name = "sparselab-thread-policy"

    def __init__(self, gpus: list[str] | None = None):
        if gpus is not None and (isinstance(gpus, (str, bytes)) or not all(
                isinstance(g, str) and g.strip() for g in _iterable(gpus, "gpus"))):
            raise ValueError(f"gpus must be a list of GPU ids (strings such as '0'), got "
                             f"{gpus!r}")
        self.gpus = list(gpus or [])

    def setup(self, worker) -> None:
        if self.gpus and isinstance(worker.name, int):
            torch = sys.modules.get("torch")
            if torch is not None and torch.cuda.is_initialized():
                raise RuntimeError("CUDA started in a worker before its GPU was chosen")
            os.environ["CUDA_VISIBLE_DEVICES"] = self.gpus[worker.name % len(self.gpus)]
        limit_process_threads()
