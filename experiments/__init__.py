"""Models fitted to the targets, sweeps, tables, plots and the ``sparselab`` command line."""
