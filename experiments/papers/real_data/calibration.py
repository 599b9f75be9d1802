"""The calibration of the continual experiment's learning rates and EWC λ (Bricken et al.
2023 §5 set-up; ``experiments.papers.real_data.QUICK_CONTINUAL``), as a rule that reruns.

The rule, fixed before the run whose values a preset uses: on the calibration seed
``CALIBRATION_SEED`` (100; no verdict uses it — the verdict seeds are the presets' 0–3), on
the Split data set in use (its training and test split) with the quick preset's sizes for
it at ``epochs_per_task`` epochs a task, one value at a time, each with the values chosen
before it:

1. ``sdm_lr`` from ``SDM_LRS`` by SDMLP's final accuracy;
2. ``sgd_lr`` from ``SGD_LRS`` by the mean final accuracy of the three models it trains
   that ``sdm_lr`` does not (``SGD_JUDGES``: Top-K, the ReLU MLP, EWC);
3. ``ewc_lambda`` from ``EWC_LAMBDAS`` by EWC's final accuracy;
4. ``sdm_ewc_lambda`` from ``SDM_EWC_LAMBDAS`` by SDMLP + EWC's final accuracy (a grid of
   its own, reaching lower: at EWC's λs SDMLP + EWC learns its first task alone, and Bricken
   et al. suggest the combination wants a smaller coefficient, App. F.3 footnote 18).

Ties go to the value listed first. A value not chosen yet is ``ContinualSettings``' default:
SDMLP does not train with sgd_lr, and λ, not chosen yet when sgd_lr is, is 3e4.

Rerun: ``python -m experiments.papers.real_data.calibration --data mnist_5k --epochs-per-task 5
--out rates.json``; the file it writes is what ``sparselab scale --experiment continual
--calibration rates.json`` reads. The values of each run kept in the code are
``experiments.papers.real_data.CALIBRATED_RATES`` (by data set and epochs a task; on the digits at
40 epochs a task: sdm_lr 0.3, sgd_lr 0.1, λ 3e4, which the paper preset keeps where the rule
was not run on its data, ``PAPER_CONTINUAL_RATES``).
"""

from __future__ import annotations

import argparse
import json
import pathlib

from routing.validation import check_choice, check_int, check_seed

__all__ = ["CALIBRATION_SEED", "SDM_LRS", "SGD_LRS", "EWC_LAMBDAS", "SDM_EWC_LAMBDAS",
           "SGD_JUDGES", "calibrate_continual"]

#: The seed the rates are calibrated on; never a verdict seed.
CALIBRATION_SEED = 100
#: Candidate values, in the order ties are broken.
SDM_LRS = (0.3, 1.0, 3.0)
SGD_LRS = (0.01, 0.03, 0.1, 0.3)
EWC_LAMBDAS = (1e4, 3e4, 1e5, 3e5, 1e6, 1e7)
SDM_EWC_LAMBDAS = (1.0, 10.0, 100.0, 1e3, 1e4)
#: The models whose mean final accuracy picks sgd_lr.
SGD_JUDGES = ("Top-K", "ReLU MLP", "EWC (ReLU MLP)")


