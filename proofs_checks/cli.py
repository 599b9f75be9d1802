"""``sparselab check``: run the registered checks, print a table, write JSON and plots.

``run_checks(preset, out)`` is the function behind it (``sparselab reproduce`` can call it);
``check_command`` is the click command to register as ``sparselab check``.
"""

from __future__ import annotations

import json
import pathlib
import sys
import textwrap
import time
from typing import Callable, Iterable

import click
from tqdm.auto import tqdm

from proofs_checks._framework import CheckResult, Verdict, to_jsonable
from proofs_checks.registry import all_checks

__all__ = ["run_checks", "write_checks", "format_table", "check_command", "PRESETS"]

PRESETS = ("quick", "full")


def run_checks(preset: str, out: str | pathlib.Path | None, only: Iterable[str] | None = None,
               seed: int = 0, progress: bool = True,
               echo: Callable[[str], None] | None = None) -> list[CheckResult]:
    """Run the registered checks with a preset's parameters.

    Arguments:
        preset: "quick" (every check in minutes on 2 CPU cores) or "full" (enough draws to
            decide the probabilistic claims).
        out: folder for the plots (``out/<check name>/``) and ``out/results.json``; None
            writes nothing.
        only: names of the checks to run (default: all, in registry order).
        seed: the seed of every check (same seed, same numbers).
        progress: show a tqdm progress bar on stderr.
        echo: called with one line per finished check (e.g. ``click.echo``), or None.

    Returns:
        One ``CheckResult`` per check, in run order.

    Raises:
        ValueError: an unknown preset or check name (the message lists the known ones).
    """
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")
    checks = all_checks()
    names = list(checks) if not only else list(dict.fromkeys(only))
    unknown = [n for n in names if n not in checks]
    if unknown:
        raise ValueError(f"unknown check(s) {', '.join(map(repr, unknown))}; "
                         f"known checks: {', '.join(checks)}")
    out = None if out is None else pathlib.Path(out)
    results = []
    bar = tqdm(names, desc="sparselab check", unit="check", disable=not progress,
               file=sys.stderr, leave=False)
    start = time.perf_counter()
    for name in bar:
        bar.set_postfix_str(name)
        result = checks[name].preset(preset).run(seed, None if out is None else out / name)
        results.append(result)
        if echo is not None:
            echo(f"[{result.verdict.value:>12}] {name} ({result.seconds:.1f} s)")
    bar.close()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        payload = {"preset": preset, "seed": seed,
                   "seconds": round(time.perf_counter() - start, 2),
                   "results": [r.to_dict() for r in results]}
        (out / "results.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False))
    return results


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


def format_table(results: list[CheckResult], width: int = 44) -> str:
    """A plain-text table with columns check, claim, measured, bound, verdict (wrapped)."""
    header = ("check", "claim", "measured", "bound", "verdict")
    rows = [(r.name, f"{r.claim} [{r.source}]", r.measured_text, r.bound_text,
             r.verdict.value + ("" if r.draws_needed is None or r.verdict != Verdict.INCONCLUSIVE
                                else f" (+{r.draws_needed} draws)")) for r in results]
    widths = [max(len(header[0]), *(len(r[0]) for r in rows)) if rows else 5, width, width,
              30, 14]
    lines = []

    def emit(cells):
        wrapped = [textwrap.wrap(c, w) or [""] for c, w in zip(cells, widths)]
        for i in range(max(len(w) for w in wrapped)):
            lines.append(" | ".join((w[i] if i < len(w) else "").ljust(n)
                                    for w, n in zip(wrapped, widths)).rstrip())

    emit(header)
    lines.append("-+-".join("-" * n for n in widths))
    for row in rows:
        emit(row)
        lines.append("")
    return "\n".join(lines)


@click.command()
@click.option("--only", multiple=True, metavar="NAME",
              help="Run only this check (repeatable). Default: all.")
@click.option("--preset", type=click.Choice(PRESETS), default="quick", show_default=True,
              help="quick: minutes on 2 CPU cores; full: enough draws to decide every claim.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=pathlib.Path),
              default=None, help="Write the results (all details) to this JSON file.")
@click.option("--out", type=click.Path(file_okay=False, path_type=pathlib.Path), default=None,
              help="Folder for plots (one sub-folder per check) and results.json.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of every check (same seed, same numbers).")
def check_command(only: tuple[str, ...], preset: str, json_path: pathlib.Path | None,
                  out: pathlib.Path | None, seed: int) -> None:
    """Run the theorems of Baykal et al. 2022 (§3–§4) as executable checks.

    Prints a table (check, claim, measured, bound, verdict) and exits with status 1 when a
    check is refuted.
    """
    known = all_checks()
    unknown = [n for n in only if n not in known]
    if unknown:
        raise click.BadParameter(f"unknown check(s) {', '.join(map(repr, unknown))}; known "
                                 f"checks: {', '.join(known)}", param_hint="--only")
    results = run_checks(preset, out, only=only or None, seed=seed, echo=click.echo)
    click.echo(format_table(results))
    counts = {v.value: sum(r.verdict == v for r in results) for v in Verdict}
    click.echo(", ".join(f"{n} {k}" for k, n in counts.items()))
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(to_jsonable(
            {"preset": preset, "seed": seed, "results": [r.to_dict() for r in results]}),
            indent=1, ensure_ascii=False))
    if counts[Verdict.REFUTED.value]:
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    check_command()
