"""Dask distributed as the engine of sweeps: rows computed on many cores, machines or GPUs.

``sparselab scale|reproduce --workers N`` starts a ``LocalCluster`` of N worker processes of
one thread each; ``--scheduler ADDRESS`` uses a running cluster instead (``dask scheduler``
and ``dask worker``, or dask-jobqueue on SLURM/PBS). A task ships what a row is a function
of — (config, model spec, seed) — plus the spec's ``ModelKind`` object, so that a kind the
user registered in the driver (``register_model_kind``) exists on workers that never
imported it; the worker draws the data again from the seed and returns the row
(``experiments.runner.rows.compute_row``). The driver alone writes ``results.csv``, a row at a
time as results complete (``experiments.runner.sweep.run_sweep``).

Thread policy (``experiments.runner.threads``): every worker runs one torch, Numba and BLAS thread,
set in its environment before it starts (``WORKER_ENV``) and again when it joins
(``experiments.runner.engine_worker.ThreadPolicy``, a worker plugin, so that workers of an
existing cluster follow it too).
With ``--device cuda`` (or "auto" on a machine with GPUs) each local worker sees one GPU
(``CUDA_VISIBLE_DEVICES``, round robin over the GPUs the driver sees).

One computation per row: a row is a function of its config's settings (the fingerprint of
``experiments.runner.rows.settings_fingerprint``: every field but the name, preset, models, seeds,
regime, panels and fit windows), its regime, its model spec (the label aside) and its seed —
the contract the resume of a sweep relies on already. Sweeps that share rows (the quick
preset's fig4 repeats 147 of fig2's 270 rows, table1 30 of its 54) submit them to one engine
at once under ``sparselab reproduce --workers``: the engine computes each such row once and
gives every sweep its own copy, with its experiment, target, settings, model label and key
(``Engine.rows``; ``row_identity``).

Faults: a worker that dies mid-task (killed, out of memory) is restarted by its nanny and
the scheduler runs the task again elsewhere (up to ``distributed.scheduler.allowed-failures``
times, 3 by default); the driver receives each task's row once. A task that raises (a model
that does not fit in memory) stops the sweep with that error; finished rows are on disk.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import os
import threading
import uuid
from typing import Any, Callable, Iterator

from experiments.runner.threads import WORKER_ENV

__all__ = ["check_engine_options", "engine_or_none", "Engine", "open_engine",
           "local_cluster", "run_task", "worker_gpus", "row_identity"]

DEVICES = ("auto", "cpu", "cuda")
#: The priority of the rows ``Engine.rows`` submits in this context (``Engine.prioritised``).
_row_priority: contextvars.ContextVar[int] = contextvars.ContextVar("sparselab_row_priority",
                                                                    default=0)


def check_engine_options(workers: int | None, scheduler: str | None,
                         device: str = "auto") -> None:
    """Check the engine options of a sweep.

    Arguments:
        workers: None or an integer ≥ 1 (local worker processes).
        scheduler: None or a Dask scheduler address (a non-empty string).
        device: "auto", "cpu" or "cuda".

    Raises:
        ValueError: workers < 1 or not an integer; an empty scheduler; both given; an unknown
            device; "cuda" for a local cluster on a machine without CUDA.
    """
    from routing.validation import check_choice, check_int

    if workers is not None:
        check_int(workers, "workers", low=1)
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler.strip()):
        raise ValueError(f"scheduler must be a Dask scheduler address such as "
                         f"tcp://host:8786, got {scheduler!r}")
    if workers is not None and scheduler is not None:
        raise ValueError("give --workers (a local cluster) or --scheduler (an existing "
                         "cluster), not both")
    check_choice(device, "device", DEVICES)
    if device == "cuda" and scheduler is None:
        import torch
        if not torch.cuda.is_available():
            raise ValueError("device 'cuda' was requested but torch.cuda.is_available() is "
                             "False")


def worker_gpus(device: str) -> list[str]:
    """The GPUs local workers share round robin: the driver's ``CUDA_VISIBLE_DEVICES`` list
    where set, else 0 … n-1 of ``torch.cuda.device_count()``; [] for "cpu" or without CUDA.

    Raises:
        ValueError: ``device`` not one of "auto", "cpu", "cuda".
    """
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if device == "cpu":
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g.strip() for g in visible.split(",") if g.strip()]
    import torch
    return [str(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() \
        else []


#: Dask configuration under which sparselab starts its workers: glibc's allocator left as
#: in any process. Dask's nannies set ``MALLOC_TRIM_THRESHOLD_=65536`` in each worker by
#: default, and setting any malloc threshold turns off glibc's dynamic mmap threshold: every
#: NumPy or torch buffer over 128 KiB is then mapped fresh from the kernel and page-faulted
#: on each use. Measured on 150 rows of the fig2 quick sweep, 2 workers on 2 cores: 5.7–6.1
#: million minor page faults and 10 s of system time per worker (30 % of its CPU), 35 s
#: wall; without it 0.9–1.1 million, 1.9 s, 24.9 s — the serial process took 49.2 s.
#:
#: And Dask's housekeeping slowed down to what a cluster of a few long tasks needs. By
#: default each worker samples its task thread's stack every 10 ms for the dashboard's
#: profile (``worker.profile``), every server checks its event loop every 20 ms
#: (``admin.tick``) and polls psutil every 0.5 s (``admin.system-monitor``), and each nanny
#: polls its worker's memory every 0.1 s (a local cluster's scheduler and nannies run in the
#: driver's process). On 2 cores that took 13 % of a core with the cluster idle (5 % driver,
#: 8 % workers; 1.8 % with these settings), and under load the profiler takes the GIL from
#: the task 100 times a second: the fig2 quick sweep on 2 workers ran at 4.90–5.13 rows/s
#: with Dask's defaults and 5.62–6.17 with these (same VM, alternated). Nothing here uses the
#: profiles or the dashboard; the memory limits are still enforced, within 1 s, not 0.1 s.
WORKER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                 "distributed.worker.profile.enabled": False,
                 "distributed.admin.tick.interval": "1s",
                 "distributed.admin.system-monitor.interval": "5s",
                 "distributed.worker.memory.monitor-interval": "1s"}


def local_cluster(workers: int, **kwargs):
    """A ``distributed.LocalCluster`` of ``workers`` processes of one thread each, their
    thread pools fixed at one thread from start-up (``WORKER_ENV``), glibc's allocator as in
    a plain process and Dask's housekeeping slowed down (``WORKER_CONFIG``), no dashboard,
    quiet logs; ``kwargs`` go to ``LocalCluster``.

    Raises:
        ValueError: workers < 1.
    """
    import dask
    from distributed import LocalCluster

    from routing.validation import check_int

    check_int(workers, "workers", low=1)
    options = dict(n_workers=workers, threads_per_worker=1, processes=True,
                   dashboard_address=":0", silence_logs=logging.ERROR,
                   env=dict(WORKER_ENV))
    options.update(kwargs)
    # read by the scheduler and each Nanny as they start, and passed by each Nanny to its worker
    with dask.config.set(WORKER_CONFIG):
        return LocalCluster(**options)


def run_task(config, spec, seed: int, kind, device: str) -> dict:
    """A Dask task: one row of a sweep (``experiments.runner.rows.compute_row``), on a worker.

    ``kind`` is the spec's ``ModelKind`` object, shipped with the task; it is registered
    here when the worker does not know ``spec.kind`` (a kind registered in the driver only).

    Arguments:
        config, spec, seed: the row (an ``ExperimentConfig``, a ``ModelSpec``, an int).
        kind: ``experiments.kinds.registry.model_kind(spec.kind)`` in the driver.
        device: "auto", "cpu" or "cuda", resolved on the worker.

    Returns:
        the row (a dict of ``experiments.runner.rows.COLUMNS`` and more).

    Raises:
        ValueError: a seed that is not an integer >= 0 (naming it); the row's own errors.
    """
    from experiments.kinds.registry import model_kind_names, register_model_kind
    from experiments.runner.rows import compute_row
    from routing.validation import check_seed

    seed = check_seed(seed)
    if spec.kind not in model_kind_names():
        register_model_kind(kind, replace=True)
    return compute_row(config, spec, seed, device)


def row_identity(config, spec, seed: int) -> tuple[str, ...]:
    """What the numbers of a sweep's row are a function of: the config's settings fingerprint
    (``experiments.runner.rows.settings_fingerprint``), the row's regime (``fit_of``), the model
    spec without its label, and the seed. Two rows of equal identity have equal numbers
    (the resume of a sweep keeps a row on the same grounds); ``Engine.rows`` computes them
    once.

    Arguments:
        config: an ``ExperimentConfig``; spec: a ``ModelSpec``; seed: an int.

    Returns:
        a tuple of strings.

    Raises:
        ValueError: a seed that is not an integer in [0, 2**63 - 1] (naming it).
    """
    from experiments.runner.rows import settings_fingerprint
    from experiments.runner.specs import fit_of
    from routing.validation import check_seed

    seed = check_seed(seed)
    return (settings_fingerprint(config), str(fit_of(spec, config)),
            repr(dataclasses.replace(spec, label=None)), str(seed))


def _as_row_of(row: dict, config, spec) -> dict:
    """A copy of ``row`` (computed for a row of the same ``row_identity``) as the row of
    (config, spec): the columns ``compute_row`` takes from them set from these."""
    from experiments.runner.rows import settings_fingerprint

    return {**row, "experiment": config.name, "target": config.target.label(),
            "settings": settings_fingerprint(config), "model_label": spec.display(),
            "model_key": spec.key()}


class Engine:
    """A Dask client that computes sweep rows: ``Engine(workers=N)`` starts a local cluster,
    ``Engine(scheduler=ADDRESS)`` connects to a running one. Use as a context manager (or
    ``start``/``close``).

    Arguments:
        workers, scheduler: as ``check_engine_options``; exactly one is given.
        device: the rows' device ("auto", "cpu", "cuda").

    Attributes:
        client: the ``distributed.Client`` once started; cluster: the ``LocalCluster`` (None
            with ``scheduler``).

    Raises:
        ValueError: as ``check_engine_options``; neither ``workers`` nor ``scheduler``.
    """

    def __init__(self, workers: int | None = None, scheduler: str | None = None,
                 device: str = "auto"):
        check_engine_options(workers, scheduler, device)
        if workers is None and scheduler is None:
            raise ValueError("an Engine needs workers (a local cluster) or scheduler (an "
                             "existing cluster)")
        self.workers, self.scheduler, self.device = workers, scheduler, device
        self.client = self.cluster = None
        self._submitted = 0
        # row_identity -> [future, sweeps using it]: rows that concurrent sweeps share
        self._rows: dict[tuple, list] = {}
        self._rows_lock = threading.Lock()

    def start(self) -> "Engine":
        """Start the cluster (or connect) and install the thread policy on every worker.

        Raises:
            ValueError: the scheduler cannot be reached (within distributed's connect
                timeout, ``distributed.comm.timeouts.connect``: 30 s by default), naming it.
        """
        from distributed import Client

        from experiments.runner.engine_worker import ThreadPolicy

        if self.scheduler is not None:
            try:
                self.client = Client(self.scheduler, set_as_default=False)
            except OSError as error:  # distributed's connect timeout, a refused connection
                raise ValueError(f"scheduler {self.scheduler!r} cannot be reached: "
                                 f"{error}") from None
            gpus = []
        else:
            gpus = worker_gpus(self.device)
            self.cluster = local_cluster(self.workers)
            self.client = Client(self.cluster, set_as_default=False)
        self.client.register_plugin(ThreadPolicy(gpus), name=ThreadPolicy.name)
        return self

    def close(self) -> None:
        """Close the client and the local cluster, if any."""
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None

    def __enter__(self) -> "Engine":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    @contextlib.contextmanager
    def prioritised(priority: int) -> Iterator[None]:
        """Rows submitted by ``rows`` in this block (in this thread) get Dask priority
        ``priority`` (higher runs first; default 0): ``sparselab reproduce`` runs several
        sweeps at once, each from its own thread, and orders them this way.

        Raises:
            ValueError: ``priority`` not an integer.
        """
        from routing.validation import check_int

        check_int(priority, "priority")
        token = _row_priority.set(priority)
        try:
            yield
        finally:
            _row_priority.reset(token)

    def submit(self, function: Callable, *args, priority: int = 0, name: str = "task"):
        """Run ``function(*args)`` on a worker, once (``pure=False``): a step of
        ``sparselab reproduce`` that is not a sweep's row.

        Arguments:
            function, args: the task (pickled with cloudpickle; the function must be
                importable on the workers, or defined by value).
            priority: Dask priority, higher runs first.
            name: the task key's prefix (``sparselab-<name>-<token>-<n>``); tasks of one
                prefix form one task group, which Dask's scheduler queues and hands to
                workers in priority order as they free up.

        Returns:
            a ``distributed.Future``.

        Raises:
            RuntimeError: the engine is not started.
        """
        if self.client is None:
            raise RuntimeError("the engine is not started (use it as a context manager)")
        self._submitted += 1
        return self.client.submit(function, *args, priority=priority, pure=False,
                                  key=f"sparselab-{name}-{uuid.uuid4().hex[:8]}-"
                                      f"{self._submitted}")

    def rows(self, tasks: list[tuple]) -> Iterator[dict]:
        """Compute rows on the workers; yield each as it completes (any order, each once).
        They run at the priority of ``prioritised`` (0 outside it). A row whose
        ``row_identity`` another call of ``rows`` (another sweep, in another thread) has
        submitted and still holds is not computed again: this call waits for that task and
        yields its row with this row's own experiment, target, settings, model label and key.

        Arguments:
            tasks: (config, spec, seed) triples.

        Yields:
            the rows (``run_task``).

        Raises:
            whatever a task raised (the other tasks are cancelled first, unless another
            sweep still needs them); ``KilledWorker`` when a task's workers died
            ``allowed-failures`` times.
        """
        from distributed import as_completed

        from experiments.kinds.registry import model_kind

        if not tasks:
            return
        if self.client is None:
            raise RuntimeError("the engine is not started (use it as a context manager)")
        token = uuid.uuid4().hex[:8]
        kinds = {spec.kind: model_kind(spec.kind) for _, spec, _ in tasks}
        priority = _row_priority.get()
        mine: dict[tuple, list[int]] = {}  # identity -> indices into tasks
        with self._rows_lock:
            for i, (config, spec, seed) in enumerate(tasks):
                identity = row_identity(config, spec, seed)
                mine.setdefault(identity, []).append(i)
                if len(mine[identity]) > 1:
                    continue
                entry = self._rows.get(identity)
                if entry is None:
                    entry = self._rows[identity] = [self.client.submit(
                        run_task, config, spec, seed, kinds[spec.kind], self.device,
                        key=f"sparselab-row-{token}-{i}", pure=False, priority=priority), 0]
                entry[1] += 1
            futures = {identity: self._rows[identity][0] for identity in mine}
        of_future = {future.key: identity for identity, future in futures.items()}
        try:
            for future in as_completed(list(futures.values()), loop=self.client.loop):
                row = future.result()
                for i in mine[of_future[future.key]]:
                    config, spec, _ = tasks[i]
                    yield _as_row_of(row, config, spec)
        finally:
            with self._rows_lock:
                unused = []
                for identity, future in futures.items():
                    entry = self._rows[identity]
                    entry[1] -= 1
                    if entry[1] == 0:  # no other sweep waits for it
                        del self._rows[identity]
                        unused.append(future)
            self.client.cancel(unused)  # releases the finished ones, stops the others

    def calls(self, function: Callable, arguments: list[tuple], shared=None,
              name: str = "call") -> Iterator[tuple[int, Any]]:
        """Run ``function(shared, *args)`` on the workers for each ``args`` of ``arguments``;
        yield ``(index into arguments, result)`` as each completes (any order, each once), at
        the priority of ``prioritised``: the rows of the image experiments
        (``experiments.papers.real_data``), whose data ``shared`` is sent to each worker once
        (``Client.scatter``) rather than with every task.

        Arguments:
            function: picklable (cloudpickle: a closure travels by value).
            arguments: one tuple of further arguments per task.
            shared: the first argument of every call (e.g. the data set).
            name: the task keys' prefix.

        Raises:
            RuntimeError: the engine is not started; whatever a task raised (the other
            tasks are cancelled first).
        """
        from distributed import as_completed

        if self.client is None:
            raise RuntimeError("the engine is not started (use it as a context manager)")
        if not arguments:
            return
        token = uuid.uuid4().hex[:8]
        priority = _row_priority.get()
        data = self.client.scatter(shared, broadcast=True, hash=False)
        futures = [self.client.submit(_call_task, function, data, *args, pure=False,
                                      key=f"sparselab-{name}-{token}-{i}", priority=priority)
                   for i, args in enumerate(arguments)]
        index = {future.key: i for i, future in enumerate(futures)}
        try:
            for future in as_completed(futures, loop=self.client.loop):
                result = future.result()
                future.release()
                yield index[future.key], result
        finally:
            self.client.cancel(futures + [data])


def _call_task(function: Callable, shared, *args):
    """A Dask task of ``Engine.calls``: ``function(shared, *args)``."""
    return function(shared, *args)


_open: list[Engine] = []


@contextlib.contextmanager
def open_engine(workers: int | None = None, scheduler: str | None = None,
                device: str = "auto") -> Iterator[Engine]:
    """An ``Engine`` for the block: the one already open in this process with the same
    workers, scheduler and device (``sparselab reproduce`` opens one for all its steps), or a
    new one closed at the end of the block.

    Raises:
        ValueError: as ``check_engine_options``.
    """
    for engine in reversed(_open):
        if (engine.workers, engine.scheduler, engine.device) == (workers, scheduler, device):
            yield engine
            return
    engine = Engine(workers=workers, scheduler=scheduler, device=device)
    with engine:
        _open.append(engine)
        try:
            yield engine
        finally:
            _open.remove(engine)


def engine_or_none(workers: int | None, scheduler: str | None, device: str):
    """The context of ``open_engine`` when ``workers`` or ``scheduler`` is given, their options
    checked at once; else a context that yields None (rows computed in this process).

    Arguments:
        workers: None or the number of local worker processes (int >= 1).
        scheduler: None or a Dask scheduler address.
        device: "auto", "cpu" or "cuda" (checked in either case).

    Returns:
        a context manager yielding an ``Engine`` or None.

    Raises:
        ValueError: as ``experiments.runner.engine.check_engine_options``.
    """
    import contextlib

    from routing.validation import check_choice

    check_choice(device, "device", DEVICES)
    if workers is None and scheduler is None:
        return contextlib.nullcontext()
    check_engine_options(workers, scheduler, device)
    return open_engine(workers, scheduler, device)
