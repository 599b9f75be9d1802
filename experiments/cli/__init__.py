"""The ``sparselab`` command line.

Each subcommand lives in the module of the concept it drives; this file is the table of
contents. The modules load only when their command runs (``LazyGroup``), so ``sparselab
--help``, ``--version`` and a mistyped command answer without importing torch, numba or scipy.
"""

from __future__ import annotations

import importlib

import click

#: name -> (module, attribute of the click command, one-line help shown by ``--help``).
#: The help lines are written here, not read from the commands, so that listing them imports
#: nothing; ``tests/experiments/cli/test_cli_startup.py`` checks that each still matches its command.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "reproduce": ("experiments.cli.reproduce", "reproduce_command",
                  "Every figure, table and check into one folder, with report.md."),
    "scale": ("experiments.cli.scale", "scale_command",
              "Run a scaling experiment (a preset or a TOML file) and plot it."),
    "check": ("proofs_checks.cli", "check_command",
              "The theorems of Baykal et al. 2022 as executable checks."),
    "plot": ("experiments.cli.plot", "plot_command",
             "Re-plot any results.csv, one column against another."),
    "targets": ("experiments.cli.targets", "targets_command",
                "The target gallery: 2-D slices and Lipschitz ratios."),
    "comet": ("experiments.cli.comet", "comet_command",
              "COMET §5.1: mask similarity or never-active neurons."),
    "sdm": ("experiments.cli.sdm", "sdm_command",
            "SDM circle-intersection weighting curves (Bricken et al. 2023)."),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use, from ``COMMANDS``.

    ``list_commands`` and the command list of ``--help`` read the static table; only
    ``get_command`` of one name imports that command's module.
    """

    def __init__(self, *args, lazy_commands: dict[str, tuple[str, str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_commands = lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.lazy_commands) | set(super().list_commands(ctx)))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy_commands:
            return super().get_command(ctx, cmd_name)
        module, attribute, _ = self.lazy_commands[cmd_name]
        return getattr(importlib.import_module(module), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy_commands[name][2] if name in self.lazy_commands
                 else super().get_command(ctx, name).get_short_help_str())
                for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, lazy_commands=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Presets, for every command: tiny (seconds, for tests), quick (minutes on "
                    "2 CPU cores), paper (the papers' sizes). Results go to "
                    "runs/<preset>/<name> unless --out says otherwise (runs/sdm for sdm "
                    "curves, which has no preset).")
@click.version_option(package_name="sparselab", prog_name="sparselab")
def main() -> None:
    """sparselab: check the theory of sparsely activated networks on real computations."""


if __name__ == "__main__":  # pragma: no cover
    main()
