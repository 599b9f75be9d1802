"""``sparselab reproduce --workers N`` (or ``--scheduler ADDRESS``): every step at once.

The serial reproduce runs its steps one after another. Here every step that has to run is
handed to the Dask workers of ``experiments.runner.engine`` at the start, so that the workers are
never idle while work is left:

- a scaling experiment (``ScalingStep``) sends its rows, each a task, from a thread of the
  driver (``experiments.runner.sweep.run_sweep``: the driver alone writes ``results.csv``, row by
  row); once its rows are in, the driver writes its ``config.json``, fits, plots and claims
  (``ScalingStep.outputs``: matplotlib is not thread-safe, so outputs are written by the
  driver's main thread, one experiment at a time, while the workers go on);
- an image experiment (``ImageStep``) likewise: each row (a model trained on its data) a
  task, the data sent to each worker once, then its claims, plots and table by the driver;
- the checks (``ChecksStep``) are a task per check's real run, which writes its plots into
  ``checks/<name>/``, and a task per planted run of its power (``Check.power_runs``); the
  driver assembles each check (``Check.with_power``: the verdict and power ``Check.run``
  gives) and merges them into ``checks/results.json`` and ``checks/table.txt`` exactly as
  ``sparselab check`` writes them;
- every other step is one task that claims its folder (``experiments.runner.output_folder``: one
  writer per folder) and writes into it.

The driver writes each step's ``done.json`` when the step is complete, so a run that is
stopped resumes as the serial one does (finished steps skipped, a scaling step's finished
rows kept). Every task takes seconds, the longest a check's planted run (≈ 10 s at quick),
so the two workers end within seconds of each other whatever the order. Tasks run in this
order of Dask priority: the scaling experiments' rows, then the image experiments' rows
(their outputs are then written by the driver while the workers go on, so that little is
left for the driver at the end), then the other steps in the reverse of the step list (the
COMET studies, then the checks — the costliest first: the check registry lists cheap checks
first — then the SDM curves and the target gallery).

The steps that are tasks write into the output folder from the worker, so the worker must
see it at the path the driver names it by: always so for a local cluster; for the workers of
an existing cluster (``--scheduler``) only on a shared file system, with an absolute ``--out``
(or workers started in the driver's working directory). A first task checks
(``_sees_folder``); where a worker does not see the folder, those steps run in the driver,
one after another, while the workers compute the rows — the results are the same.
"""

from __future__ import annotations

import concurrent.futures
import json
import pathlib
import queue
import time
from typing import Callable

__all__ = ["run_steps_parallel"]

#: Dask priority of the first scaling experiment's rows; each next experiment's is one less.
ROWS_PRIORITY = 1_000_000
#: Dask priority of the first of the other tasks (``_submission_order``); each next is one less.
TASKS_PRIORITY = 1_000


def _run_step_task(run: Callable, folder: str) -> tuple[list[str], float]:
    """A Dask task: run a step into its folder, holding the folder
    (``experiments.runner.output_folder.writer``) for the whole step.

    Arguments:
        run: the step's function (folder -> files written).
        folder: the step's folder (as the driver names it).

    Returns:
        (files written as strings, seconds the step took).

    Raises:
        whatever the step raises; ``output_folder.FolderBusy`` when another process holds
        the folder.
    """
    from experiments.runner import output_folder

    start = time.perf_counter()
    with output_folder.writer(folder):
        files = [str(p) for p in run(pathlib.Path(folder))]
    return files, time.perf_counter() - start


def _run_check_task(step, name: str, folder: str):
    """A Dask task: the real run of check ``name`` of ``step`` (a ``ChecksStep``), without its
    power, its plots written into ``folder/name``, which it holds; returns (its
    ``CheckResult``, seconds). Its planted runs are tasks of their own (``_run_planted_task``).

    Raises:
        ValueError: an unknown check; ``output_folder.FolderBusy`` as ``_run_step_task``.
    """
    from experiments.runner import output_folder

    folder = pathlib.Path(folder)
    with output_folder.writer(folder / name):
        return step.real_one(name, folder)


def _run_planted_task(step, name: str, index: int, seed: int):
    """A Dask task: one planted run of check ``name`` of ``step`` (``ChecksStep.planted_one``):
    (raw verdict, seconds). It writes nothing."""
    return step.planted_one(name, index, seed)


