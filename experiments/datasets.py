"""Real image data sets that need no download at run time (issue 28, item 1).

* ``load_digits()``: the UCI handwritten digits that scikit-learn ships inside its package
  (1,797 images of 8×8 pixels, 10 classes): real images on every machine, the data of every
  quick preset.
* ``load_mnist(path, split)``: the four IDX files of MNIST (raw or ``.gz``) from a folder the
  user gives (LeCun et al.'s format: a big-endian header with magic number 2051 for images and
  2049 for labels).
* ``load_cifar10(path, split)``: the *binary version* of CIFAR-10 (``data_batch_1.bin`` …
  ``data_batch_5.bin``, ``test_batch.bin``): records of 1 label byte and 3,072 pixel bytes,
  channel-major (1,024 red, 1,024 green, 1,024 blue, each row-major). The Python version is
  pickles and is never read: unpickling runs arbitrary code.

Every loader returns ``X`` uint8 of shape (N, H, W, C) and ``y`` int64 of shape (N,), checked
(file names, magic numbers, record sizes, label range, counts); a missing or malformed file is
a one-line ``FileNotFoundError`` or ``ValueError`` naming the path and what was expected.

``train_test_digits`` gives the digits a fixed, stratified train/test split (they ship without
one), and ``load_dataset`` reads any of the three by name.
"""

from __future__ import annotations

import gzip
import pathlib

import numpy as np

from routing.validation import check_choice, check_int, check_real

__all__ = ["load_digits", "load_mnist", "load_cifar10", "load_dataset", "train_test_digits",
           "as_float", "DATASETS", "SPLITS", "MNIST_FILES", "CIFAR10_FILES",
           "CIFAR10_RECORD_BYTES", "CIFAR10_RECORDS_PER_FILE", "find_dataset"]

SPLITS = ("train", "test")
DATASETS = ("digits", "mnist", "cifar10")

#: IDX file stems of MNIST by split: (images, labels); each may end in ".gz".
MNIST_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
MNIST_IMAGE_MAGIC = 2051
MNIST_LABEL_MAGIC = 2049

#: CIFAR-10 binary files by split (Krizhevsky 2009, "Binary version").
CIFAR10_FILES = {"train": tuple(f"data_batch_{i}.bin" for i in range(1, 6)),
                 "test": ("test_batch.bin",)}
CIFAR10_RECORD_BYTES = 1 + 3 * 32 * 32  # label byte + 3,072 pixel bytes
CIFAR10_RECORDS_PER_FILE = 10_000
#: Folder the CIFAR-10 binary tarball unpacks into; looked for inside the given folder too.
CIFAR10_SUBFOLDER = "cifar-10-batches-bin"

N_CLASSES = 10


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The UCI handwritten digits bundled with scikit-learn (``sklearn.datasets.load_digits``).

    The pixels are counts 0..16 (each 8×8 pixel counts the "on" pixels of a 4×4 block of the
    original 32×32 bitmap); they are rescaled to 0..255 as round(v · 255 / 16) so that they
    share the uint8 range of the other loaders (0 ↦ 0, 16 ↦ 255).

    Returns:
        X: (1797, 8, 8, 1) uint8 in 0..255; y: (1797,) int64 in 0..9.

    Raises:
        ValueError: if the bundled data are not what this function expects (a broken
            scikit-learn installation).

    Source: Alpaydin & Kaynak, UCI "Optical Recognition of Handwritten Digits" (the test
    part), as shipped by scikit-learn.
    """
    from sklearn.datasets import load_digits as sk_load_digits

    bunch = sk_load_digits()
    images = np.asarray(bunch.images, dtype=np.float64)
    if images.ndim != 3 or images.shape[1:] != (8, 8) or images.min() < 0 or images.max() > 16:
        raise ValueError(f"sklearn's digits must be (N, 8, 8) counts in 0..16, got shape "
                         f"{images.shape}, range {images.min()}..{images.max()}")
    X = np.rint(images * (255.0 / 16.0)).astype(np.uint8)[..., None]  # (N, 8, 8, 1)
    y = np.asarray(bunch.target, dtype=np.int64)
    _check_labels(y, "sklearn.datasets.load_digits()")
    return X, y


def train_test_digits(test_fraction: float = 0.25, seed: int = 0
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``load_digits`` split into train and test, stratified by class and deterministic.

    Each class's images are shuffled by ``np.random.default_rng(seed)`` and its first
    round(test_fraction · n_class) go to the test set; both sets keep the original order of
    the images otherwise (so the split is the same on every machine and numpy version that
    keeps ``default_rng``'s stream, which numpy guarantees).

    Arguments:
        test_fraction: share of each class held out, in (0, 1).
        seed: seed of the split (>= 0); the presets fix it at 0, apart from the models' seeds.

    Returns:
        X_train (N_tr, 8, 8, 1) uint8, y_train (N_tr,) int64, X_test, y_test (450 test images
        at the default 0.25).

    Raises:
        ValueError: test_fraction outside (0, 1) or a negative seed.
    """
    test_fraction = check_real(test_fraction, "test_fraction", 0.0, 1.0, low_open=True,
                               high_open=True)
    seed = check_int(seed, "seed", 0)
    X, y = load_digits()
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), dtype=bool)
    for label in range(N_CLASSES):
        members = np.flatnonzero(y == label)
        chosen = rng.permutation(members)[:int(round(test_fraction * len(members)))]
        test[chosen] = True
    return X[~test], y[~test], X[test], y[test]


