"""Writing the checks' plots: matplotlib without a display, one PNG per figure."""

from __future__ import annotations

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["plt", "save_figure"]


def save_figure(fig, out: pathlib.Path | None, name: str) -> list[pathlib.Path]:
    """Save ``fig`` as ``out/name`` (PNG, 120 dpi) and close it.

    Returns:
        ``[path]``, or ``[]`` when ``out`` is None (nothing is written).
    """
    try:
        if out is None:
            return []
        path = pathlib.Path(out) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        return [path]
    finally:
        plt.close(fig)
