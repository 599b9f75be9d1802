"""experiments.papers.real_data: the three experiments at the tiny preset (files, resuming, settings
refusal, --data-dir with MNIST IDX files) and the paired verdict rule across its thresholds."""

import json

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.claims import CLAIM_COLUMNS
from experiments.papers.real_data import (EXPERIMENTS, experiment_config, output_files, paired_claim,
                                   run_cifar, run_comet_images, run_continual)

pytestmark = pytest.mark.usefixtures("one_thread")


# -- the verdict rule ------------------------------------------------------------------------

def frame_of(better, worse, xs=(1, 2, 3)):
    """Rows of two models: ``better`` / ``worse`` map (x, seed) -> error."""
    rows = []
    for label, values in (("A", better), ("B", worse)):
        for (x, seed), v in values.items():
            rows.append({"model_label": label, "x": x, "seed": seed, "err": v})
    return pd.DataFrame(rows)


def claim(better, worse):
    return paired_claim("t", "A beats B", frame_of(better, worse), "A", "B", "x", "err",
                        "src", "test error")


SEEDS = range(4)
JITTER = [0.001, -0.001, 0.002, -0.002]


def test_paired_claim_supported_not_supported_mixed_inconclusive():
    base = {(x, s): 0.30 for x in (1, 2, 3) for s in SEEDS}
    lower = {(x, s): 0.20 + JITTER[s] for x, s in base}
    c = claim(lower, base)
    assert c.verdict == "supported" and c.effect < 0 and c.effect_high < 0
    assert c.diagnosis == ""
    c = claim(base, lower)  # the claimed-better model is worse everywhere
    assert c.verdict == "not supported" and c.effect_low > 0
    assert "A is not lower at x = 1 (Δ +0.1000, significant), 2" in c.diagnosis
    mixed = {(x, s): (0.20 if x < 3 else 0.40) + JITTER[s] for x, s in base}
    assert claim(mixed, base).verdict == "mixed"
    # wins on the means at every x, but one seed goes the other way strongly: the paired
    # interval contains 0, and 4 seeds could not have detected 1 point of accuracy
    noisy = {(x, s): 0.29 + (0.3 if s == 0 else -0.12) for x, s in base}
    c = claim(noisy, base)
    assert c.verdict == "underpowered" and c.effect_low < 0 < c.effect_high
    assert "do not separate" in c.diagnosis and c.mde > c.sesoi == 0.01
    # no seed noise (identical differences on every seed): never supported
    assert claim({k: v - 0.1 for k, v in base.items()}, base).verdict == \
        "inconclusive (no seed noise measured)"
    # no shared x
    other = {(9, s): 0.1 for s in SEEDS}
    assert claim(other, base).verdict == "not tested"


def test_paired_claim_threshold_moves_with_the_margin():
    """Moving A's error across B's (0.30) flips the verdict from supported to not supported."""
    base = {(x, s): 0.30 + JITTER[s] for x in (1, 2) for s in SEEDS}
    for shift, verdict in ((-0.01, "supported"), (+0.01, "not supported")):
        moved = {(x, s): 0.30 + shift + JITTER[s] / 2 for x, s in base}
        assert claim(moved, base).verdict == verdict


def test_the_regime_is_read_from_the_rows_optimiser_and_given_text_wins():
    from experiments.papers.real_data._verdicts import shared_regime, training_regime

    frame = frame_of({(1, s): 0.2 + JITTER[s] for s in SEEDS},
                     {(1, s): 0.3 for s in SEEDS})
    assert training_regime(frame, ["A", "B"]) == ""  # rows without an optimiser
    assert claim({(1, s): 0.2 for s in SEEDS}, {(1, s): 0.3 for s in SEEDS}).regime == ""
    frame["optimizer"] = np.where(frame["model_label"] == "A", "sgd", "adam")
    frame["lr"] = np.where(frame["model_label"] == "A", 0.3, 1e-3)
    text = training_regime(frame, ["A", "B", "absent"], "5 epochs a task")
    assert text == "SGD lr 0.3 (A); Adam lr 0.001 (B); 5 epochs a task"
    frame["lr"] = 0.1
    frame["optimizer"] = "sgd"  # one (optimiser, rate) shared: named once, both models
    assert training_regime(frame, ["A", "B"]) == "SGD lr 0.1 (A, B)"
    c = paired_claim("t", "A beats B", frame, "A", "B", "x", "err", "src", "test error")
    assert c.regime == "SGD lr 0.1 (A, B)"
    c = paired_claim("t", "A beats B", frame, "A", "B", "x", "err", "src", "test error",
                     regime="given")
    assert c.regime == "given"
    with pytest.raises(TypeError, match="regime"):
        paired_claim("t", "A beats B", frame, "A", "B", "x", "err", "src", "test error",
                     regime=3)
    with pytest.raises(TypeError, match="labels"):
        training_regime(frame, [1])
    assert shared_regime(experiment_config("comet_images", "tiny", "digits")).startswith(
        "Adam lr 0.001, ")
    with pytest.raises(TypeError, match="epochs"):
        shared_regime(object())


