"""SDM's circle-intersection weighting curves (Bricken et al. 2023, App. A.7, Fig. 7): the
tables, the figure and the claims on them (``sparselab sdm curves`` writes them)."""

from __future__ import annotations

import json
import math
import pathlib
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

__all__ = ["SdmCurvesConfig", "sdm_curves_tables", "write_sdm_curves", "NEGLIGIBLE_BAND"]

if TYPE_CHECKING:  # numpy, pandas and routing.sdm (Numba) load when the curves are drawn
    import pandas as pd


# β of the exponential weighting (per bit of Hamming distance). App. A.7 does not state the value
# behind Fig. 7; as β -> 0 the exponential curve tends to the binary one.
DEFAULT_BETA = 0.05


_COLOURS = {"binary": "tab:blue", "linear": "tab:orange", "exponential": "tab:green"}  # as in Fig. 7


# the weightings' curves lie within about 0.01 · I(0) of each other: each its own marker, size
# and line style, so that a curve under another still shows
_STYLES = {"binary": ("o", 6, "-"), "linear": ("s", 4, "--"), "exponential": ("^", 3, ":")}


#: Smallest difference of interest between two weightings' curves (App. A.7, Fig. 7: they
#: "differ negligibly"), in units of I(0), the curves' common scale: every pair of normalised
#: curves within ±NEGLIGIBLE_BAND at every plotted d_v reads negligible. Fixed in code before
#: the claim was decided; the curves themselves had been plotted before (they are computed,
#: not sampled), so the band is stated with its reason rather than claimed blind.
NEGLIGIBLE_BAND = 0.05


NEGLIGIBLE_BAND_REASON = ("5 % of I(0), the height of Fig. 7's panels: a gap that small is a "
                          "few line widths on the figure, what the paper calls 'barely "
                          "visible'; no tolerance is stated in the paper")


#: The positive control's planted weighting differs from the binary one by this multiple of
#: the band (just beyond it: a computed difference has no noise to clear).
PLANT_EXCESS = 1.1


@dataclass(frozen=True)
class SdmCurvesConfig:
    """What :func:`write_sdm_curves` computes (written next to its results).

    Attributes:
        n: address length in bits (64: the Transformer-attention setting of Bricken & Pehlevan 2021).
        radii: Hamming radii d (5, 11, 15: the three optimal d* used in Fig. 7).
        weightings: App. A.7 weightings, canonical names ("binary", "linear", "exponential").
        beta: decay per bit of the exponential weighting (Eq. 9).
        source: the figure reproduced.
    """

    n: int = 64
    radii: tuple[int, ...] = (5, 11, 15)
    weightings: tuple[str, ...] = ("binary", "linear", "exponential")
    beta: float = DEFAULT_BETA
    source: str = "Bricken et al. 2023, App. A.7, Eqs. 7-9, Fig. 7"

    def __post_init__(self):
        """Check every field; radii and weightings become tuples, weightings canonical names.

        Raises:
            ValueError: n not an integer >= 2; radii not a non-empty sequence of integers in
                [1, n]; weightings not a non-empty sequence of known weightings; beta not a
                finite real >= 0 (each naming the field).
        """
        from routing.sdm import check_weighting
        from routing.validation import check_int, check_real

        n = check_int(self.n, "n", 2, None)
        if not isinstance(self.radii, (tuple, list)) or not self.radii:
            raise ValueError(f"radii must hold at least one radius d in [1, n], got "
                             f"{self.radii!r}")
        radii = tuple(check_int(d, "radii", 1, n) for d in self.radii)
        beta = check_real(self.beta, "beta", 0.0, None)
        if not isinstance(self.weightings, (tuple, list)) or not self.weightings:
            raise ValueError("weightings must hold at least one of 'binary', 'linear', "
                             f"'exponential', got {self.weightings!r}")
        names = []
        for w in self.weightings:
            if not isinstance(w, str):
                raise ValueError(f"weightings must be names ('binary', 'linear', "
                                 f"'exponential'), got {w!r}")
            name, _ = check_weighting(w, beta if w in ("exp", "exponential") else None)
            names.append(name)
        if not isinstance(self.source, str):
            raise ValueError(f"source must be a string, got {self.source!r}")
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "radii", radii)
        object.__setattr__(self, "weightings", tuple(dict.fromkeys(names)))
        object.__setattr__(self, "beta", beta)