def _read(path: str) -> str | None:
    """A Dask task: the text of the file at ``path`` on the worker, None if it cannot be read
    there."""
    try:
        return pathlib.Path(path).read_text()
    except OSError:
        return None


def _sees_folder(engine, out: pathlib.Path) -> bool:
    """Whether a worker of ``engine`` sees folder ``out`` as the driver does: the driver writes
    a file of random text into it, a task reads it back.

    Raises:
        ``output_folder.OutputError``: ``out`` cannot be written.
    """
    import secrets

    from experiments.runner import output_folder

    probe = pathlib.Path(out) / f".sparselab-probe-{secrets.token_hex(8)}"
    token = secrets.token_hex(16)
    output_folder.write_text(probe, token)
    try:
        return engine.submit(_read, str(probe), priority=2 * ROWS_PRIORITY,
                             name="probe").result() == token
    finally:
        probe.unlink(missing_ok=True)


def _submission_order(todo: list[tuple]) -> list[tuple]:
    """The steps that are not scaling experiments, in the order their tasks get priority:
    the reverse of the step list (the image experiments come last in it and are the
    longest; the target gallery and SDM curves first and take seconds).

    Arguments:
        todo: (name, record, run) of the steps to run.

    Returns:
        the (name, record, run) of the other steps, first to run first.
    """
    from experiments.pipeline.reproduce_steps import ImageStep, ScalingStep

    return [step for step in reversed(todo)
            if not isinstance(step[2], (ScalingStep, ImageStep))]


def _check_part(state: dict, j: int | None, result) -> tuple | None:
    """Record one finished task of a check (``j`` None: the real run, else the index of its
    planted run in ``state["plan"]``) into ``state``; once every task is in, return
    ``(real result, {planted index: verdicts in plan order}, seconds summed)`` for
    ``ChecksStep.complete``, else None."""
    value, seconds = result
    if j is None:
        state["result"] = value
    else:
        state["verdicts"][j] = value
    state["seconds"] += seconds
    state["left"] -= 1
    if state["left"]:
        return None
    verdicts: dict[int, list] = {}
    for j, (index, _) in enumerate(state["plan"]):
        verdicts.setdefault(index, []).append(state["verdicts"][j])
    return state["result"], verdicts, state["seconds"]


