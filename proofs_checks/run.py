"""Running the checks: the presets' parameters, the run of every registered check (or some),
their table and the files ``sparselab check`` and ``sparselab reproduce`` write."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys
import textwrap
import time
from typing import TYPE_CHECKING, Callable, Iterable

import click

__all__ = ["run_checks", "write_checks", "format_table", "PRESETS", "PARAMS_OF_PRESET", "load_check_module", "preset_decides", "paper_estimate", "CONFIRM_ABOVE_SECONDS"]

if TYPE_CHECKING:  # the framework (scipy) and the checks load when checks run, not for --help
    from proofs_checks._framework import CheckResult


#: The presets of ``sparselab check``, the same names as every other command's.
PRESETS = ("tiny", "quick", "paper")


#: The checks' parameter preset (``CheckParams.preset``) each preset runs: "tiny" is a smoke
#: run of the same machinery in seconds that decides nothing (``TINY_NOTE``); "full" is the
#: old name of "paper", still accepted.
PARAMS_OF_PRESET = {"tiny": "tiny", "quick": "quick", "paper": "full", "full": "full"}


#: A paper run of the checks whose estimate exceeds this many seconds (one hour), or that has
#: none, starts only with ``--yes`` (``experiments.runner.time_estimate.CONFIRM_ABOVE_SECONDS``, the
#: same number for every command; proofs_checks imports nothing of experiments).
CONFIRM_ABOVE_SECONDS = 3600.0


def paper_estimate(names: Iterable[str], out: str | pathlib.Path) -> float | None:
    """The estimated time (s) of the checks ``names`` at the paper preset: the sum of the
    seconds each took in the paper run recorded in ``out/results.json`` (a previous
    ``sparselab check --preset paper --out OUT`` on this machine: measured, not modelled).
    None when any of them has no such record: the checks have no model of their paper
    time (their planted runs dominate it, and they differ by check), so an unmeasured one
    counts as over an hour.

    Raises:
        ValueError: ``names`` empty.
    """
    names = list(names)
    if not names:
        raise ValueError("names must name at least one check")
    try:
        payload = json.loads((pathlib.Path(out) / "results.json").read_text())
        seconds = {r["name"]: float(r["seconds"]) for r in payload["results"]} \
            if payload.get("params") == PARAMS_OF_PRESET["paper"] else {}
    except (OSError, ValueError, KeyError, TypeError):
        seconds = {}
    if any(name not in seconds for name in names):
        return None
    return sum(seconds[name] for name in names)


def _duration(seconds: float) -> str:
    """``seconds`` as minutes below an hour, else hours ("58 min", "1.0 h")."""
    return f"{seconds / 60:.0f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def _confirm_paper(names: list[str], out: pathlib.Path, yes: bool) -> None:
    """Print the paper checks' estimate (``paper_estimate``) and stop, before anything runs,
    when it exceeds ``CONFIRM_ABOVE_SECONDS`` (or there is none) and ``yes`` is not given.

    Raises:
        click.ClickException: exit status 1, naming the estimate and ``--yes``.
    """
    seconds = paper_estimate(names, out)
    if seconds is None:
        click.echo(f"no time estimate for {len(names)} check(s) at the paper preset: none has "
                   f"a recorded paper run in {out / 'results.json'} (counted as over an hour)")
    else:
        click.echo(f"Estimated time of the {len(names)} check(s) at the paper preset: "
                   f"{_duration(seconds)} (the seconds of their previous paper run in "
                   f"{out / 'results.json'})")
    if (seconds is None or seconds > CONFIRM_ABOVE_SECONDS) and not yes:
        what = ("it has no time estimate (counted as over an hour)" if seconds is None else
                f"its estimated time, {_duration(seconds)}, exceeds an hour")
        raise click.ClickException(f"not started: {what}; nothing was computed. Rerun the "
                                   f"same command with --yes to start it.")


def run_checks(preset: str, out: str | pathlib.Path | None, only: Iterable[str] | None = None,
               seed: int = 0, progress: bool = True,
               echo: Callable[[str], None] | None = None,
               power: bool = True) -> list[CheckResult]:
    """Run the registered checks with a preset's parameters, each with its power measured.

    Arguments:
        preset: "tiny" (a smoke run in seconds: the checks' tiny grids, one seed, two
            planted runs per plant; it decides nothing — every verdict but *out of reach*
            reads *underpowered*, labelled "tiny: smoke run, decides nothing"), "quick" (the
            checks' quick parameters: every check in minutes on 2 CPU cores) or "paper" (their
            full parameters: enough draws to decide the probabilistic claims); "full" is
            accepted as the old name of "paper".
        out: folder for the plots (``out/<check name>/``) and ``out/results.json``; None
            writes nothing.
        only: names of the checks to run (default: all, in registry order).
        seed: the seed of every check (same seed, same numbers).
        progress: show a tqdm progress bar on stderr.
        echo: called with one line per finished check (e.g. ``click.echo``), or None.
        power: measure each check's power on its planted violations (False: every verdict
            that is not *out of reach* is *underpowered*; for quick looks only).

    Returns:
        One ``CheckResult`` per check, in run order.

    Raises:
        ValueError: an unknown preset or check name (the message lists the known ones); a bad
            seed; ``progress`` or ``power`` not a bool; ``out`` a file or inside one (all
            checked before any check runs).
        TypeError: ``out`` neither a path nor None.
    """
    from tqdm.auto import tqdm

    from proofs_checks.registry import all_checks
    from routing.validation import check_bool, check_seed

    if preset not in PARAMS_OF_PRESET:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")
    seed = check_seed(seed)
    progress, power = check_bool(progress, "progress"), check_bool(power, "power")
    out = None if out is None else _check_out_folder(out)
    params = PARAMS_OF_PRESET[preset]
    checks = all_checks()
    names = list(checks) if not only else list(dict.fromkeys(only))
    unknown = [n for n in names if n not in checks]
    if unknown:
        raise ValueError(f"unknown check(s) {', '.join(map(repr, unknown))}; "
                         f"known checks: {', '.join(checks)}")
    results = []
    bar = tqdm(names, desc="sparselab check", unit="check", disable=not progress,
               file=sys.stderr, leave=False)
    start = time.perf_counter()
    for name in bar:
        bar.set_postfix_str(name)
        result = checks[name].preset(params).run(seed, None if out is None else out / name,
                                                 power=power)
        results.append(result)
        if echo is not None:
            echo(f"[{result.verdict.value:>14}] {name} ({result.seconds:.1f} s, "
                 f"power {_power_text(result)})" + (f" — {result.note}" if result.smoke
                                                     else ""))
    bar.close()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        payload = {"preset": preset, "params": params, "seed": seed,
                   **preset_decides(preset), "seconds": round(time.perf_counter() - start, 2),
                   "results": [r.to_dict() for r in results]}
        (out / "results.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False))
    return results


def _check_out_folder(out) -> pathlib.Path:
    """``out`` as a Path to a folder that exists or can be made: not a file, not under one.

    Raises:
        TypeError: if ``out`` is not a path (str or os.PathLike).
        ValueError: if ``out`` or one of its parents is an existing file.
    """
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a folder path (str or os.PathLike) or None, got "
                        f"{type(out).__name__} {out!r}")
    out = pathlib.Path(out)
    for path in (out, *out.parents):
        if path.exists():
            if not path.is_dir():
                raise ValueError(f"out must be a folder (existing or to be created), but "
                                 f"{str(path)!r} is a file")
            break
    return out


def preset_decides(preset: str) -> dict:
    """``{"decides": bool, "note": str}`` for a preset's JSON: tiny decides nothing."""
    from proofs_checks._framework import TINY_NOTE

    tiny = PARAMS_OF_PRESET[preset] == "tiny"
    return {"decides": not tiny, "note": TINY_NOTE if tiny else ""}