def load_mnist(path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """MNIST from its IDX files in the folder ``path`` (raw or gzip-compressed).

    Files: ``train-images-idx3-ubyte`` and ``train-labels-idx1-ubyte`` (split "train"),
    ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte`` (split "test"), each optionally
    ending in ``.gz``. Images: big-endian int32 magic 2051, count N, rows, columns, then
    N·rows·columns bytes; labels: magic 2049, count N, then N bytes in 0..9.

    Arguments:
        path: folder holding the files (str or path-like).
        split: "train" or "test".

    Returns:
        X: (N, rows, cols, 1) uint8 (28×28 for MNIST); y: (N,) int64 in 0..9.

    Raises:
        FileNotFoundError: the folder or a file is missing (naming the names looked for).
        ValueError: bad split; a file whose magic number, size, label range or count does
            not match (naming the file and what was expected).

    Source: LeCun, Cortes & Burges, "The MNIST database" (file format section).
    """
    split = check_choice(split, "split", SPLITS)
    folder = _folder(path)
    image_stem, label_stem = MNIST_FILES[split]
    image_path, label_path = _find(folder, image_stem), _find(folder, label_stem)
    images = _read_idx(image_path, MNIST_IMAGE_MAGIC, 3)
    labels = _read_idx(label_path, MNIST_LABEL_MAGIC, 1)
    if len(images) != len(labels):
        raise ValueError(f"{image_path} holds {len(images)} images but {label_path} holds "
                         f"{len(labels)} labels; expected equal counts")
    y = labels.astype(np.int64)
    _check_labels(y, label_path)
    return images[..., None], y


def load_cifar10(path, split: str,
                 records_per_file: int | None = CIFAR10_RECORDS_PER_FILE
                 ) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10 from its binary files in ``path`` (or in ``path/cifar-10-batches-bin``).

    Each file is a sequence of records of 3,073 bytes: one label byte in 0..9, then the
    32×32 image channel-major (1,024 red, 1,024 green, 1,024 blue bytes, each plane
    row-major). Nothing is unpickled: the Python version of the data set is not read.

    Arguments:
        path: folder holding ``data_batch_1.bin`` … ``data_batch_5.bin`` (split "train") and
            ``test_batch.bin`` (split "test"), or the folder above ``cifar-10-batches-bin``.
        split: "train" or "test".
        records_per_file: records each file must hold (10,000 in the published files); None
            accepts any positive whole number of records (small files built for tests).

    Returns:
        X: (N, 32, 32, 3) uint8, channels last; y: (N,) int64 in 0..9 (N = 50,000 for train
        and 10,000 for test with the published files).

    Raises:
        FileNotFoundError: the folder or a file is missing (naming the file looked for).
        ValueError: bad split or records_per_file; a file whose size is not the expected
            number of 3,073-byte records, or with a label outside 0..9 (naming the file).

    Source: Krizhevsky 2009, "Learning Multiple Layers of Features from Tiny Images", and the
    data set page's "Binary version" section.
    """
    split = check_choice(split, "split", SPLITS)
    if records_per_file is not None:
        records_per_file = check_int(records_per_file, "records_per_file", 1)
    folder = _folder(path)
    if not (folder / CIFAR10_FILES[split][0]).exists() and (folder / CIFAR10_SUBFOLDER).is_dir():
        folder = folder / CIFAR10_SUBFOLDER
    images, labels = [], []
    for name in CIFAR10_FILES[split]:
        file = folder / name
        if not file.is_file():
            raise FileNotFoundError(f"{file} not found: CIFAR-10 binary version expected "
                                    f"({', '.join(CIFAR10_FILES[split])} for split {split!r})")
        raw = np.fromfile(file, dtype=np.uint8)
        n, rest = divmod(raw.size, CIFAR10_RECORD_BYTES)
        if rest or n == 0 or (records_per_file is not None and n != records_per_file):
            want = (f"{records_per_file:,} records of {CIFAR10_RECORD_BYTES} bytes "
                    f"({records_per_file * CIFAR10_RECORD_BYTES:,} bytes)"
                    if records_per_file is not None else
                    f"a positive whole number of {CIFAR10_RECORD_BYTES}-byte records")
            raise ValueError(f"{file} has {raw.size:,} bytes; expected {want} "
                             f"(1 label byte + 3,072 pixel bytes each)")
        records = raw.reshape(n, CIFAR10_RECORD_BYTES)
        y = records[:, 0].astype(np.int64)
        _check_labels(y, file)
        # (n, 3, 32, 32) channel-major -> (n, 32, 32, 3) channels last
        images.append(records[:, 1:].reshape(n, 3, 32, 32).transpose(0, 2, 3, 1))
        labels.append(y)
    return np.ascontiguousarray(np.concatenate(images)), np.concatenate(labels)


def find_dataset(data_dir) -> str:
    """Which data set the folder ``data_dir`` holds: "mnist" when the MNIST training IDX
    files are there (raw or .gz), else "cifar10" when ``data_batch_1.bin`` is (directly or in
    ``cifar-10-batches-bin``).

    Raises:
        FileNotFoundError: the folder is missing or holds neither.
    """
    folder = _folder(data_dir)
    if all(_exists(folder, stem) for stem in MNIST_FILES["train"]):
        return "mnist"
    first = CIFAR10_FILES["train"][0]
    if (folder / first).is_file() or (folder / CIFAR10_SUBFOLDER / first).is_file():
        return "cifar10"
    mnist = ", ".join(MNIST_FILES["train"])
    raise FileNotFoundError(f"{folder} holds neither MNIST IDX files ({mnist}[.gz]) nor "
                            f"CIFAR-10 binary files ({first}, …)")


def load_dataset(name: str, split: str, data_dir=None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Any of ``DATASETS`` by name: "digits" (``train_test_digits``' fixed split; no folder),
    "mnist" (``load_mnist(data_dir, split)``) or "cifar10" (``load_cifar10(data_dir,
    split)``).

    Returns:
        X (N, H, W, C) uint8, y (N,) int64.

    Raises:
        ValueError: unknown name or split, or "mnist"/"cifar10" without ``data_dir``; and
            the loaders' errors.
    """
    name = check_choice(name, "dataset", DATASETS)
    split = check_choice(split, "split", SPLITS)
    if name == "digits":
        X_train, y_train, X_test, y_test = train_test_digits()
        return (X_train, y_train) if split == "train" else (X_test, y_test)
    if data_dir is None:
        raise ValueError(f"dataset {name!r} needs a data folder (--data-dir)")
    return load_mnist(data_dir, split) if name == "mnist" else load_cifar10(data_dir, split)


def as_float(X: np.ndarray) -> np.ndarray:
    """uint8 pixels (N, H, W, C) as float32 in [0, 1] (v / 255).

    Raises:
        ValueError: if X is not a uint8 array of 4 dimensions.
    """
    X = np.asarray(X)
    if X.dtype != np.uint8 or X.ndim != 4:
        raise ValueError(f"X must be a uint8 array of shape (N, H, W, C), got dtype {X.dtype} "
                         f"and shape {X.shape}")
    return X.astype(np.float32) / np.float32(255.0)


# -- helpers ---------------------------------------------------------------------------------

def _folder(path) -> pathlib.Path:
    if path is None:
        raise ValueError("the data folder must be given, got None")
    folder = pathlib.Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder: expected the folder holding the "
                                f"data set's files")
    return folder


