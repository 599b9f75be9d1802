"""What the TOML config files share (``experiments.pipeline.config_file`` for the sweeps,
``experiments.pipeline.real_data_file`` for the image experiments): unknown fields refused
naming their place, seeds checked, arrays of scalars written inline."""

from __future__ import annotations

import re


def check_keys(data: dict, allowed: tuple[str, ...], where: str | None) -> None:
    """Refuse a key of ``data`` not in ``allowed``: ``"{where}: unknown field 'x' (allowed:
    …)"``, the place once, first (``where`` None: "… at the top level").

    Raises:
        ValueError: the first unknown key, its place and the allowed fields.
    """
    unknown = [key for key in data if key not in allowed]
    if unknown:
        field = f"unknown field {unknown[0]!r}"
        place = f"{field} at the top level" if where is None else f"{where}: {field}"
        raise ValueError(f"{place} (allowed: {', '.join(allowed)})")


def check_seeds(value, name: str) -> tuple[int, ...]:
    """``value`` as a tuple of seeds: a non-empty list of distinct integers >= 0.

    Raises:
        ValueError: naming ``name`` (the field's place, e.g. "config.seeds").
    """
    if not isinstance(value, (list, tuple)) or not value or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value):
        raise ValueError(f"{name} must be a non-empty list of integers >= 0, got {value!r}")
    if len(set(value)) != len(value):
        raise ValueError(f"{name} must not repeat a seed, got {list(value)}")
    return tuple(value)


def inline_arrays(text: str) -> str:
    """tomli_w writes every array one item a line; arrays of scalars read better inline."""

    def join(match) -> str:
        items = [item.strip().rstrip(",") for item in match.group(2).strip().splitlines()]
        line = f"{match.group(1)}[{', '.join(items)}]"
        return line if len(line) <= 90 else match.group(0)  # a long list: one item a line

    return re.sub(r"(= )\[\n((?:    [^\[\]{}\n]+,\n)+)\]", join, text)