def run_steps_parallel(todo: list[tuple], out: pathlib.Path, echo: Callable[[str], None],
                       engine) -> dict[str, list[str]]:
    """Run the steps ``todo`` at once on ``engine``'s workers and write each one's
    ``done.json`` as it completes.

    Arguments:
        todo: (name, record, run) per step to run, in step order: ``run`` is a
            ``ScalingStep``, a ``ChecksStep`` or any function folder -> files;
            ``record`` the marker record (``reproduce._prepare_step``).
        out: the reproduce folder (held by the caller); step ``name`` writes ``out/name``.
        echo: prints a line per finished step and per finished check.
        engine: the started ``experiments.runner.engine.Engine`` (``run_reproduce`` opens it with
            ``open_engine``, so the scaling steps' sweeps use it too).

    Returns:
        step name -> files it wrote (relative to ``out``), for the steps of ``todo``.

    Raises:
        whatever a step raised (the other tasks are cancelled; steps already finished keep
        their ``done.json``, so a rerun resumes after them); ``KilledWorker`` when a task's
        workers died ``distributed.scheduler.allowed-failures`` times.
    """
    from experiments.runner import output_folder
    from experiments.pipeline.reproduce_steps import ChecksStep, ImageStep, ScalingStep

    if not todo:
        return {}
    events: queue.Queue = queue.Queue()
    written: dict[str, list[str]] = {}
    seconds: dict[str, float] = {}
    waiting: dict[str, int] = {}  # step -> tasks or threads not yet finished
    checks: dict[str, dict] = {}  # checks step -> {check name: result}
    parts: dict[tuple[str, str], dict] = {}  # (checks step, check) -> its tasks' results
    futures = []
    started = time.perf_counter()
    steps = {name: (record, run) for name, record, run in todo}

    def finish(name: str, files) -> None:
        record, _ = steps[name]
        files = [str(pathlib.Path(p).relative_to(out)) for p in files]
        record.update(files=files, seconds=round(seconds[name], 2))
        output_folder.write_text(out / name / "done.json", json.dumps(record, indent=2))
        written[name] = files
        echo(f"[{name}] done ({seconds[name]:.1f} s; {time.perf_counter() - started:.0f} s "
             f"since the start)")

    # 1. the scaling and image experiments' rows: a thread each, its rows at its own priority
    sweeps = [(name, run) for name, _, run in todo if isinstance(run, (ScalingStep, ImageStep))]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(sweeps)),
                                                 thread_name_prefix="sparselab-rows")

    def rows(name: str, run, priority: int) -> float:
        start = time.perf_counter()
        with engine.prioritised(priority):
            run.rows(out / name, progress=True)
        return time.perf_counter() - start

    try:
        for i, (name, run) in enumerate(sweeps):
            waiting[name] = 1
            thread = pool.submit(rows, name, run, ROWS_PRIORITY - i)
            thread.add_done_callback(lambda f, name=name: events.put(("rows", name, None, f)))
        # 2. the other steps: a task each, the checks a task per check; in this process
        # (below) where the workers do not see the folder
        priority = TASKS_PRIORITY
        here = [] if _sees_folder(engine, out) else [name for name, _, _ in todo
                                                    if name not in dict(sweeps)]
        if here:
            echo(f"the workers do not see {out}: {', '.join(here)} run here (the rows run on "
                 f"the workers)")
        for name in here:
            waiting[name] = 1
        for name, _, run in _submission_order(todo):
            if name in here:
                continue
            if isinstance(run, ChecksStep):
                # a task for each check's real run (its plots) and one for each of its
                # planted runs (its power): tasks of seconds, so the two workers end together
                names = run.names()
                checks[name], waiting[name] = {}, len(names)
                for check in reversed(names):  # the registry lists the cheap checks first
                    plan = run.power_runs(check)
                    parts[name, check] = {"plan": plan, "result": None, "verdicts": {},
                                          "seconds": 0.0, "left": 1 + len(plan)}
                    futures.append(engine.submit(_run_check_task, run, check, str(out / name),
                                                 priority=priority, name="check"))
                    futures[-1].add_done_callback(lambda f, name=name, check=check: events.put(
                        ("check", name, (check, None), f)))
                    for j, (index, seed) in enumerate(plan):
                        futures.append(engine.submit(_run_planted_task, run, check, index, seed,
                                                     priority=priority, name="planted"))
                        futures[-1].add_done_callback(
                            lambda f, name=name, part=(check, j): events.put(
                                ("check", name, part, f)))
                    priority -= 1
            else:
                waiting[name] = 1
                futures.append(engine.submit(_run_step_task, run, str(out / name),
                                             priority=priority, name="step"))
                futures[-1].add_done_callback(
                    lambda f, name=name: events.put(("step", name, None, f)))
                priority -= 1
        # 3. as tasks complete: markers, checks merged, scaling experiments' outputs
        while any(waiting.values()):
            if here and events.empty():  # a step of this process while the workers go on
                name = here.pop(0)
                start = time.perf_counter()
                files = steps[name][1](out / name)
                seconds[name] = time.perf_counter() - start
                waiting[name] -= 1
                finish(name, files)
                continue
            kind, name, part, future = events.get()
            result = future.result()  # raises the task's error
            if kind == "check":
                check = _check_part(parts[name, part[0]], part[1], result)
                if check is None:  # more of this check's tasks to come
                    continue
                result = steps[name][1].complete(part[0], *check)
                check = part[0]
            waiting[name] -= 1
            if kind == "rows":
                start = time.perf_counter()
                files = steps[name][1].outputs(out / name)
                seconds[name] = result + time.perf_counter() - start
                finish(name, files)
            elif kind == "step":
                files, seconds[name] = result
                finish(name, files)
            else:
                checks[name][check] = result
                echo(f"[{name}] {check}: {result.verdict.value} ({result.seconds:.1f} s)")
                if not waiting[name]:
                    run = steps[name][1]
                    results = [checks[name][n] for n in run.names()]
                    seconds[name] = sum(r.seconds for r in results)
                    finish(name, run.merge(out / name, results))
    finally:
        for future in futures:
            future.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
    return {name: written[name] for name, _, _ in todo}