def _exists(folder: pathlib.Path, stem: str) -> bool:
    return (folder / stem).is_file() or (folder / f"{stem}.gz").is_file()


def _find(folder: pathlib.Path, stem: str) -> pathlib.Path:
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{folder / stem} not found (nor {stem}.gz): expected the MNIST "
                            f"IDX file {stem}, raw or gzip-compressed")


def _read_idx(path: pathlib.Path, magic: int, n_dims: int) -> np.ndarray:
    """The uint8 array of an IDX file with the given magic number and number of dimensions,
    its size checked against its header."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as handle:
                raw = handle.read()
        else:
            raw = path.read_bytes()
    except (OSError, EOFError) as error:  # a truncated or corrupt .gz
        raise ValueError(f"{path} could not be read as {'gzip' if path.suffix == '.gz' else 'raw'} "
                         f"IDX: {error}") from None
    header = 4 + 4 * n_dims
    if len(raw) < header:
        raise ValueError(f"{path} has {len(raw)} bytes; expected an IDX header of {header} bytes "
                         f"(magic number {magic} and {n_dims} dimension sizes)")
    found = int.from_bytes(raw[:4], "big")
    if found != magic:
        raise ValueError(f"{path} has magic number {found}; expected {magic} "
                         f"({'images, idx3' if magic == MNIST_IMAGE_MAGIC else 'labels, idx1'}, "
                         f"unsigned bytes)")
    dims = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(n_dims))
    expected = header + int(np.prod(dims, dtype=np.int64))
    if len(raw) != expected or dims[0] == 0:
        raise ValueError(f"{path} has {len(raw):,} bytes; its header (dimensions {dims}) "
                         f"needs {expected:,} with at least one item")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims).copy()


def _check_labels(y: np.ndarray, where) -> None:
    if y.size and (y.min() < 0 or y.max() >= N_CLASSES):
        bad = int(np.count_nonzero((y < 0) | (y >= N_CLASSES)))
        raise ValueError(f"{where} has {bad} labels outside 0..{N_CLASSES - 1} (range "
                         f"{y.min()}..{y.max()}); expected class labels 0..{N_CLASSES - 1}")