# -- presets ---------------------------------------------------------------------------------

def test_paper_preset_needs_data_and_presets_are_checked(tmp_path):
    with pytest.raises(ValueError, match="--data-dir"):
        experiment_config("cifar", "paper", "digits")
    with pytest.raises(ValueError, match="preset must be one of"):
        run_cifar("huge", tmp_path)
    with pytest.raises(ValueError, match="--data-dir"):
        run_comet_images("paper", tmp_path)
    assert set(EXPERIMENTS) == {"cifar", "continual", "comet_images"}
    assert experiment_config("cifar", "paper", "cifar10").epochs == 50  # Baykal et al. §5


def test_cifar_tiny_writes_resumes_and_refuses_other_settings(tmp_path):
    out = tmp_path / "cifar"
    frame = run_cifar("tiny", out, progress=False)
    # 2 seeds × activated (4, 8) × (dense, DSM 50 %, DSM 25 %)
    assert len(frame) == 12
    assert set(frame["model_label"]) == {"CNN + dense", "CNN + DSM 50% sparse",
                                         "CNN + DSM 25% sparse"}
    dsm = frame[frame["model_label"] == "CNN + DSM 25% sparse"]
    assert (dsm["width"] == 4 * dsm["k"]).all() and (dsm["activated_units"] == dsm["k"]).all()
    assert frame["test_accuracy"].between(0, 1).all()
    names = {p.name for p in output_files(out)}
    assert {"results.csv", "config.json", "claims.csv", "table.md", "cifar_fig5.png"} <= names
    claims = pd.read_csv(out / "claims.csv")
    assert list(claims.columns) == CLAIM_COLUMNS and len(claims) == 4  # 2 claims, 2 controls
    assert list(claims["role"]) == ["claim", "claim", "negative control", "positive control"]
    config = json.loads((out / "config.json").read_text())
    assert config["dataset"] == "digits" and config["n_train"] + config["n_test"] == 1797
    assert "69.79" in (out / "table.md").read_text()  # the paper's Table 3 beside ours
    # resuming: an interrupted run (rows lost) redoes only the missing rows, same numbers
    table = pd.read_csv(out / "results.csv", dtype={"settings": str})
    table.iloc[:5].to_csv(out / "results.csv", index=False)
    again = run_cifar("tiny", out, progress=False)
    pd.testing.assert_frame_equal(
        again.drop(columns="wall_s").sort_values(["model_key", "seed"]).reset_index(drop=True),
        frame.drop(columns="wall_s").sort_values(["model_key", "seed"]).reset_index(drop=True))
    assert (again.iloc[:5]["wall_s"].to_numpy() == table.iloc[:5]["wall_s"].to_numpy()).all()
    # other settings (seeds are not settings; other rows' fingerprint is) are refused
    table = pd.read_csv(out / "results.csv", dtype={"settings": str})
    table.loc[0, "settings"] = "000000000000"
    table.to_csv(out / "results.csv", index=False)
    with pytest.raises(ValueError, match="other settings"):
        run_cifar("tiny", out, progress=False)
    assert len(run_cifar("tiny", out, seeds=[5], progress=False, force=True)) == 6


def write_mnist(folder, n_train=100, n_test=50):
    from tests.experiments.runner.test_datasets import write_mnist as write

    return write(folder, n_train=n_train, n_test=n_test)