def write_checks(out: str | pathlib.Path, preset: str = "quick", seed: int = 0,
                 only: Iterable[str] | None = None) -> list[pathlib.Path]:
    """Run the checks (all, or ``only``) into ``out`` and return the files written
    (``results.json``, ``table.txt`` and the plots): the shape of a ``sparselab reproduce``
    step.

    Raises:
        ValueError: an unknown preset or check name.
    """
    out = pathlib.Path(out)
    results = run_checks(preset, out, only=only, seed=seed, progress=False)
    (out / "table.txt").write_text(format_table(results) + "\n")
    return [out / "results.json", out / "table.txt"] + [
        pathlib.Path(p) for r in results for p in r.plots]


def _power_text(r: CheckResult) -> str:
    """'14/14 refuted, one-sided 95% lower bound 0.807 (wanted ≥ 0.8)' for the gating plant."""
    if r.power is None:
        return "not measured"
    worst = min((e for e in r.power_details), key=lambda e: (e.get("lower", 0.0),
                                                             e["power"]), default=None)
    gating = [pp["gate"] for pp in r.mdv.values() if pp.get("gate")] if r.mdv else []
    if gating:
        worst = min(gating, key=lambda e: (e.get("lower", 0.0), e["power"]))
    lower = r.power_lower if r.power_lower is not None else worst.get("lower", 0.0)
    return (f"{worst['refuted']}/{worst['runs']} refuted ({worst['planted']}), one-sided 95% "
            f"lower bound {lower:.3f} (wanted ≥ 0.8)")


def _verdict_text(r: CheckResult) -> str:
    from proofs_checks._framework import Verdict

    text = r.verdict.value
    if r.smoke:
        return f"{text} (tiny) — {r.note}; the data of its one seed said " \
               f"{(r.raw_verdict or r.verdict).value}, which decides nothing"
    if r.raw_verdict is not None and r.raw_verdict != r.verdict and \
            r.verdict == Verdict.UNDERPOWERED:
        text += f" (data: {r.raw_verdict.value})"
    if r.draws_needed is not None and Verdict.INCONCLUSIVE in (r.verdict, r.raw_verdict):
        text += f" (+{r.draws_needed} draws)"
    return text


