"""What a results folder records about the run that made it: package versions, the device,
Python and the git revision (``config.json``)."""

from __future__ import annotations

import importlib.metadata
import pathlib
import platform
import subprocess


def environment(device) -> dict:
    """Package versions, device, Python and the git revision (None outside a checkout).

    Arguments:
        device: the device the run used: a ``torch.device`` or a name torch parses ("cpu",
            "cuda", "cuda:1"); or "auto" for rows computed on an existing cluster, whose
            workers each resolve it (recorded as "auto (each worker's)").

    Raises:
        ValueError: ``device`` is no device torch knows, nor "auto".
    """
    import torch

    if device == "auto":  # --scheduler: chosen on each worker, which the driver cannot see
        device = "auto (each worker's)"
    else:
        try:
            device = torch.device(device)
        except (RuntimeError, TypeError):
            raise ValueError(f"device must be a torch.device, a device name such as 'cpu' or "
                             f"'cuda:0', or 'auto', got {device!r}") from None
    versions = {}
    for package in ("sparselab", "numpy", "scipy", "numba", "torch", "pandas"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover
            versions[package] = None
    try:
        revision = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                  cwd=pathlib.Path(__file__).parent, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):  # pragma: no cover
        revision = ""
    return {"versions": versions, "device": str(device), "python": platform.python_version(),
            "git_revision": revision or None}
