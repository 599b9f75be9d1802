"""The continual claims (Bricken et al. 2023 §5) pick their rows by the router's registry name
and the harness's options (``model``, ``ewc``, ``joint``), not by display label."""

import json

import numpy as np
import pandas as pd
import pytest

from experiments.papers.real_data import experiment_config
from experiments.papers.real_data.continual import continual_claims, label_of

#: (registry name, ewc, joint, display label, mean test error): SDMLP clearly better.
MODELS = [("sdmlp", False, False, "SDMLP", 0.3), ("sdmlp_mask", False, False, "SDMLP (mask)", 0.6),
          ("topk_mlp", False, False, "Top-K", 0.6), ("dense_mlp", False, False, "ReLU MLP", 0.6),
          ("dense_mlp", True, False, "EWC (ReLU MLP)", 0.6),
          ("dense_mlp", False, True, "oracle (ReLU MLP, joint)", 0.1)]


def _frame(labels=None):
    rng = np.random.default_rng(0)
    rows = []
    for i, (model, ewc, joint, label, error) in enumerate(MODELS):
        for seed in range(6):
            e = error + rng.normal(0, 0.01)
            rows.append({"model": model, "ewc": ewc, "joint": joint, "seed": seed,
                         "model_label": labels[i] if labels else label, "error": e,
                         "final_accuracy": 1 - e, "forgetting": e,
                         "dead_per_task": json.dumps([e / 2] * 5),
                         "optimizer": "sgd", "lr": 0.1})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def config():
    return experiment_config("continual", "tiny", "digits")


def _outcome(claims):
    return [(c.verdict, round(c.effect, 12)) for c in claims]


def test_claims_select_rows_by_registry_name_not_label(config):
    plain = continual_claims(_frame(), config)
    assert len(plain) == 7 and all(c.verdict != "not tested" for c in plain)
    renamed = continual_claims(_frame([f"model {i}" for i in range(len(MODELS))]), config)
    assert _outcome(renamed) == _outcome(plain)  # the same rows, whatever their labels
    # rows written before the name columns: filled in from the harness's labels
    older = continual_claims(_frame().drop(columns=["model", "ewc", "joint"]), config)
    assert _outcome(older) == _outcome(plain)
    # renamed rows without names cannot be found: the claims are not tested, not wrong
    lost = _frame([f"model {i}" for i in range(len(MODELS))]).drop(columns=["model"])
    assert {c.verdict for c in continual_claims(lost, config)} == {"not tested"}


def test_label_of_reads_names_and_options():
    frame = _frame([f"m{i}" for i in range(len(MODELS))])
    assert label_of(frame, "sdmlp") == "m0"
    assert label_of(frame, "dense_mlp") == "m3"
    assert label_of(frame, "dense_mlp", ewc=True) == "m4"
    assert label_of(frame, "dense_mlp", joint=True) == "m5"
    assert label_of(frame.iloc[:0], "dense_mlp", joint=True) == "oracle (ReLU MLP, joint)"
    assert label_of(frame, "no_such") == "no_such"
    twice = pd.concat([frame, frame.assign(model_label="other")])
    with pytest.raises(ValueError, match="2 labels for model 'sdmlp'"):
        label_of(twice, "sdmlp")
    with pytest.raises(ValueError, match="ewc must be True or False"):
        label_of(frame, "sdmlp", ewc="True")