def _part_lines(r: CheckResult) -> list[tuple[str, str]]:
    """(label, text) rows of the SVIs, the parts' power and MDV, the seeds and post_hoc."""
    rows = []
    if r.svi:
        for v in r.svi:
            rows.append(("svi", f"{v['part']}: {v['size']:.3g} ({v['units']}) — "
                                f"{v['reason']}"))
    else:
        rows.append(("svi", "not declared: the power gates on every planted violation, none "
                            "stated at a smallest violation of interest"))
    for part, pp in (r.mdv or {}).items():
        gate = pp.get("gate")
        mdv = "none on the curve" if pp["mdv"] is None else f"{pp['mdv']:.3g}"
        text = (f"{part}: MDV {mdv} (SVI {pp['svi']['size']:.3g}); " + (
            "no plant at the SVI" if gate is None else
            f"at the SVI n={gate['runs']}, refuted {gate['refuted']}, one-sided 95% lower "
            f"bound {pp['power_lower']:.3f}") + "; curve " + ", ".join(
            f"{c[0]:.3g}: {c[1]}/{c[2]}" for c in pp["curve"]))
        if pp["underpowered"]:
            text += f" — underpowered: {pp['needs']}"
        rows.append(("mdv", text))
    if r.seed_verdicts:
        rows.append(("seeds", ", ".join(f"{s['seed']}: {s['verdict']}"
                                        for s in r.seed_verdicts)
                     + " (refuted if most seeds refute, holds if all hold)"))
    for line in r.post_hoc:
        rows.append(("post_hoc", line))
    return rows


def format_table(results: list[CheckResult], width: int = 100) -> str:
    """The checks as text, one block per check: its name and verdict, then claim [source],
    the pre-registered settings (one line), measured [interval], bound, the SVI of each
    decisive part, its MDV and power at the SVI (n, refuted, one-sided 95 % lower bound), the
    per-seed verdicts, the post-hoc choices, the gating power and the planted violations,
    each wrapped to ``width`` characters."""
    lines = []
    if any(r.smoke for r in results):
        from proofs_checks._framework import TINY_NOTE

        lines += [f"** {TINY_NOTE}: tiny grids, one seed, two planted runs per plant; no "
                  f"verdict below is a finding (run --preset quick or paper to decide) **", ""]
    for r in results:
        lines.append(f"== {r.name}: {_verdict_text(r)} ==")
        headline = f"{r.measured:.4g}"
        if r.measured_interval is not None:
            lo, hi = r.measured_interval
            headline += f", interval [{lo:.4g}, {hi:.4g}]"
        headline += f"; bound {r.bound:.4g} (the decisive part's value, in the check's units)"
        planted = ", ".join(f"{e['planted']} {e['refuted']}/{e['runs']}"
                            for e in r.power_details) or "none"
        rows = [("claim", f"{r.claim} [{r.source}]"), ("settings", r.settings or "-"),
                ("measured", r.measured_text), ("headline", headline),
                ("bound", r.bound_text)] + _part_lines(r) + [
                ("power", _power_text(r)), ("planted", f"refuted/runs: {planted}")]
        for label, text in rows:
            wrapped = textwrap.wrap(text, width - 10) or [""]
            lines.append(f"{label:<9} {wrapped[0]}")
            lines += [" " * 10 + w for w in wrapped[1:]]
        lines.append("")
    return "\n".join(lines)


def load_check_module(path: str | pathlib.Path) -> list[str]:
    """Import a Python file of one's own checks and return the names it registered.

    The file defines ``Check`` subclasses decorated with ``proofs_checks.register`` (claim,
    source, ``Params``, ``rule``, ``_run`` and ``planted_violations``); importing it registers
    them, and ``run_checks`` then runs them with the same power, interval and verdict
    machinery as the built-in checks.

    Arguments:
        path: a ``.py`` file.

    Returns:
        The names of the checks the file registered (or re-registered), in registration order.

    Raises:
        ValueError: the path is not a readable ``.py`` file, or importing it registered no
            check; whatever the module raises on import.
    """
    from proofs_checks._framework import REGISTRY
    from proofs_checks.registry import all_checks

    path = pathlib.Path(path)
    if path.suffix != ".py" or not path.is_file():
        raise ValueError(f"module must be an existing .py file, got {str(path)!r}")
    all_checks()  # the built-in checks first, so a user's check cannot shadow one silently
    before = dict(REGISTRY)
    name = f"sparselab_user_checks_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    added = [n for n, cls in REGISTRY.items() if before.get(n) is not cls]
    if not added:
        raise ValueError(f"module {str(path)!r} registered no check (decorate a Check "
                         f"subclass with proofs_checks.register)")
    return added
