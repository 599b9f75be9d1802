"""experiments.runner.datasets: the bundled digits, MNIST IDX files and CIFAR-10 binary files, built
here in their exact formats, and the one-line errors for missing or malformed files."""

import gzip
import struct

import numpy as np
import pytest

from experiments.runner import datasets
from experiments.runner.datasets import (CIFAR10_RECORD_BYTES, as_float, find_dataset, load_cifar10,
                                  load_dataset, load_digits, load_mnist, train_test_digits)


# -- writers of the real formats -------------------------------------------------------------

def write_idx_images(path, images, magic=2051, compress=False):
    n, rows, cols = images.shape
    data = struct.pack(">iiii", magic, n, rows, cols) + images.astype(np.uint8).tobytes()
    with (gzip.open if compress else open)(path, "wb") as handle:  # closed: gzip flushed
        handle.write(data)


def write_idx_labels(path, labels, magic=2049, compress=False):
    data = struct.pack(">ii", magic, len(labels)) + np.asarray(labels, np.uint8).tobytes()
    with (gzip.open if compress else open)(path, "wb") as handle:
        handle.write(data)


def write_mnist(folder, n_train=7, n_test=5, compress=False, seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n)
        stem_x, stem_y = datasets.MNIST_FILES[split]
        suffix = ".gz" if compress else ""
        write_idx_images(folder / f"{stem_x}{suffix}", images, compress=compress)
        write_idx_labels(folder / f"{stem_y}{suffix}", labels, compress=compress)
        out[split] = (images, labels)
    return out


def cifar_records(images, labels):
    """images (n, 32, 32, 3) uint8 channels last -> the binary records (channel-major)."""
    planes = images.transpose(0, 3, 1, 2).reshape(len(images), -1)
    return np.concatenate([np.asarray(labels, np.uint8)[:, None], planes], axis=1).tobytes()


def write_cifar(folder, n_per_file=3, seed=0):
    rng = np.random.default_rng(seed)
    out = {"train": ([], []), "test": ([], [])}
    for split, names in datasets.CIFAR10_FILES.items():
        for name in names:
            images = rng.integers(0, 256, (n_per_file, 32, 32, 3), dtype=np.uint8)
            labels = rng.integers(0, 10, n_per_file)
            (folder / name).write_bytes(cifar_records(images, labels))
            out[split][0].append(images)
            out[split][1].append(labels)
    return {s: (np.concatenate(x), np.concatenate(y)) for s, (x, y) in out.items()}


# -- digits ----------------------------------------------------------------------------------

def test_digits_shape_dtype_and_rescaling():
    from sklearn.datasets import load_digits as sk

    X, y = load_digits()
    assert X.shape == (1797, 8, 8, 1) and X.dtype == np.uint8
    assert y.shape == (1797,) and y.dtype == np.int64 and set(y) == set(range(10))
    raw = sk().images
    # 0..16 counts rescaled to 0..255: 16 -> 255, 0 -> 0, monotone, round(v * 255 / 16)
    np.testing.assert_array_equal(X[..., 0], np.rint(raw * 255 / 16).astype(np.uint8))
    assert X.max() == 255 and X.min() == 0


def test_digits_split_is_stratified_deterministic_and_disjoint():
    a = train_test_digits()
    b = train_test_digits()
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    X_tr, y_tr, X_te, y_te = a
    assert len(y_tr) + len(y_te) == 1797 and len(y_te) == pytest.approx(450, abs=5)
    counts = np.bincount(y_te, minlength=10) / np.bincount(np.r_[y_tr, y_te], minlength=10)
    assert np.all(np.abs(counts - 0.25) < 0.01)
    other = train_test_digits(seed=1)
    assert not np.array_equal(other[3], y_te) or not np.array_equal(other[2], X_te)
    with pytest.raises(ValueError, match="test_fraction"):
        train_test_digits(test_fraction=1.0)


def test_load_dataset_digits_and_needs_folder():
    X, y = load_dataset("digits", "test")
    np.testing.assert_array_equal(y, train_test_digits()[3])
    with pytest.raises(ValueError, match="--data-dir"):
        load_dataset("mnist", "train")
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_dataset("svhn", "train")


def test_as_float_range_and_errors():
    X = np.array([0, 255, 51], np.uint8).reshape(1, 1, 3, 1)
    np.testing.assert_allclose(as_float(X).ravel(), [0, 1, 0.2])
    assert as_float(X).dtype == np.float32
    with pytest.raises(ValueError, match="uint8"):
        as_float(X.astype(np.float32))


# -- MNIST -----------------------------------------------------------------------------------

@pytest.mark.parametrize("compress", [False, True])
def test_mnist_round_trip(tmp_path, compress):
    written = write_mnist(tmp_path, compress=compress)
    for split in ("train", "test"):
        X, y = load_mnist(tmp_path, split)
        images, labels = written[split]
        assert X.shape == images.shape + (1,) and X.dtype == np.uint8 and y.dtype == np.int64
        np.testing.assert_array_equal(X[..., 0], images)
        np.testing.assert_array_equal(y, labels)
    assert find_dataset(tmp_path) == "mnist"


