"""``sparselab sdm``: SDM circle-intersection weighting curves (Bricken et al. 2023, App. A.7, Fig. 7).

``sparselab sdm curves --n 64 --d 5,11,15 --weighting binary,linear,exp --out DIR`` writes the
normalised circle intersection I(d_v) / I(0) against the Hamming distance d_v between query and
pattern for each radius and weighting, with the fitted softmax exponential overlaid:

    DIR/sdm_curves.csv          tidy: one row per (d, weighting, d_v)
    DIR/sdm_softmax_fits.csv    one row per (d, weighting): fitted β, intercept, R²
    DIR/sdm_curves.png          one panel per radius (Fig. 7)
    DIR/sdm_curves_config.json  the configuration, so the figure can be regenerated from DIR
"""

from __future__ import annotations

import json
import math
import pathlib
from dataclasses import asdict, dataclass

from typing import TYPE_CHECKING

import click

from experiments.cli_options import writable_folder

if TYPE_CHECKING:  # numpy, pandas and routing.sdm (Numba) load when the curves are drawn
    import pandas as pd

__all__ = ["SdmCurvesConfig", "sdm_curves_tables", "write_sdm_curves", "sdm_command"]

# β of the exponential weighting (per bit of Hamming distance). App. A.7 does not state the value
# behind Fig. 7; as β -> 0 the exponential curve tends to the binary one.
DEFAULT_BETA = 0.05
_COLOURS = {"binary": "tab:blue", "linear": "tab:orange", "exponential": "tab:green"}  # as in Fig. 7
# the weightings' curves lie within about 0.01 · I(0) of each other: each its own marker, size
# and line style, so that a curve under another still shows
_STYLES = {"binary": ("o", 6, "-"), "linear": ("s", 4, "--"), "exponential": ("^", 3, ":")}


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
        from routing.sdm._checks import check_weighting
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


def _config(n, radii, weightings, beta) -> SdmCurvesConfig:
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
        shown_max = min(config.n, 2 * d + 1)
        groups = coinciding_weightings(curves, d, config.weightings, shown_max)
        for group in groups:
            weighting = group[0]
            rows = curves[(curves.d == d) & (curves.weighting == weighting) & (curves.d_v <= shown_max)]
            names = [w + (f" (β={config.beta:g}/bit)" if w == "exponential" else "") for w in group]
            label = " = ".join(names) + (" (identical curves)" if len(group) > 1 else "")
            marker, size, style = _STYLES[weighting]
            ax.plot(rows.d_v, rows.normalised, marker=marker, ms=size, ls=style, lw=1.5,
                    color=_COLOURS[weighting], label=label,
                    markerfacecolor="none" if size > 3 else None)
            if fitted in group:
                beta = fits[(fits.d == d) & (fits.weighting == fitted)].softmax_beta.iloc[0]
                ax.plot(rows.d_v, curves[(curves.d == d) & (curves.weighting == fitted)
                                         & (curves.d_v <= shown_max)].softmax_fit, "k--", lw=1,
                        label=f"softmax exp(β·cos), β={beta:.1f}\n(OLS fit to {fitted}, d_v < {d})")
        same = [g for g in groups if len(g) > 1]
        shown = curves[(curves.d == d) & (curves.d_v <= shown_max)]
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
        Paths of sdm_curves.csv, sdm_softmax_fits.csv, sdm_curves.png, sdm_curves_config.json.

    Raises:
        ValueError: for n < 2, a radius outside [1, n], an unknown weighting or β < 0.
    """
    config = _config(n, radii, weightings, beta)
    from experiments.output_folder import make_folder

    out = make_folder(out_dir, "out_dir")
    curves, fits = sdm_curves_tables(config)
    paths = [out / "sdm_curves.csv", out / "sdm_softmax_fits.csv", out / "sdm_curves.png",
             out / "sdm_curves_config.json"]
    curves.to_csv(paths[0], index=False, float_format="%.17g")
    fits.to_csv(paths[1], index=False, float_format="%.17g")
    _plot(curves, fits, config, paths[2])
    paths[3].write_text(json.dumps(asdict(config), indent=2) + "\n")
    return paths


def _split(value: str, cast, name: str):
    try:
        return tuple(cast(v.strip()) for v in value.split(",") if v.strip())
    except ValueError as err:
        raise click.BadParameter(f"expected a comma-separated list, got {value!r}", param_hint=name) from err


@click.group(name="sdm",
             short_help="SDM circle-intersection weighting curves (Bricken et al. 2023).")
def sdm_command() -> None:
    """Sparse Distributed Memory: circle-intersection weighting curves (Bricken et al. 2023,
    App. A.7)."""


@sdm_command.command("curves",
                     short_help="Normalised intersection vs d_v with the fitted softmax.")
@click.option("--n", "n", type=int, default=64, show_default=True, help="address length in bits")
@click.option("--d", "radii", default="5,11,15", show_default=True, help="Hamming radii, comma-separated")
@click.option("--weighting", "weightings", default="binary,linear,exp", show_default=True,
              help="weightings (binary, linear, exp), comma-separated")
@click.option("--beta", type=float, default=DEFAULT_BETA, show_default=True,
              help="decay per bit of the exponential weighting (Eq. 9)")
@click.option("--out", "out_dir", type=click.Path(path_type=pathlib.Path),
              default=pathlib.Path("runs/sdm"), show_default=True,
              help="output folder (the curves have no preset, so no runs/<preset>/ level)")
def curves_command(n, radii, weightings, beta, out_dir) -> None:
    """Write CSV and PNG of the normalised intersection vs d_v with the fitted softmax (Fig. 7)."""
    try:
        radii, weightings = _split(radii, int, "--d"), _split(weightings, str, "--weighting")
        _config(n, radii, weightings, beta)  # bad arguments first: they are usage errors
    except ValueError as err:
        raise click.UsageError(str(err)) from err
    writable_folder(out_dir)
    try:
        paths = write_sdm_curves(out_dir, n, radii, weightings, beta)
    except OSError as error:
        raise click.ClickException(f"--out {out_dir}: {error}") from None
    for path in paths:
        click.echo(str(path))
