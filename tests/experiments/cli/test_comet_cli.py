"""``sparselab comet utilisation`` (COMET §5.1.2 on sparselab's inputs) end to end: the files
it writes, and its never-active counts against a recomputation of the routing masks with a
stable sort (COMET §4, Eqs. 3-6: c_ℓ = V_ℓ z_{ℓ−1}, the k_ℓ largest scores with ties to the
lowest index, z_ℓ = m_ℓ ∘ c_ℓ) over the same inputs and networks."""

import json
from dataclasses import asdict

import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from experiments.cli import main
from experiments.papers.comet_studies import _sample_inputs, preset_utilisation
from routing.layers.comet import COMET, COMETConfig, k_winners


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("comet_utilisation")
    result = CliRunner().invoke(main, ["comet", "utilisation", "--preset", "tiny",
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, result.output


def _stable_sort_masks(layer: COMET, X: torch.Tensor) -> list[torch.Tensor]:
    """Routing masks (B, N_ℓ) bool: the first k_ℓ of a stable descending sort of each row."""
    z, masks = X, []
    for V, k in zip(layer.routing_weights, layer.ks):
        c = z @ V.T
        order = torch.sort(c, dim=1, descending=True, stable=True).indices[:, :k]
        m = torch.zeros_like(c, dtype=torch.bool).scatter_(1, order, True)
        masks.append(m)
        z = c * m
    return masks


def test_utilisation_writes_its_files_and_config(written):
    out, output = written
    names = ["utilisation_config.json", "utilisation.csv", "utilisation_summary.csv",
             "comet_utilisation.png", "comet_utilisation.svg", "claims.csv"]
    for name in names:
        assert (out / name).stat().st_size > 0
        assert f"wrote {out / name}" in output
    config = json.loads((out / "utilisation_config.json").read_text())
    expected = json.loads(json.dumps(asdict(preset_utilisation("tiny"))))
    assert config == expected
    claims = pd.read_csv(out / "claims.csv", keep_default_na=False)
    assert list(claims["record"]) == ["comet_dead_neuron_models"] * 2
    assert set(claims["verdict"]) <= {"supported", "not supported", "inconclusive",
                                      "underpowered"}


def test_utilisation_never_active_counts_match_a_recomputation(written):
    out, _ = written
    cfg = preset_utilisation("tiny")
    df = pd.read_csv(out / "utilisation.csv")
    # every (input, network, p_k, layer, n_inputs) once
    assert len(df) == (len(cfg.inputs) * cfg.n_networks * len(cfg.p_ks) * cfg.n_hidden
                       * len(cfg.n_inputs))
    assert df["dead_fraction"].between(0, 1).all()
    assert (df["dead_fraction"] == df["n_dead"] / df["width"]).all()
    assert df["width"].between(*cfg.width_range).all()
    checked = 0
    for name in cfg.inputs:
        X = torch.from_numpy(_sample_inputs(cfg, name)).float()
        for (seed, p_k), g in df[df["input"] == name].groupby(["network_seed", "p_k"]):
            first = g[g["n_inputs"] == cfg.n_inputs[0]].sort_values("layer")
            widths = tuple(int(w) for w in first["width"])
            layer = COMET(COMETConfig(d_in=cfg.dim, widths=widths, p_k=p_k, seed=int(seed)))
            masks = _stable_sort_masks(layer, X)
            for row in g.itertuples():
                m = masks[row.layer - 1][:row.n_inputs]
                assert row.k == k_winners(p_k, row.width)
                assert row.n_dead == int((~m.any(dim=0)).sum()), row
                checked += 1
    assert checked == len(df)
    # the study has something to find: p_k = 0.05 leaves neurons dead in some layer
    assert (df["n_dead"] > 0).any() and (df["n_dead"] == 0).any()


def test_utilisation_summary_pools_the_rows(written):
    out, _ = written
    df = pd.read_csv(out / "utilisation.csv")
    summary = pd.read_csv(out / "utilisation_summary.csv")
    assert summary["dead_fraction"].between(0, 1).all()
    for row in summary.itertuples():
        g = df[(df["input"] == row.input) & (df["p_k"] == row.p_k)
               & (df["n_inputs"] == row.n_inputs)]
        assert row.n_networks == g["network"].nunique()
        assert row.dead_fraction == pytest.approx(g["n_dead"].sum() / g["width"].sum(),
                                                  rel=1e-12)
    # nested prefixes of one sample: more inputs can only wake neurons up
    wide = summary.pivot_table(index=["input", "p_k"], columns="n_inputs",
                               values="dead_fraction")
    assert (wide.diff(axis=1).iloc[:, 1:] <= 0).all().all()
