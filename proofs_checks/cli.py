"""``sparselab check``: run the registered checks, print a table, write JSON and plots.

``run_checks(preset, out)`` is the function behind it (``sparselab reproduce`` can call it);
``check_command`` is the click command to register as ``sparselab check``. For every check
the table gives the claim and its source, the pre-registered settings in one line, the
measured value with its interval, the bound, each decisive part's SVI and MDV with its power at
the SVI (n, refuted, one-sided 95 % Clopper–Pearson lower bound), the per-seed verdicts, the
post-hoc choices and the verdict; ``--json`` carries the same fields (``preregistered``,
``svi``, ``mdv``, ``power``, ``power_lower``, ``power_interval``, ``seed_verdicts``,
``post_hoc``, ``verdict``, ``raw_verdict``, ``details``).
``--module PATH`` imports a user's Python file whose ``@register``-ed checks then run with the
same machinery.
"""

from __future__ import annotations

import json
import pathlib
import sys
import tempfile
from typing import TYPE_CHECKING

import click

from proofs_checks.run import (
    PARAMS_OF_PRESET,
    PRESETS,
    _confirm_paper,
    format_table,
    load_check_module,
    preset_decides,
    run_checks,
)

if TYPE_CHECKING:  # the framework (scipy) and the checks load when checks run, not for --help
    pass

__all__ = ["check_command"]

def _writable(path: pathlib.Path, option: str, folder: bool) -> pathlib.Path:
    """Create the folder ``path`` (or a file's folder) and check that a file can be written
    there, before any check runs.

    (``experiments.cli.options`` has the same check for the other commands; proofs_checks
    does not import experiments.)

    Raises:
        click.ClickException: one line naming ``option``, the path and the reason.
    """
    if folder and path.exists() and not path.is_dir():
        raise click.ClickException(f"{option} {path}: exists and is not a folder")
    if not folder and path.is_dir():
        raise click.ClickException(f"{option} {path}: is a folder, expected a file name")
    try:
        (path if folder else path.parent).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path if folder else path.parent):
            pass
    except OSError as error:
        raise click.ClickException(f"{option} {path}: cannot write there "
                                   f"({error.strerror or error})") from None
    return path


class _PresetChoice(click.Choice):
    """``--preset tiny|quick|paper``; the old name "full" still works, with a note."""

    def convert(self, value, param, ctx):
        if value == "full":
            click.echo("note: --preset full is now called --preset paper", err=True)
            value = "paper"
        return super().convert(value, param, ctx)


@click.command(short_help="The theorems of Baykal et al. 2022 as executable checks.")
@click.option("--only", multiple=True, metavar="NAME",
              help="Run only this check (repeatable). Default: all.")
@click.option("--module", "modules", multiple=True, metavar="PATH",
              type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="A .py file of one's own registered checks (repeatable); without --only, "
                   "only its checks run.")
@click.option("--preset", type=_PresetChoice(PRESETS), default="quick", show_default=True,
              help="tiny: a smoke run in seconds that decides nothing; quick: every check in "
                   "minutes on 2 CPU cores; paper: enough draws to decide every claim "
                   "(formerly 'full').")
@click.option("--json", "json_path", type=click.Path(path_type=pathlib.Path),
              default=None, help="Also write the results (all details) to this JSON file.")
@click.option("--out", type=click.Path(path_type=pathlib.Path), default=None,
              help="Folder for results.json and the plots (one sub-folder per check) "
                   "[default: runs/<preset>/checks].")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of every check (same seed, same numbers).")
@click.option("--yes", is_flag=True,
              help="Start a paper run even when its time estimate (printed first: a previous "
                   "paper run's seconds in --out) exceeds an hour or is unknown; without it "
                   "such a run stops before computing anything.")
def check_command(only: tuple[str, ...], modules: tuple[pathlib.Path, ...], preset: str,
                  json_path: pathlib.Path | None, out: pathlib.Path | None, seed: int,
                  yes: bool) -> None:
    """Run the theorems of Baykal et al. 2022 (§3–§4, App. B) as executable checks.

    Each decisive part declares its smallest violation of interest (SVI); its power is
    measured on planted violations at the SVI and counts through its one-sided 95 %
    Clopper–Pearson lower bound (wanted ≥ 0.8); a part whose minimal detectable violation
    exceeds its SVI makes the check "underpowered". Prints one block per check (claim, settings, measured, headline with its
    interval, bound, power, planted runs, verdict) and exits with status 1 when a check is
    refuted. At --preset paper the time estimate (a previous paper run's seconds in --out)
    is printed first; over an hour, or without one, the run starts only with --yes.
    """
    from proofs_checks._framework import Verdict, to_jsonable
    from proofs_checks.registry import all_checks

    added = []
    for path in modules:
        try:
            added += load_check_module(path)
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint="--module")
    only = only or tuple(added)
    known = all_checks()
    unknown = [n for n in only if n not in known]
    if unknown:
        raise click.BadParameter(f"unknown check(s) {', '.join(map(repr, unknown))}; known "
                                 f"checks: {', '.join(known)}", param_hint="--only")
    out = out or pathlib.Path("runs") / preset / "checks"
    if preset == "paper":  # "full" too: _PresetChoice reads it as "paper"
        _confirm_paper(list(only or known), out, yes)
    out = _writable(out, "--out", folder=True)
    if json_path is not None:
        _writable(json_path, "--json", folder=False)
    results = run_checks(preset, out, only=only or None, seed=seed, echo=click.echo)
    click.echo(format_table(results))
    counts = {v.value: sum(r.verdict == v for r in results) for v in Verdict}
    decides = preset_decides(preset)
    click.echo(("" if decides["decides"] else f"{decides['note']}: ")
               + ", ".join(f"{n} {k}" for k, n in counts.items()))
    if json_path is not None:
        json_path.write_text(json.dumps(to_jsonable(
            {"preset": preset, "params": PARAMS_OF_PRESET[preset], "seed": seed,
             **decides, "results": [r.to_dict() for r in results]}), indent=1, ensure_ascii=False))
    click.echo(f"wrote {out / 'results.json'}")
    if counts[Verdict.REFUTED.value]:
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    check_command()