def test_continual_tiny_on_digits_all_models_and_claims(tmp_path):
    from experiments.kinds.continual_harness import MODELS

    frame = run_continual("tiny", tmp_path, seeds=[0], progress=False)
    assert set(frame["model_label"]) == set(MODELS)
    assert frame["final_accuracy"].between(0, 1).all()
    R = np.array(json.loads(frame.loc[frame["model_label"] == "SDMLP", "acc_matrix"].iloc[0]),
                 dtype=float)
    assert R.shape == (5, 5)
    claims = pd.read_csv(tmp_path / "claims.csv")
    assert len(claims) == 9 and claims["verdict"].notna().all()  # 7 claims, 2 controls
    assert claims["role"].value_counts()["claim"] == 7
    assert (tmp_path / "continual_fig3.png").stat().st_size > 0
    text = (tmp_path / "table.md").read_text()
    assert "0.53" in text and "Linear Mask 0.38" in text
    # matched parameters: every row within ±5 % of the ReLU MLP's, recorded with how
    rows = pd.read_csv(tmp_path / "results.csv")
    reference = rows.loc[rows["model_label"] == "ReLU MLP", "params"].iloc[0]
    assert (rows["relu_mlp_params"] == reference).all() and rows["params_matched"].all()
    assert ((rows["params"] - reference).abs() <= 0.05 * reference).all()
    assert np.allclose(rows["params_rel_diff"], (rows["params"] - reference) / reference,
                       atol=1e-6)
    assert rows["sizing"].str.len().gt(0).all() and rows["size"].map(json.loads).map(len).all()
    assert "Matched parameters: every model's trainable parameters matched to within ±5%" in text
    config = json.loads((tmp_path / "config.json").read_text())["config"]
    assert "matched to within ±5%" in config["parameter_matching"]
    assert config["matched"]["PKM"]["params"] == rows.loc[rows["model_label"] == "PKM",
                                                          "params"].iloc[0]
    # every claim says which comparison it tests at the run's k (4 at tiny), cites Table 7's
    # rows where it compares final accuracies, names its regime (the harness's SGD, epochs,
    # batch) and leaves the paper's name to its source column
    assert (claims["regime"].str.contains("SGD lr ") & claims["regime"].str.contains(
        "2 epochs a task, batch 32")).all()
    texts = claims[claims["role"] == "claim"]
    assert texts["claim"].str.contains("k = 4").all()
    assert not texts["claim"].str.contains("Bricken").any()
    assert texts["source"].str.startswith("Bricken et al. 2023").all()
    assert (texts["record"] != "unrecorded").all()
    ewc = texts[texts["record"] == "sdmlp_vs_ewc"].iloc[0]
    assert "text ranks" in ewc["claim"] and "disagrees at k = 10" in ewc["claim"]
    assert ("Paper (Table 7, Split MNIST, 1K neurons): SDMLP k = 1 0.69, SDMLP k = 10 0.53, "
            "EWC (ReLU MLP) 0.61, MAS (not run here) 0.49") in ewc["evidence"]
    relu = texts[texts["record"] == "sdmlp_vs_relu"].iloc[0]
    assert relu["evidence"].endswith("SDMLP k = 1 0.69, SDMLP k = 10 0.53, ReLU MLP 0.21")
    assert "SGD lr" in relu["regime"] and "(SDMLP)" in relu["regime"]
    topk = texts[texts["record"] == "sdmlp_vs_topk"].iloc[0]
    assert topk["evidence"].endswith("Top-K k = 10 0.22")
    assert "Table 7 has EWC (0.61) above SDMLP at k = 10 (0.53)" in text
    assert "this run's SDMLP is at k = 4" in text
    assert "| claim | source | verdict |" in text and "App. F.3, Table 7" in text


def test_table7_rows_are_the_papers_rows_with_their_k():
    from experiments.papers.real_data.continual import table7_rows

    assert table7_rows("SDMLP") == "SDMLP k = 1 0.69, SDMLP k = 10 0.53"
    assert table7_rows("SDMLP + EWC", "oracle (ReLU MLP, joint)", "SMEAR") == \
        "SDMLP + EWC k = 10 0.83, oracle (ReLU MLP, joint) 0.98"
    assert table7_rows("SDMLP (mask)") == ""  # Table 2 only: no Split MNIST row
    with pytest.raises(TypeError, match="labels"):
        table7_rows(None)


