"""From a config (a preset or a TOML file) to a results folder: config files, reports, reruns
and ``sparselab reproduce`` with its steps, its parallel driver and the install-time warm-up."""
