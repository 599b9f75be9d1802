"""Baykal et al. 2022, §5.2, Figures 2–4: DSM, LSH of three hash families and a uniform random
hash against dense, at equal activated units and by non-empty buckets — the configs at each
preset (sizes: ``experiments.papers.presets``) and the claims the figures make."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.claims import (
    Claim,
    claim_line,
    compare_unchecked,
    lsh_description,
    mean_mse,
    model_key_fields,
)
from experiments.papers.presets import (
    EQUAL_UNITS_DENSE_LABEL,
    LSH_FAMILY_NAMES,
    LSH_TABLES,
    ADAM_GRID,
    UNIFORM_BITS,
    UNIFORM_HASH_LABEL,
    _check_preset,
    _dense,
    _dense_at_tables,
    _dsm,
    _lsh,
    _regimes,
    _sizes,
    lsh_label,
)
from experiments.papers.router_study import matched_below
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec


def _lsh_panels(name_of, dense: bool = True) -> dict:
    """One panel per hash family: its s = 1, 4, 16 curves (beside dense by width) against
    non-empty buckets (x "size", ``experiments.analysis.plots.with_size``)."""
    return {name_of(family): {"x": "size",
                              "models": (["dense"] if dense else [])
                              + [lsh_label(family, s) for s in LSH_TABLES],
                              "title": f"LSH ({words}) vs dense"}
            for family, words in LSH_FAMILY_NAMES.items()}


def _uniform_panel() -> dict:
    """Baykal et al. §1 (and §5.3): LSH beats a uniform random hash at equal buckets; one
    table each, by non-empty buckets."""
    return {"x": "size", "models": [UNIFORM_HASH_LABEL] + [lsh_label(f, 1)
                                                           for f in LSH_FAMILY_NAMES],
            "title": "LSH vs uniform random hash, equal buckets (§1)"}


def _dsm_vs_dense_and_lsh(name, family, preset):
    """Figures 2 and 3: (a) DSM vs dense at equal activated units over several total widths;
    (b–d) LSH of each hash family (s = 1, 4, 16 tables) vs dense, by non-empty buckets (dense:
    its width); (e) LSH vs a uniform random hash table at equal non-empty buckets. One config
    per regime (``REGIMES``)."""
    _check_preset(preset)
    scale = {"tiny": dict(dense=[8, 32, 128], dsm_widths=[128], ks=[8, 32]),
             "quick": dict(dense=[16, 32, 64, 128, 256, 512, 1024, 2048],
                           dsm_widths=[512, 2048], ks=[16, 32, 64, 128, 256]),
             "paper": dict(dense=[64, 128, 256, 512, 1024, 2048, 4096, 8192],
                           dsm_widths=[2048, 8192, 16384], ks=[64, 128, 256, 512, 1024])}[preset]

    def make(fit, thin):
        dense = ADAM_GRID["dense"] if thin else scale["dense"]
        ks = ADAM_GRID["dsm_ks"] if thin else scale["ks"]
        bits = ADAM_GRID["uniform"] if thin else UNIFORM_BITS[preset]
        uniform = [ModelSpec("lsh", n_bits=b, family="uniform", label=UNIFORM_HASH_LABEL)
                   for b in bits]
        tables = ADAM_GRID["lsh_tables"] if thin else LSH_TABLES
        models = (_dense(dense) + _dsm(scale["dsm_widths"], ks) + _lsh(preset, thin) + uniform
                  + _dense_at_tables(tables, dense))
        dsm_labels = [f"DSM width {W}" for W in scale["dsm_widths"]]
        panels = {"a": {"x": "activated_units", "models": ["dense", *dsm_labels],
                        "title": "DSM vs dense at equal activated units"},
                  **_lsh_panels({"sign": "b", "affine": "c", "euclidean": "d"}.get),
                  "e": _uniform_panel()}
        return ExperimentConfig(name=name, preset=preset, target=TargetSpec(family=family),
                                models=tuple(models), panels=panels, **_sizes(preset))

    return _regimes(preset, make)


def fig2(preset: str) -> list[ExperimentConfig]:
    """Figure 2: degree-4 random polynomial, n_inputs = 8 (one config per regime).

    Raises:
        ValueError: ``preset`` not one of ``PRESETS`` ("tiny", "quick", "paper").
    """
    return _dsm_vs_dense_and_lsh("fig2", "polynomial", preset)


def fig3(preset: str) -> list[ExperimentConfig]:
    """Figure 3: random hypercube function, n_inputs = 8 (one config per regime).

    Raises:
        ValueError: ``preset`` not one of ``PRESETS`` ("tiny", "quick", "paper").
    """
    return _dsm_vs_dense_and_lsh("fig3", "hypercube", preset)


def fig4(preset: str) -> list[ExperimentConfig]:
    """Figure 4: dense, random hash, DSM and LSH together (random polynomial, n = 8), one
    config per regime: (a) at equal activated units with the sparse models at one total width;
    (b) the LSH families vs dense by non-empty buckets / width — in the quick preset at
    s ∈ {1, 16} with the first, third and last size of Figure 2's grid (Figure 2 fits the
    whole grid on the same target), elsewhere every s of ``LSH_TABLES``.

    Raises:
        ValueError: ``preset`` not one of ``PRESETS`` ("tiny", "quick", "paper").
    """
    _check_preset(preset)
    W, ks, widest = {
        "tiny": (128, [8, 32], 128),
        "quick": (1024, [16, 32, 64, 128, 256], 2048),
        "paper": (8192, [64, 128, 256, 512, 1024], 8192)}[preset]
    tables = ADAM_GRID["lsh_tables"] if preset == "quick" else LSH_TABLES

    def make(fit, thin):
        units = [ks[i] for i in (0, 2, 4)] if thin else ks
        # dense models as wide as the LSH tables, up to the widest an exact fit handles quickly
        wide = [w for w in (512, 1024, 2048, 4096, 8192) if max(ks) < w <= widest]
        lsh = _lsh(preset, thin=preset == "quick")
        models = (_dense(units) + [ModelSpec("dsm", width=W, k=k, label="DSM") for k in units]
                  + [ModelSpec("random_hash", width=W, k=k, label="random hash") for k in units]
                  + lsh + _dense(wide) + _dense_at_tables(tables, units + wide))
        panels = {"a": {"x": "activated_units", "models": ["dense", "DSM", "random hash"],
                        "title": f"equal activated units (sparse models: width {W})"},
                  "b": {"x": "size",
                        "models": ["dense"] + [lsh_label(f, s) for f in LSH_FAMILY_NAMES
                                               for s in tables],
                        "title": "LSH (each family) vs dense"}}
        return ExperimentConfig(name="fig4", preset=preset, target=TargetSpec(family="polynomial"),
                                models=tuple(models), panels=panels, **_sizes(preset))

    return _regimes(preset, make)


def _lsh_labels(frame: pd.DataFrame) -> dict[str, str]:
    """LSH model labels (kind "lsh", or label "LSH" in rows without a kind) → hash family."""
    if "model" in frame:
        rows = frame[frame["model"] == "lsh"]
    else:
        rows = frame[frame["model_label"] == "LSH"]
    result = {}
    for label, group in rows.groupby("model_label", sort=False):
        key = group["model_key"].iloc[0] if "model_key" in group else ""
        result[label] = model_key_fields(str(key)).get("family", "sign")
    return result


def _figure_claims(name: str, frame: pd.DataFrame, common: dict) -> list[Claim]:
    claims = []
    fig = {"fig2": "Fig. 2", "fig3": "Fig. 3", "fig4": "Fig. 4"}[name]
    labels = []
    if name in ("fig2", "fig3"):
        labels = sorted({l for l in frame["model_label"] if str(l).startswith("DSM width")},
                        key=lambda l: int(l.split()[-1]))
        for label in labels:
            claims.append(compare_unchecked(name, f"{label} beats dense at equal activated units "
                                  f"(Baykal et al. 2022, §5.2, {fig}a)", frame, label, "dense",
                                  "activated_units", source=f"Baykal et al. 2022, §5.2, {fig}a",
                                  **common))
    else:
        claims.append(compare_unchecked(name, "DSM beats dense at equal activated units (§5.2, Fig. 4)",
                              frame, "DSM", "dense", "activated_units",
                              source="Baykal et al. 2022, §5.2, Fig. 4", **common))
        claims.append(compare_unchecked(name, "random hash underperforms dense at equal activated units "
                              "(§5.2, Fig. 4)", frame, "dense", "random hash",
                              "activated_units", source="Baykal et al. 2022, §5.2, Fig. 4",
                              **common))
    if name == "fig2" and labels:
        claims += _improves(name, frame, labels[0], "width", "total width", common, "")
    dense_size = mean_mse(frame, "dense", "size")
    threshold = 2048 if name == "fig2" else 0

    def widest(b):  # dense at the same width if we ran it, else our widest dense below it
        widths = dense_size.index[dense_size.index <= b]
        return widths.max() if len(widths) else None

    families = _lsh_labels(frame)
    uniform = [label for label, family in families.items() if family == "uniform"]
    for label, family in families.items():
        if family == "uniform":
            continue
        rows = frame[(frame["model_label"] != label) | (frame["size"] >= threshold)]
        claims.append(_lsh_equal_units(name, rows, label, threshold, common))
        text = (f"{label} beats dense from 2048 buckets, dense as wide as the buckets (our "
                f"equal-size reading of Fig. 2b)" if name == "fig2"
                else f"{label} beats dense at equal size, buckets = width (our reading)")
        claims.append(compare_unchecked(name, text, rows, label, "dense", "size", against=widest,
                              describe=lsh_description(frame, label), **common))
        if name == "fig2":
            claims += _improves(name, frame, label, "size", "buckets", common,
                                f"{label} improves as the number of buckets grows")
        for other in uniform:  # §1: LSH beats a uniform random hash at equal buckets
            claims.append(compare_unchecked(name, f"{label} beats {other} at equal buckets (§1, §5.3; "
                                  f"{other} with at most as many, ≥ 1/2 as many non-empty "
                                  "buckets)", frame, label, other, "size",
                                  against=matched_below(mean_mse(frame, other, "size").index),
                                  source="Baykal et al. 2022, §1 and §5.3",
                                  describe=lsh_description(frame, label), **common))
    return claims


def _lsh_equal_units(name: str, rows: pd.DataFrame, label: str, threshold: float,
                     common: dict) -> Claim:
    """LSH model ``label`` (s tables: s activated units, ``LSHModel.activated_units``) at
    every bucket count ≥ ``threshold`` against dense of width s — Baykal et al. 2022 §5.2's
    "same number of activated units"; *not tested* with the reason when the run has no dense
    model of width s."""
    mine = rows[rows["model_label"] == label]
    units = sorted(set(mine["activated_units"].dropna())) if "activated_units" in mine else []
    text = (f"{label} beats dense at equal activated units (s tables = dense width; every "
            f"bucket count" + (f" ≥ {threshold:g}" if threshold else "") + ")")
    # the dense curve's widths and the dense models run at the LSH table counts
    narrow = rows["model_label"].isin(["dense", EQUAL_UNITS_DENSE_LABEL])
    dense = set(rows.loc[narrow, "width"].dropna()) if "width" in rows else set()
    if len(units) != 1 or units[0] not in dense:
        return Claim(name, claim_line(text, common["regime"]), "not tested",
                     "not decidable from these rows: needs a dense model of width s = "
                     + (f"{units[0]:g}" if len(units) == 1 else "the LSH table count, "
                        "and LSH rows" + (f" from {threshold:g} buckets" if threshold else ""))
                     + " (the LSH model's activated units); dense widths run: "
                     + (", ".join(f"{w:g}" for w in sorted(dense)) or "none"),
                     regime=common["regime"], sizes=common["sizes"])
    s = float(units[0])
    at_s = rows[narrow & (rows["width"] == s)].assign(model_label="dense")
    both = pd.concat([mine, at_s])
    return compare_unchecked(name, text, both, label, "dense", "size", against=lambda _: s,
                    worse_x="width", describe=lsh_description(rows, label), **common)


def _improves(name: str, frame: pd.DataFrame, label: str, x: str, word: str, common: dict,
              text: str) -> list[Claim]:
    """``label`` at the largest ``x`` against the smallest (for a "DSM width W" label: the
    widest DSM against the narrowest, paired at each activated units k): "quality improves
    as {word} grows" (Baykal et al. 2022, Fig. 2a/2b), one paired test over seeds (and k);
    nothing when the rows have fewer than two x (or no k run at both DSM widths)."""
    if label.startswith("DSM width"):
        dsm = frame[frame["model_label"].astype(str).str.startswith("DSM width")]
        if dsm.empty or x not in dsm:
            return []
        widths = sorted(set(dsm[x].dropna()))
        if len(widths) < 2:
            return []
        low, high = widths[0], widths[-1]
        shared = set(dsm.loc[dsm[x] == high, "activated_units"]) & set(
            dsm.loc[dsm[x] == low, "activated_units"])
        if not shared:  # no k run at both widths: the rows cannot answer it
            return []
        ends = pd.concat([dsm[dsm[x] == high].assign(model_label="widest"),
                          dsm[dsm[x] == low].assign(model_label="narrowest")])
        return [compare_unchecked(name, f"DSM improves as total width grows (width {high:g} against "
                         f"{low:g}, at each activated units k)", ends, "widest", "narrowest",
                         "activated_units", **common)]
    mine = frame[frame["model_label"] == label]
    values = sorted(set(mine[x].dropna())) if x in mine else []
    if len(values) < 2:
        return []
    low, high = values[0], values[-1]
    ends = pd.concat([mine[mine[x] == high].assign(model_label="most", pair=0),
                      mine[mine[x] == low].assign(model_label="fewest", pair=0)])
    return [compare_unchecked(name, f"{text} ({high:g} against {low:g} buckets)", ends, "most",
                     "fewest", "pair", **common)]