def test_comet_and_continual_read_mnist_from_data_dir(tmp_path):
    data = tmp_path / "mnist"
    data.mkdir()
    written = write_mnist(data)
    # every class must occur in every split for the continual split: force the labels
    for split in ("train", "test"):
        images, labels = written[split]
        labels = np.arange(len(labels)) % 10
        from tests.experiments.runner.test_datasets import write_idx_labels
        from experiments.runner.datasets import MNIST_FILES

        write_idx_labels(data / MNIST_FILES[split][1], labels)
    frame = run_comet_images("tiny", tmp_path / "comet", data_dir=data, seeds=[0],
                             progress=False)
    assert set(frame["dataset"]) == {"mnist"}
    assert set(frame["model_label"]) == {"COMET", "standard model", "smaller model"}
    smaller = frame[frame["model_label"] == "smaller model"]
    assert (smaller["layer_width"] == (smaller["width"] * smaller["p_k"]).round()).all()
    claims = pd.read_csv(tmp_path / "comet" / "claims.csv")
    assert len(claims) == 5  # 3 claims, 2 controls
    frame = run_continual("tiny", tmp_path / "cl", data_dir=data, seeds=[0], progress=False)
    assert set(frame["dataset"]) == {"mnist"} and len(frame) == 12
    with pytest.raises(FileNotFoundError, match="neither MNIST"):
        run_cifar("tiny", tmp_path / "x", data_dir=tmp_path / "cl")


def test_the_report_names_the_data_of_every_image_experiment(tmp_path):
    """report.md opens with one line per image experiment naming its data (name, source,
    sizes, image shape, sha256: ``data_of`` of its folder); a step without data adds none."""
    from experiments.papers.real_data import data_of
    from experiments.pipeline.report import image_data_lines
    from experiments.pipeline.reproduce import write_report

    out = tmp_path / "run"
    folder = out / "comet_images"
    run_comet_images("tiny", folder, seeds=[0, 1], progress=False)
    files = [str(p.relative_to(out)) for p in output_files(folder)]
    identity = json.loads((folder / "config.json").read_text())["data"]
    line = data_of(folder)
    for part in (f"{identity['n_train']:,} training and {identity['n_test']:,} test images",
                 "8×8×1", identity["sha256"][:12], identity["source"]):
        assert part in line, part
    (out / "fig2").mkdir()
    (out / "fig2" / "table.md").write_text("# fig2\n\nno images\n")
    write_report(out, "tiny", {"comet_images": files, "fig2": ["fig2/table.md"]})
    report = (out / "report.md").read_text()
    assert f"- `comet_images`: {line}" in report
    assert report.count("- `") == 1  # fig2 reads no images: no data line
    assert "digits at the tiny and quick presets" not in report  # computed, not written in
    assert image_data_lines(out, {"fig2": ["fig2/table.md"]}) == []
    with pytest.raises(TypeError, match="written"):
        image_data_lines(out, ["comet_images/config.json"])
    # the claims name the regime every model of the run shared
    claims = pd.read_csv(folder / "claims.csv")
    config = experiment_config("comet_images", "tiny", "digits")
    assert (claims["regime"] == f"Adam lr {config.lr:g}, {config.epochs} epochs, batch "
                                f"{config.batch_size} (every model)").all()



def test_real_data_configs_check_their_fields():
    import dataclasses
    import math
    config = experiment_config("cifar", "tiny", "digits")
    with pytest.raises(ValueError, match="epochs"):
        dataclasses.replace(config, epochs="3")
    with pytest.raises(ValueError, match="lr"):
        dataclasses.replace(experiment_config("comet_images", "tiny", "digits"), lr=math.inf)
    with pytest.raises(ValueError, match="seeds"):
        dataclasses.replace(experiment_config("continual", "tiny", "digits"), seeds=(None,))
    with pytest.raises(ValueError, match="dataset"):
        experiment_config("cifar", "tiny", 3)