def curves_config(n, radii, weightings, beta) -> SdmCurvesConfig:
    """An ``SdmCurvesConfig`` from the values a command line or a caller gives (lists become
    tuples). Arguments and errors as ``SdmCurvesConfig``."""
    return SdmCurvesConfig(n=n, radii=tuple(radii) if isinstance(radii, list) else radii,
                           weightings=tuple(weightings) if isinstance(weightings, list)
                           else weightings, beta=beta)


def sdm_curves_tables(config: SdmCurvesConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The curves and softmax fits of ``config`` as tidy DataFrames.

    Returns:
        (curves, fits). ``curves`` has one row per (d, weighting, d_v = 0 … n) with columns
        n, d, weighting, weighting_beta (NaN unless exponential), d_v, cosine,
        log_intersection (natural log of I, from circle_intersection), normalised
        (I(d_v) / I(0)), softmax_fit (exp(intercept + β·cosine) / I(0)) and in_fit_range
        (d_v < d). ``fits`` has one row per (d, weighting): softmax_beta, intercept, r_squared.
    """
    import numpy as np
    import pandas as pd

    from routing.sdm import circle_intersection, fit_softmax_beta, hamming_to_cosine

    n = config.n
    d_v = np.arange(n + 1)
    cosine = hamming_to_cosine(d_v, n)
    curves, fits = [], []
    for d in config.radii:
        for weighting in config.weightings:
            wbeta = config.beta if weighting == "exponential" else None
            log_i = circle_intersection(n, d, d_v, weighting, wbeta, log=True)
            fit = fit_softmax_beta(n, d, weighting=weighting, beta=wbeta)
            curves.append(pd.DataFrame({
                "n": n, "d": d, "weighting": weighting,
                "weighting_beta": math.nan if wbeta is None else wbeta,
                "d_v": d_v, "cosine": cosine, "log_intersection": log_i,
                "normalised": np.exp(log_i - log_i[0]),
                "softmax_fit": np.exp(fit.predict_log(cosine) - log_i[0]),
                "in_fit_range": d_v < d,
            }))
            fits.append({"n": n, "d": d, "weighting": weighting,
                         "weighting_beta": math.nan if wbeta is None else wbeta,
                         "softmax_beta": fit.beta, "intercept": fit.intercept,
                         "r_squared": fit.r_squared, "fit_d_v_min": int(fit.d_v.min()),
                         "fit_d_v_max": int(fit.d_v.max())})
    return pd.concat(curves, ignore_index=True), pd.DataFrame(fits)


def coinciding_weightings(curves: pd.DataFrame, d: int, weightings, n_shown: int,
                          atol: float = 1e-12) -> list[list[str]]:
    """The weightings of radius ``d`` grouped by identical curves: two weightings share a group
    when their normalised intersections differ by at most ``atol`` at every shown d_v
    (``d_v <= n_shown``), so that a plot can draw one line for the group and say so (lines
    that coincide exactly would hide each other). Order: ``weightings``' own.

    Arguments:
        curves: ``sdm_curves_tables``' curves; d: a radius of them; weightings: names;
        n_shown: the largest d_v drawn; atol: tolerance (>= 0, in units of I(0)).

    Raises:
        ValueError: ``atol`` < 0.
    """
    import numpy as np

    from routing.validation import check_real

    atol = check_real(atol, "atol", 0.0)
    values = {w: curves[(curves.d == d) & (curves.weighting == w) & (curves.d_v <= n_shown)]
              .sort_values("d_v").normalised.to_numpy() for w in weightings}
    groups: list[list[str]] = []
    for weighting in weightings:
        for group in groups:
            first = values[group[0]]
            if len(first) == len(values[weighting]) and np.all(
                    np.abs(first - values[weighting]) <= atol):
                group.append(weighting)
                break
        else:
            groups.append([weighting])
    return groups


def _shown_max(n: int, d: int) -> int:
    """The largest Hamming distance d_v drawn for radius ``d`` (Fig. 7's range: 0 … 2d + 1,
    at most ``n``); the weighting claim is decided over the same range."""
    return min(n, 2 * d + 1)


def _weighting_spread(curves: pd.DataFrame, d: int, weightings, n_shown: int) -> float:
    """The largest gap between the normalised curves I(d_v) / I(0) of ``weightings`` at radius
    ``d`` over d_v = 0 … ``n_shown``: the maximum over d_v of (largest − smallest value across
    the weightings), i.e. the largest |difference| of any pair; 0.0 for one weighting. In
    units of I(0) (Bricken et al. 2023, App. A.7, Fig. 7).

    Arguments:
        curves: ``sdm_curves_tables``' curves; d: a radius of them; weightings: names of
        curves in them; n_shown: the largest d_v compared (int >= 0).

    Raises:
        ValueError: ``weightings`` empty, or a weighting without the n_shown + 1 rows of
            radius ``d`` (naming it).
    """
    import numpy as np

    from routing.validation import check_int

    n_shown = check_int(n_shown, "n_shown", 0)
    weightings = list(weightings)
    if not weightings:
        raise ValueError("weightings must name at least one curve, got none")
    values = []
    for w in weightings:
        rows = curves[(curves.d == d) & (curves.weighting == w) & (curves.d_v <= n_shown)]
        if len(rows) != n_shown + 1:
            raise ValueError(f"weightings: {w!r} has {len(rows)} rows at d = {d} for d_v = 0 … "
                             f"{n_shown}, needs {n_shown + 1}")
        values.append(rows.sort_values("d_v").normalised.to_numpy())
    values = np.vstack(values)
    return float((values.max(axis=0) - values.min(axis=0)).max())


def _exponential_gap(n: int, radii, beta: float) -> float:
    """The largest gap, over ``radii`` and each radius' plotted d_v (``_shown_max``), between
    the normalised curve of the exponential weighting at ``beta`` (per bit, Eq. 9) and the
    binary one (Eq. 7), computed by ``routing.sdm.circle_intersection``; in units of I(0).

    Raises:
        ValueError: as ``circle_intersection`` (n < 2, a radius outside [1, n], β < 0).
    """
    import numpy as np

    from routing.sdm import circle_intersection

    gap = 0.0
    for d in radii:
        d_v = np.arange(_shown_max(n, d) + 1)
        binary = circle_intersection(n, d, d_v, "binary", None, log=True)
        exp = circle_intersection(n, d, d_v, "exponential", beta, log=True)
        gap = max(gap, float(np.abs(np.exp(exp - exp[0]) - np.exp(binary - binary[0])).max()))
    return gap


def _planted_beta(n: int, radii, gap: float, beta_max: float = 64.0) -> float | None:
    """The β (per bit) at which the exponential weighting's curve lies ``gap`` · I(0) from the
    binary one at its farthest (``_exponential_gap``; a root by ``scipy.optimize.brentq``
    between β = 0, where the two curves are the same, and the first doubling of 0.05 past
    it), or None when no β ≤ ``beta_max`` reaches ``gap``. The positive control's plant: a
    real weighting built to differ by ``gap``.

    Raises:
        ValueError: ``gap`` not a finite real > 0 or ``beta_max`` not > 0.
    """
    from scipy.optimize import brentq

    from routing.validation import check_real

    gap = check_real(gap, "gap", 0.0, None, low_open=True)
    beta_max = check_real(beta_max, "beta_max", 0.0, None, low_open=True)
    high = 0.05
    while _exponential_gap(n, radii, high) <= gap:
        high *= 2
        if high > beta_max:
            return None
    return float(brentq(lambda beta: _exponential_gap(n, radii, beta) - gap, 0.0, high,
                        xtol=1e-12))


def _weighting_claims(config: SdmCurvesConfig, curves: pd.DataFrame,
                     band: float = NEGLIGIBLE_BAND) -> list:
    """App. A.7's claim on Fig. 7 ("Weighting neuron read and write operations has a
    negligible effect on SDM"), decided as an equivalence on the curves, and its positive
    control; ``experiments.analysis.claims.Claim`` rows of experiment "sdm".

    * The claim: every pair of ``config.weightings``' normalised curves lies within ±``band``
      · I(0) at every plotted d_v (0 … 2d + 1) of every radius: *supported* when the largest
      gap (``_weighting_spread``) is ≤ ``band``, *not supported* when it is larger, *not
      tested* with one weighting. The curves are computed, not sampled: the verdict carries
      no p-value and no interval, its only uncertainty is float rounding (≈ 1e-15 · I(0)).
    * The positive control: an exponential weighting planted at the β where its curve lies
      ``PLANT_EXCESS`` × ``band`` from the binary one (``_planted_beta``), read by the same rule
      against the binary curve; it must read *supported* (they differ beyond the band).

    Arguments:
        config: the curves' configuration; curves: ``sdm_curves_tables(config)[0]``;
        band: the smallest difference of interest, in units of I(0), in (0, 1].

    Raises:
        ValueError: ``band`` outside (0, 1]; ``curves`` lacking a curve of ``config``.
    """
    from experiments.analysis.claims import Claim
    from routing.validation import check_real

    band = check_real(band, "band", 0.0, 1.0, low_open=True)
    names, radii = config.weightings, config.radii
    reason = NEGLIGIBLE_BAND_REASON if band == NEGLIGIBLE_BAND else "a band given by the caller"
    sizes = (f"n = {config.n}, radii {', '.join(map(str, radii))}, exponential β = "
             f"{config.beta:g}/bit; the paper's Fig. 7: n = 64, d = 5, 11, 15, β not stated")
    common = {"sizes": sizes, "sesoi": band, "test": "largest gap of computed curves against "
              "the band (deterministic: no sampling, no p-value)"}
    text = (f"the {', '.join(names)} weightings differ negligibly: every pair of normalised "
            f"curves within ±{band:g} · I(0) at every plotted d_v (0 … 2d + 1), every radius")
    if len(names) < 2:
        claims = [Claim("sdm", text, "not tested", "one weighting: no pair to compare",
                        **common)]
    else:
        per, parts = {}, []
        for d in radii:
            per[d] = _weighting_spread(curves, d, names, _shown_max(config.n, d))
            pairs = [(a, b, _weighting_spread(curves, d, (a, b), _shown_max(config.n, d)))
                     for i, a in enumerate(names) for b in names[i + 1:]]
            parts.append(f"d = {d}: " + ", ".join(f"{a}–{b} {g:.3g}" for a, b, g in pairs))
        spread = max(per.values())
        widest = max(per, key=per.get)
        verdict = "supported" if spread <= band else "not supported"
        significance = (f"largest gap {spread:.4g} · I(0) (d = {widest}) against the band "
                        f"±{band:g} · I(0) ({reason}); computed, not sampled: no p-value, no "
                        f"interval, the only uncertainty float rounding (≈ 1e-15 · I(0))")
        edge = _planted_beta(config.n, radii, band) if "exponential" in names else None
        evidence = ("largest gap between weightings, in units of I(0): " + "; ".join(parts)
                    + (f". The exponential weighting stays within the band of the binary one "
                       f"up to β ≈ {edge:.3g}/bit at these radii (ours: {config.beta:g}/bit)"
                       if edge is not None else ""))
        diagnosis = "" if verdict == "supported" else (
            f"the gap reaches {spread:.3g} · I(0) at d = {widest}, beyond ±{band:g}; "
            "the exponential weighting's gap grows with β, which Fig. 7 does not state")
        claims = [Claim("sdm", text, verdict, evidence, effect=spread,
                        significance=significance, diagnosis=diagnosis, **common)]
    planted = _planted_beta(config.n, radii, PLANT_EXCESS * band)
    control = (f"positive control: a planted exponential weighting, built to lie {PLANT_EXCESS:g} "
               f"× the band from the binary one, differs beyond ±{band:g} · I(0) by the same "
               f"rule; must read supported")
    if planted is None:
        claims.append(Claim("sdm", control, "not tested", f"no β ≤ 64/bit moves the exponential "
                            f"curve {PLANT_EXCESS:g} × {band:g} · I(0) from the binary one at "
                            f"these radii", role="positive control", **common))
    else:
        gap = _exponential_gap(config.n, radii, planted)
        claims.append(Claim("sdm", control, "supported" if gap > band else "not supported",
                            f"planted β = {planted:.4g}/bit: largest gap {gap:.4g} · I(0) from "
                            f"the binary curve", effect=gap, role="positive control",
                            significance=f"largest gap {gap:.4g} · I(0) against the band "
                            f"±{band:g} · I(0); computed, not sampled", **common))
    return claims


def sdm_figure(curves: pd.DataFrame, fits: pd.DataFrame, config: SdmCurvesConfig):
    """The Fig. 7 panels, one per radius: each weighting's normalised intersection, weightings
    whose curves coincide drawn as one line labelled with all their names and "identical"
    (``coinciding_weightings``; the title says so too), and the softmax fit to the first
    weighting. Returns the matplotlib ``Figure``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.2 * len(config.radii), 3.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(config.radii), squeeze=False)[0]
    fitted = config.weightings[0]  # the softmax overlaid: the fit to the first weighting (binary by default)
    for ax, d in zip(axes, config.radii):
        n_shown = _shown_max(config.n, d)
        groups = coinciding_weightings(curves, d, config.weightings, n_shown)
        for group in groups:
            weighting = group[0]
            rows = curves[(curves.d == d) & (curves.weighting == weighting) & (curves.d_v <= n_shown)]
            names = [w + (f" (β={config.beta:g}/bit)" if w == "exponential" else "") for w in group]
            label = " = ".join(names) + (" (identical curves)" if len(group) > 1 else "")
            marker, size, style = _STYLES[weighting]
            ax.plot(rows.d_v, rows.normalised, marker=marker, ms=size, ls=style, lw=1.5,
                    color=_COLOURS[weighting], label=label,
                    markerfacecolor="none" if size > 3 else None)
            if fitted in group:
                beta = fits[(fits.d == d) & (fits.weighting == fitted)].softmax_beta.iloc[0]
                ax.plot(rows.d_v, curves[(curves.d == d) & (curves.weighting == fitted)
                                         & (curves.d_v <= n_shown)].softmax_fit, "k--", lw=1,
                        label=f"softmax exp(β·cos), β={beta:.1f}\n(OLS fit to {fitted}, d_v < {d})")
        same = [g for g in groups if len(g) > 1]
        shown = curves[(curves.d == d) & (curves.d_v <= n_shown)]
        spread = shown.groupby("d_v").normalised.agg(lambda v: v.max() - v.min()).max()
        note = "".join(f"\n{', '.join(g)}: one curve (they coincide)" for g in same)
        if not same and len(config.weightings) > 1:
            note = f"\nweightings differ by ≤ {spread:.3f} · I(0): they overlap"
        ax.set_title(f"n = {config.n}, d = {d}{note}", fontsize=9)
        ax.set_xlabel("Hamming distance d_v between query and pattern")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("normalised circle intersection I(d_v) / I(0)")
    fig.suptitle("SDM neuron weightings (Bricken et al. 2023, Fig. 7)", fontsize=10)
    return fig


