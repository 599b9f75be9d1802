"""Data that identifies itself: the settings fingerprint of every experiment that reads data
holds the data's identity, so a folder whose rows were made on other data is refused, naming
what differs; config.json and table.md name the data; the budget line is the run's."""

import json

import numpy as np
import pandas as pd
import pytest

from experiments.papers.real_data import data_of, run_comet_images, settings_of


def write_mnist(folder, n_train=7, n_test=5, seed=0):
    """The four MNIST IDX files (raw) of random images and labels in ``folder``."""
    import struct

    from experiments.runner.datasets import MNIST_FILES

    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n).astype(np.uint8)
        stem_x, stem_y = MNIST_FILES[split]
        (folder / stem_x).write_bytes(struct.pack(">iiii", 2051, n, 28, 28) + images.tobytes())
        (folder / stem_y).write_bytes(struct.pack(">ii", 2049, n) + labels.tobytes())


def _mnist(folder, seed):
    folder.mkdir()
    write_mnist(folder, n_train=30, n_test=20, seed=seed)
    return folder


def test_swapping_the_data_behind_a_finished_folder_is_refused_naming_the_hash(tmp_path):
    first = _mnist(tmp_path / "a", seed=0)
    out = tmp_path / "out"
    frame = run_comet_images("tiny", out, data_dir=first, seeds=[0], progress=False)
    config = json.loads((out / "config.json").read_text())
    old = config["data"]["sha256"]
    assert config["data"]["name"] == "mnist" and config["data"]["n_train"] == 30
    rows = (out / "results.csv").read_bytes()
    # other MNIST files of the same sizes, in another folder: the old rows are not reused
    second = _mnist(tmp_path / "b", seed=1)
    from experiments.runner.datasets import load_image_data

    new = load_image_data(None, second).identity["sha256"]
    assert new != old
    with pytest.raises(ValueError) as error:
        run_comet_images("tiny", out, data_dir=second, seeds=[0], progress=False)
    message = str(error.value)
    assert f"data.sha256 {old} there, {new} now" in message
    assert "other settings" in message and "--force" in message
    # nothing rewritten: the rows and the config.json that describes them stay
    assert (out / "results.csv").read_bytes() == rows
    assert json.loads((out / "config.json").read_text())["data"]["sha256"] == old
    # the same files again resume (no row recomputed), and --force starts over on the new
    again = run_comet_images("tiny", out, data_dir=first, seeds=[0], progress=False)
    assert (again["wall_s"].to_numpy() == frame["wall_s"].to_numpy()).all()
    run_comet_images("tiny", out, data_dir=second, seeds=[0], progress=False, force=True)
    assert json.loads((out / "config.json").read_text())["data"]["sha256"] == new


def test_other_sizes_are_named_field_by_field(tmp_path):
    out = tmp_path / "out"
    run_comet_images("tiny", out, data_dir=_mnist(tmp_path / "a", seed=0), seeds=[0],
                     progress=False)
    other = tmp_path / "c"
    other.mkdir()
    write_mnist(other, n_train=31, n_test=20, seed=0)
    with pytest.raises(ValueError, match="data.n_train 30 there, 31 now"):
        run_comet_images("tiny", out, data_dir=other, seeds=[0], progress=False)
    # another data set by name: its name too
    with pytest.raises(ValueError, match="data.name mnist there, digits now"):
        run_comet_images("tiny", out, data="digits", seeds=[0], progress=False)


def test_config_and_table_name_the_data_and_the_budget_is_computed(tmp_path):
    out = tmp_path / "out"
    run_comet_images("tiny", out, data_dir=_mnist(tmp_path / "a", seed=0), seeds=[0],
                     progress=False)
    config = json.loads((out / "config.json").read_text())
    data = config["data"]
    assert data["image_shape"] == [28, 28, 1] and data["n_test"] == 20
    assert set(data["files"]) == {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                  "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}
    table = (out / "table.md").read_text()
    line = data_of(out)
    assert f"Data: {line}." in table and data["sha256"][:12] in line
    budget = next(t for t in table.splitlines() if t.startswith("Budget:"))
    assert "MNIST, 30 training and 20 test images of 28×28×1" in budget
    assert "digits" not in budget
    assert config["budget"] in budget
    assert data_of(tmp_path / "nowhere") == ""


def test_the_fingerprint_moves_with_the_data_and_not_with_the_folder(tmp_path):
    a = _mnist(tmp_path / "a", seed=0)
    b = _mnist(tmp_path / "b", seed=1)
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in a.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    assert settings_of("comet_images", "tiny", data_dir=a) == settings_of(
        "comet_images", "tiny", data_dir=copy)
    assert settings_of("comet_images", "tiny", data_dir=a) != settings_of(
        "comet_images", "tiny", data_dir=b)
    assert settings_of("comet_images", "tiny") == settings_of("comet_images", "tiny",
                                                              "digits")
    assert settings_of("comet_images", "quick") == settings_of("comet_images", "quick",
                                                               "mnist_5k")


def test_the_console_says_which_data_it_found(tmp_path, capsys):
    run_comet_images("tiny", tmp_path / "o", data_dir=_mnist(tmp_path / "a", seed=0),
                     seeds=[0], progress=True)
    err = capsys.readouterr()
    text = err.out + err.err
    assert "comet_images: data MNIST: 30 training and 20 test images of 28×28×1" in text


def test_a_data_file_sweep_swapped_behind_its_folder_is_refused_naming_the_hash(tmp_path):
    from experiments.pipeline.scale import run_experiment
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
    from lipschitz.data_file import file_sha256

    path = tmp_path / "xy.csv"

    def write(seed):
        rng = np.random.default_rng(seed)
        X = rng.uniform(-1, 1, (80, 3))
        pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "x2": X[:, 2],
                      "y": X.sum(1)}).to_csv(path, index=False)

    def config():
        return ExperimentConfig(name="fig2", preset="tiny",
                                target=TargetSpec("data", path=str(path)),
                                models=(ModelSpec("dense", width=4, label="dense"),),
                                seeds=(0,), n_train=40, n_eval=20)

    write(0)
    old = file_sha256(path)
    run_experiment("fig2", "tiny", tmp_path / "out", device="cpu", progress=False,
                   configs=[config()])
    write(1)
    new = file_sha256(path)
    with pytest.raises(ValueError) as error:
        run_experiment("fig2", "tiny", tmp_path / "out", device="cpu", progress=False,
                       configs=[config()])
    message = str(error.value)
    assert "other settings" in message
    assert f"target.sha256 {old} there, {new} now" in message


def test_the_data_options_belong_to_the_image_experiments(tmp_path):
    from click.testing import CliRunner

    from experiments.cli import main

    rates = tmp_path / "rates.json"
    rates.write_text('{"sgd_lr": 0.1}')
    for args, match in ((["--experiment", "fig2", "--data", "digits"], "--data is an option"),
                        (["--experiment", "fig2", "--data-dir", str(tmp_path)],
                         "--data-dir is an option"),
                        (["--experiment", "cifar", "--calibration", str(rates)],
                         "--calibration is an option of the experiment 'continual'")):
        result = CliRunner().invoke(main, ["scale", *args, "--out", str(tmp_path / "o")])
        assert result.exit_code == 2 and match in result.output, result.output
    result = CliRunner().invoke(main, ["scale", "--experiment", "comet_images", "--data",
                                       "nope"])
    assert result.exit_code == 2 and "'nope' is not one of" in result.output
