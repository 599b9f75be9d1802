"""Results tables: the checks of the table arguments every analysis function takes (a column
name of a results frame, a model label, a list of model labels; each raises an error naming the
caller's parameter) and the Markdown cell every written table uses."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["check_column", "check_label", "check_labels", "markdown_cell"]


def check_column(frame: pd.DataFrame, column, name: str) -> str:
    """``column`` as a column of ``frame``.

    Arguments:
        frame: a results table (``results.csv`` rows).
        column: the column name the caller was given.
        name: the caller's parameter name, for the error.

    Returns:
        ``column`` (str).

    Raises:
        ValueError: ``column`` is not a string naming a column of ``frame`` (the message lists
            the frame's columns).
    """
    if not isinstance(column, str) or column not in frame.columns:
        raise ValueError(f"{name} must name a column of the frame "
                         f"({', '.join(map(str, frame.columns))}), got {column!r}")
    return column


def check_label(label, name: str) -> str:
    """``label`` as a model label (a results row's ``model_label``).

    Returns:
        ``label`` (str).

    Raises:
        TypeError: ``label`` is not a string (the message names ``name``).
    """
    if not isinstance(label, str):
        raise TypeError(f"{name} must be a model label (a string), got {label!r}")
    return label


def check_labels(labels, name: str = "labels") -> list[str]:
    """``labels`` as a list of model labels.

    Returns:
        a new list of the labels (str).

    Raises:
        TypeError: ``labels`` is not a list or tuple of strings (the message names ``name``).
    """
    if not isinstance(labels, (list, tuple)) or not all(isinstance(l, str) for l in labels):
        raise TypeError(f"{name} must be a list of model labels (strings), got {labels!r}")
    return list(labels)


def markdown_cell(text) -> str:
    """``text`` as a string safe inside a Markdown table cell (``table.md``, ``report.md``):
    pipes escaped, newlines turned into spaces.

    Arguments:
        text: any value; None and a float nan give "".

    Returns:
        str; never raises.
    """
    return "" if text is None or (isinstance(text, float) and np.isnan(text)) else \
        str(text).replace("|", "\\|").replace("\n", " ")