def test_mnist_missing_file_names_it(tmp_path):
    write_mnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte") as info:
        load_mnist(tmp_path, "test")
    assert "\n" not in str(info.value)
    with pytest.raises(FileNotFoundError, match="not a folder"):
        load_mnist(tmp_path / "nowhere", "train")


def test_mnist_bad_magic_size_labels_and_counts(tmp_path):
    write_mnist(tmp_path)
    images = np.zeros((3, 28, 28), np.uint8)
    path = tmp_path / "train-images-idx3-ubyte"
    write_idx_images(path, images, magic=2049)  # a label file's magic number
    with pytest.raises(ValueError, match="magic number 2049; expected 2051"):
        load_mnist(tmp_path, "train")
    write_idx_images(path, images)
    path.write_bytes(path.read_bytes()[:-1])  # truncated by one pixel byte
    with pytest.raises(ValueError, match="needs 2,368"):
        load_mnist(tmp_path, "train")
    write_idx_images(path, images)  # 3 images, but 7 labels
    with pytest.raises(ValueError, match="3 images but .* 7 labels"):
        load_mnist(tmp_path, "train")
    write_idx_images(path, np.zeros((7, 28, 28), np.uint8))
    write_idx_labels(tmp_path / "train-labels-idx1-ubyte", [0, 1, 2, 3, 4, 5, 10])
    with pytest.raises(ValueError, match="1 labels outside 0..9"):
        load_mnist(tmp_path, "train")
    write_idx_labels(tmp_path / "train-labels-idx1-ubyte", [0, 1, 2, 3, 4, 5, 9])
    assert load_mnist(tmp_path, "train")[1][-1] == 9  # label 9 is in range: the threshold


def test_mnist_corrupt_gzip(tmp_path):
    write_mnist(tmp_path, compress=True)
    (tmp_path / "t10k-images-idx3-ubyte.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(ValueError, match="could not be read as gzip"):
        load_mnist(tmp_path, "test")


# -- CIFAR-10 --------------------------------------------------------------------------------

def test_cifar_round_trip_channel_major(tmp_path):
    written = write_cifar(tmp_path)
    for split in ("train", "test"):
        X, y = load_cifar10(tmp_path, split, records_per_file=None)
        images, labels = written[split]
        assert X.shape == images.shape and X.dtype == np.uint8 and y.dtype == np.int64
        np.testing.assert_array_equal(X, images)
        np.testing.assert_array_equal(y, labels)
    # channel-major: a record whose first 1,024 pixel bytes are 255 is pure red
    record = np.zeros(CIFAR10_RECORD_BYTES, np.uint8)
    record[0], record[1:1025] = 7, 255
    (tmp_path / "test_batch.bin").write_bytes(record.tobytes())
    X, y = load_cifar10(tmp_path, "test", records_per_file=None)
    assert y[0] == 7 and (X[0, ..., 0] == 255).all() and (X[0, ..., 1:] == 0).all()
    assert find_dataset(tmp_path) == "cifar10"


def test_cifar_published_record_count_is_required_by_default(tmp_path):
    write_cifar(tmp_path, n_per_file=2)
    with pytest.raises(ValueError, match=r"6,146 bytes; expected 10,000 records of 3073 bytes"):
        load_cifar10(tmp_path, "test")
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (10_000, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, 10_000)
    (tmp_path / "test_batch.bin").write_bytes(cifar_records(images, labels))
    X, y = load_cifar10(tmp_path, "test")  # exactly 10,000 records: accepted
    np.testing.assert_array_equal(X[-1], images[-1])
    assert len(y) == 10_000


def test_cifar_subfolder_missing_file_bad_size_and_label(tmp_path):
    sub = tmp_path / "cifar-10-batches-bin"
    sub.mkdir()
    write_cifar(sub)
    assert load_cifar10(tmp_path, "train", records_per_file=None)[0].shape == (15, 32, 32, 3)
    (sub / "data_batch_4.bin").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_4.bin not found") as info:
        load_cifar10(sub, "train", records_per_file=None)
    assert "\n" not in str(info.value)
    path = sub / "test_batch.bin"
    path.write_bytes(path.read_bytes() + b"\x00")  # one byte too many
    with pytest.raises(ValueError, match="whole number of 3073-byte records"):
        load_cifar10(sub, "test", records_per_file=None)
    record = np.zeros(CIFAR10_RECORD_BYTES, np.uint8)
    record[0] = 10
    path.write_bytes(record.tobytes())
    with pytest.raises(ValueError, match="labels outside 0..9"):
        load_cifar10(sub, "test", records_per_file=None)
    with pytest.raises(ValueError, match="split must be one of"):
        load_cifar10(sub, "validation")


def test_find_dataset_neither(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither MNIST"):
        find_dataset(tmp_path)


def test_no_pickle_is_ever_used():
    import inspect

    source = inspect.getsource(datasets)
    assert "pickle" not in source.replace("pickles and is never read", "").replace(
        "unpickling", "").replace("unpickled", "")