def _plot(curves: pd.DataFrame, fits: pd.DataFrame, config: SdmCurvesConfig, path: pathlib.Path) -> None:
    sdm_figure(curves, fits, config).savefig(path, dpi=120)


def write_sdm_curves(out_dir, n=64, radii=(5, 11, 15), weightings=("binary", "linear", "exponential"),
                     beta=DEFAULT_BETA) -> list[pathlib.Path]:
    """Write the Fig. 7 weighting curves of Bricken et al. 2023 (App. A.7) into ``out_dir``.

    Arguments:
        out_dir: folder (created if missing).
        n: address length in bits, int >= 2.
        radii: Hamming radii, ints in [1, n].
        weightings: any of "binary", "linear", "exponential" / "exp" (Eqs. 7-9).
        beta: decay per bit of the exponential weighting, float >= 0.

    Returns:
        Paths of sdm_curves.csv, sdm_softmax_fits.csv, sdm_curves.png, sdm_curves_config.json
        and claims.csv (``_weighting_claims``: App. A.7's claim and its positive control).

    Raises:
        ValueError: for n < 2, a radius outside [1, n], an unknown weighting or β < 0.
    """
    config = curves_config(n, radii, weightings, beta)
    from experiments.runner.output_folder import make_folder

    out = make_folder(out_dir, "out_dir")
    curves, fits = sdm_curves_tables(config)
    paths = [out / "sdm_curves.csv", out / "sdm_softmax_fits.csv", out / "sdm_curves.png",
             out / "sdm_curves_config.json", out / "claims.csv"]
    curves.to_csv(paths[0], index=False, float_format="%.17g")
    fits.to_csv(paths[1], index=False, float_format="%.17g")
    _plot(curves, fits, config, paths[2])
    paths[3].write_text(json.dumps(asdict(config), indent=2) + "\n")
    import pandas as pd

    from experiments.analysis.claims import CLAIM_COLUMNS

    pd.DataFrame([{c: getattr(claim, c) for c in CLAIM_COLUMNS}
                  for claim in _weighting_claims(config, curves)],
                 columns=CLAIM_COLUMNS).to_csv(paths[4], index=False)
    return paths
