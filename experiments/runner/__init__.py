"""How an experiment runs: configs as data (``specs``), sweeps and their rows, the Dask engine,
the thread policy, output folders with one writer and a settings fingerprint, time estimates and
the image data sets."""