def calibrate_continual(epochs_per_task: int, seed: int = CALIBRATION_SEED,
                        overrides: dict | None = None, progress: bool = False,
                        data: str = "digits", data_dir=None) -> dict:
    """Choose sdm_lr, sgd_lr, ewc_lambda and sdm_ewc_lambda by the module's rule on Split
    ``data``.

    Arguments:
        epochs_per_task: epochs a task (>= 1) the rates are calibrated for.
        seed: the calibration seed (>= 0, not one of the quick preset's verdict seeds).
        overrides: other ``ContinualSettings`` fields to change from the quick preset's (for
            tests: smaller sizes), or None. The calibrated fields may not be in it.
        progress: print each candidate's accuracy as it is measured.
        data, data_dir: the data set (a name of ``experiments.runner.datasets.DATASETS``; "mnist"
            and "cifar10" with their folder).

    Returns:
        {"chosen": the quick preset's settings dict for ``data`` with the four values chosen
        (and ``epochs_per_task``, ``overrides``), "accuracy": {"sdm_lr": {value: SDMLP's
        final accuracy}, "sgd_lr": {value: {judge: final accuracy}}, "ewc_lambda": {value:
        EWC's final accuracy}, "sdm_ewc_lambda": {value: SDMLP + EWC's}}, "data": the data's
        identity (``experiments.runner.datasets.data_identity``), "seed"} — accuracies are
        fractions of the test set in [0, 1].

    Raises:
        ValueError: ``epochs_per_task`` not an integer >= 1; ``seed`` not a seed or one of
            the verdict seeds; ``overrides`` not a dict, naming a calibrated field or an
            unknown one; an unknown data set, or the loaders' errors.

    Source: the set-up is Bricken et al. 2023's (§5, App. F.3: class-incremental Split data,
    SGD, EWC); they give no rates for Split digits, so the rule is ours.
    """
    from dataclasses import fields

    from experiments.kinds.continual_harness import ContinualSettings, run_continual_model
    from experiments.runner.datasets import DATASETS, load_image_data
    from experiments.papers.real_data import QUICK_CONTINUAL, experiment_config
    from experiments.papers.real_data._configs import CALIBRATED_FIELDS, QUICK_CONTINUAL_MNIST
    from experiments.papers.real_data._rows import _flat

    epochs_per_task = check_int(epochs_per_task, "epochs_per_task", 1)
    seed = check_seed(seed)
    data = check_choice(data, "data", DATASETS)
    config = experiment_config("continual", "quick", data)
    if seed in config.seeds:
        raise ValueError(f"seed must not be a verdict seed of the quick preset "
                         f"{tuple(config.seeds)}, got {seed}")
    overrides = {} if overrides is None else overrides
    if not isinstance(overrides, dict):
        raise ValueError(f"overrides must be a dict of ContinualSettings fields, got "
                         f"{type(overrides).__name__}")
    known = {f.name for f in fields(ContinualSettings)}
    calibrated = set(CALIBRATED_FIELDS)
    bad = sorted(set(overrides) & calibrated) + sorted(set(overrides) - known)
    if bad:
        raise ValueError(f"overrides may name ContinualSettings fields other than "
                         f"{sorted(calibrated)}, got {bad}")
    images = load_image_data(data, data_dir)
    arrays = _flat(images.X_train, images.y_train, images.X_test, images.y_test)
    sizes = QUICK_CONTINUAL if data == "digits" else QUICK_CONTINUAL_MNIST
    values = {**sizes, **overrides, "epochs_per_task": epochs_per_task}

    def final(label: str, **trial) -> float:
        settings = ContinualSettings(class_order=config.continual["class_order"],
                                     **{**values, **trial})
        # the model's size is matched to the ReLU MLP's parameters for these settings
        accuracy = float(run_continual_model(label, arrays, settings, seed,
                                             "cpu")["final_accuracy"])
        if progress:
            print(f"[calibration] {label} {trial}: final accuracy {accuracy:.4f}", flush=True)
        return accuracy

    accuracy: dict = {"sdm_lr": {v: final("SDMLP", sdm_lr=v) for v in SDM_LRS}}
    values["sdm_lr"] = _first_best(accuracy["sdm_lr"])
    accuracy["sgd_lr"] = {v: {m: final(m, sgd_lr=v) for m in SGD_JUDGES} for v in SGD_LRS}
    values["sgd_lr"] = _first_best({v: sum(a.values()) / len(a)
                                    for v, a in accuracy["sgd_lr"].items()})
    accuracy["ewc_lambda"] = {v: final("EWC (ReLU MLP)", ewc_lambda=v) for v in EWC_LAMBDAS}
    values["ewc_lambda"] = _first_best(accuracy["ewc_lambda"])
    accuracy["sdm_ewc_lambda"] = {v: final("SDMLP + EWC", sdm_ewc_lambda=v)
                                  for v in SDM_EWC_LAMBDAS}
    values["sdm_ewc_lambda"] = _first_best(accuracy["sdm_ewc_lambda"])
    return {"chosen": values, "accuracy": accuracy, "data": images.identity, "seed": seed}


def _first_best(scores: dict) -> float:
    """The key of the highest score; of tied keys, the first."""
    best = max(scores.values())
    return next(v for v, s in scores.items() if s == best)


def _main(argv=None) -> None:
    """``python -m experiments.papers.real_data.calibration --epochs-per-task E [--seed S] [--data
    NAME] [--data-dir DIR] [--out FILE]``: print the calibration as JSON (and write it to
    FILE, which ``--calibration`` reads)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs-per-task", type=int, required=True)
    parser.add_argument("--seed", type=int, default=CALIBRATION_SEED)
    parser.add_argument("--data", default=None, help="data set name (default: digits, or the "
                        "one --data-dir holds)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out", default=None, help="write the JSON to this file too")
    args = parser.parse_args(argv)
    from experiments.runner.datasets import find_dataset
    from experiments.runner.threads import single_threaded

    data = args.data or (find_dataset(args.data_dir) if args.data_dir else "digits")
    with single_threaded():
        result = calibrate_continual(args.epochs_per_task, args.seed, progress=True,
                                     data=data, data_dir=args.data_dir)
    text = json.dumps({"chosen": result["chosen"], "seed": result["seed"],
                       "data": result["data"],
                       "accuracy": {k: {str(v): a for v, a in d.items()}
                                    for k, d in result["accuracy"].items()}}, indent=1)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    _main()
