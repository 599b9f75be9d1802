"""``python -m experiments.cli``: the ``sparselab`` command line without its console script."""

from experiments.cli import main

main()
