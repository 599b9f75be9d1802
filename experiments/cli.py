"""The ``sparselab`` command line.

Each subcommand lives in the module of the concept it drives and is registered here, so this
file stays a table of contents.
"""

from __future__ import annotations

import click

from experiments.comet_cli import comet_command
from experiments.gallery import targets_command
from experiments.plot_cli import plot_command
from experiments.reproduce import reproduce_command
from experiments.scale_cli import scale_command
from experiments.sdm_cli import sdm_command
from proofs_checks.cli import check_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sparselab", prog_name="sparselab")
def main() -> None:
    """sparselab: check the theory of sparsely activated networks on real computations."""


main.add_command(targets_command, name="targets")
main.add_command(reproduce_command, name="reproduce")
main.add_command(scale_command, name="scale")
main.add_command(sdm_command, name="sdm")
main.add_command(check_command, name="check")
main.add_command(comet_command, name="comet")
main.add_command(plot_command, name="plot")


if __name__ == "__main__":  # pragma: no cover
    main()
