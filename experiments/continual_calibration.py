"""The calibration of the continual experiment's learning rates and EWC λ (Bricken et al.
2023 §5 set-up; ``experiments.real_data.QUICK_CONTINUAL``), as a rule that reruns.

The rule, fixed before the run whose values the quick preset uses: on the calibration seed
``CALIBRATION_SEED`` (100; no verdict uses it — the verdict seeds are the preset's 0–3), on
Split digits with the quick preset's sizes at ``epochs_per_task`` epochs a task, one value
at a time, each with the values chosen before it:

1. ``sdm_lr`` from ``SDM_LRS`` by SDMLP's final accuracy;
2. ``sgd_lr`` from ``SGD_LRS`` by the mean final accuracy of the three models it trains
   that ``sdm_lr`` does not (``SGD_JUDGES``: Top-K, the ReLU MLP, EWC);
3. ``ewc_lambda`` from ``EWC_LAMBDAS`` by EWC's final accuracy.

Ties go to the value listed first. A value not chosen yet is the quick preset's: SDMLP does
not train with sgd_lr, and λ, not chosen yet when sgd_lr is, comes out at the preset's 3e4.

Rerun: ``python -m experiments.continual_calibration --epochs-per-task 20``. At 40 epochs a
task (the quick preset until issue 27) the rule gives the rates the preset had, sdm_lr 0.3,
sgd_lr 0.1 and λ 3e4, which the paper preset keeps
(``experiments.real_data.PAPER_CONTINUAL_RATES``); at 20 (the quick preset since) it gives
sdm_lr 1, sgd_lr 0.3 and λ 3e4 (``QUICK_CONTINUAL``).
"""

from __future__ import annotations

import argparse
import json

from routing.validation import check_int, check_seed

__all__ = ["CALIBRATION_SEED", "SDM_LRS", "SGD_LRS", "EWC_LAMBDAS", "SGD_JUDGES",
           "calibrate_continual"]

#: The seed the rates are calibrated on; never a verdict seed.
CALIBRATION_SEED = 100
#: Candidate values, in the order ties are broken.
SDM_LRS = (0.3, 1.0, 3.0)
SGD_LRS = (0.01, 0.03, 0.1, 0.3)
EWC_LAMBDAS = (1e4, 3e4, 1e5, 3e5, 1e6, 1e7)
#: The models whose mean final accuracy picks sgd_lr.
SGD_JUDGES = ("Top-K", "ReLU MLP", "EWC (ReLU MLP)")


def calibrate_continual(epochs_per_task: int, seed: int = CALIBRATION_SEED,
                        overrides: dict | None = None, progress: bool = False) -> dict:
    """Choose sdm_lr, sgd_lr and ewc_lambda by the module's rule on Split digits.

    Arguments:
        epochs_per_task: epochs a task (>= 1) the rates are calibrated for.
        seed: the calibration seed (>= 0, not one of the quick preset's verdict seeds).
        overrides: other ``ContinualSettings`` fields to change from the quick preset's (for
            tests: smaller sizes), or None. The three calibrated fields may not be in it.
        progress: print each candidate's accuracy as it is measured.

    Returns:
        {"chosen": the quick preset's settings dict with the three values chosen (and
        ``epochs_per_task``, ``overrides``), "accuracy": {"sdm_lr": {value: SDMLP's final
        accuracy}, "sgd_lr": {value: {judge: final accuracy}}, "ewc_lambda": {value: EWC's
        final accuracy}}} — accuracies are fractions of the test set in [0, 1].

    Raises:
        ValueError: ``epochs_per_task`` not an integer >= 1; ``seed`` not a seed or one of
            the verdict seeds; ``overrides`` not a dict, naming a calibrated field or an
            unknown one.

    Source: the set-up is Bricken et al. 2023's (§5, App. F.3: class-incremental Split data,
    SGD, EWC); they give no rates for Split digits, so the rule is ours.
    """
    from dataclasses import fields

    from experiments.continual import ContinualSettings, run_continual_model
    from experiments.real_data import QUICK_CONTINUAL, experiment_config
    from experiments.real_data._rows import _data, _flat

    epochs_per_task = check_int(epochs_per_task, "epochs_per_task", 1)
    seed = check_seed(seed)
    config = experiment_config("continual", "quick", "digits")
    if seed in config.seeds:
        raise ValueError(f"seed must not be a verdict seed of the quick preset "
                         f"{tuple(config.seeds)}, got {seed}")
    overrides = {} if overrides is None else overrides
    if not isinstance(overrides, dict):
        raise ValueError(f"overrides must be a dict of ContinualSettings fields, got "
                         f"{type(overrides).__name__}")
    known = {f.name for f in fields(ContinualSettings)}
    calibrated = {"sdm_lr", "sgd_lr", "ewc_lambda"}
    bad = sorted(set(overrides) & calibrated) + sorted(set(overrides) - known)
    if bad:
        raise ValueError(f"overrides may name ContinualSettings fields other than "
                         f"{sorted(calibrated)}, got {bad}")
    data = _flat(*_data("quick", None, "digits")[1:])
    values = {**QUICK_CONTINUAL, **overrides, "epochs_per_task": epochs_per_task}

    def final(label: str, **trial) -> float:
        settings = ContinualSettings(class_order=config.continual["class_order"],
                                     **{**values, **trial})
        # the model's size is matched to the ReLU MLP's parameters for these settings
        accuracy = float(run_continual_model(label, data, settings, seed,
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
    return {"chosen": values, "accuracy": accuracy}


def _first_best(scores: dict) -> float:
    """The key of the highest score; of tied keys, the first."""
    best = max(scores.values())
    return next(v for v, s in scores.items() if s == best)


def _main(argv=None) -> None:
    """``python -m experiments.continual_calibration --epochs-per-task E [--seed S]``: print
    the calibration as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs-per-task", type=int, required=True)
    parser.add_argument("--seed", type=int, default=CALIBRATION_SEED)
    args = parser.parse_args(argv)
    from experiments.threads import single_threaded

    with single_threaded():
        result = calibrate_continual(args.epochs_per_task, args.seed, progress=True)
    print(json.dumps({"chosen": result["chosen"],
                      "accuracy": {k: {str(v): a for v, a in d.items()}
                                   for k, d in result["accuracy"].items()}}, indent=1))


if __name__ == "__main__":
    _main()
