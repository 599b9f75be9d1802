"""COMET studies (§5.1.1 similarity, §5.1.2 utilisation) on the tiny presets."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from experiments.papers.comet_studies import (
    SimilarityConfig,
    UtilisationConfig,
    make_pairs,
    pair_similarities,
    plot_similarity,
    plot_utilisation,
    preset_similarity,
    preset_utilisation,
    run_similarity,
    run_utilisation,
    summarise_similarity,
    summarise_utilisation,
    write_similarity,
    write_utilisation,
)
from routing.layers.comet import COMET, COMETConfig


@pytest.fixture(scope="module")
def similarity():
    return run_similarity(preset_similarity("tiny"), progress=False)


@pytest.fixture(scope="module")
def utilisation():
    return run_utilisation(preset_utilisation("tiny"), progress=False)


# -- similarity ------------------------------------------------------------------------------
def test_similarity_table_shape_and_ranges(similarity):
    cfg = preset_similarity("tiny")
    assert {"pair", "mu_a", "mu_b", "network", "network_seed", "p_k", "k", "input_cosine",
            "mask_overlap", "activation_cosine"} <= set(similarity.columns)
    assert len(similarity) == cfg.n_pairs * cfg.n_networks * len(cfg.p_ks)
    assert similarity.input_cosine.between(-1, 1).all()
    assert similarity.mask_overlap.between(0, 1).all()
    assert similarity.activation_cosine.dropna().between(-1 - 1e-9, 1 + 1e-9).all()
    plain = similarity[similarity.p_k == 1.0]
    assert (plain.mask_overlap == 1.0).all()  # p_k = 1: every neuron active for every input
    # the inputs spread over similarities, as in Fig. 2 (a mean μ near 0 gives a low cosine)
    assert similarity.input_cosine.min() < 0.5 and similarity.input_cosine.max() > 0.95


def test_mask_overlap_and_activation_similarity_rise_with_input_similarity(similarity):
    summary = summarise_similarity(similarity).set_index("p_k")
    assert list(summary.index) == [0.25, 0.5, 1.0]
    assert (summary.n_pairs == preset_similarity("tiny").n_pairs).all()
    sparse = summary.loc[[0.25, 0.5]]
    assert (sparse.spearman_mask > 0.5).all() and (sparse.spearman_mask_p < 1e-3).all()
    assert (summary.spearman_activation > 0.5).all()
    assert np.isnan(summary.loc[1.0, "spearman_mask"])  # constant overlap: undefined


def test_identical_and_scaled_pairs_have_overlap_one():
    cfg = preset_similarity("tiny")
    layer = COMET(COMETConfig(d_in=cfg.dim, widths=(cfg.width,) * cfg.n_hidden, p_k=0.25,
                              bias=False))
    x_a = torch.from_numpy(make_pairs(cfg)[0]).float()
    same = pair_similarities(layer, x_a, x_a.clone())
    np.testing.assert_array_equal(same["mask_overlap"], 1.0)
    np.testing.assert_allclose(same["activation_cosine"], 1.0, rtol=1e-6)
    scaled = pair_similarities(layer, x_a, 2.5 * x_a)  # cosine 1; both networks homogeneous
    np.testing.assert_array_equal(scaled["mask_overlap"], 1.0)
    np.testing.assert_allclose(scaled["activation_cosine"], 1.0, rtol=1e-5)


@pytest.mark.cuda
def test_pair_similarities_of_a_cuda_layer_are_the_cpu_ones():
    """A COMET layer on the GPU (float64, as COMET's own CUDA test): the same overlaps and
    cosines as on the CPU, the arrays brought back to the CPU."""
    cfg = preset_similarity("tiny")
    layer = COMET(COMETConfig(d_in=cfg.dim, widths=(cfg.width,) * cfg.n_hidden, p_k=0.25,
                              bias=False, seed=3)).double()
    x_a, x_b, _ = make_pairs(cfg)
    x_a, x_b = torch.from_numpy(x_a).double(), torch.from_numpy(x_b).double()
    cpu = pair_similarities(layer, x_a, x_b)
    gpu = pair_similarities(layer.cuda(), x_a.cuda(), x_b.cuda())
    np.testing.assert_array_equal(gpu["mask_overlap"], cpu["mask_overlap"])
    np.testing.assert_allclose(gpu["activation_cosine"], cpu["activation_cosine"],
                               rtol=1e-9, atol=1e-12)


def test_pairs_follow_the_paper():
    cfg = SimilarityConfig()  # the paper's 500 pairs of length 100
    x_a, x_b, mu = make_pairs(cfg)
    assert x_a.shape == x_b.shape == (500, 100) and mu.shape == (500, 2)
    assert mu.min() >= 0 and mu.max() <= 100 and np.issubdtype(mu.dtype, np.integer)
    assert len(np.unique(mu)) > 80  # each input has its own integer mean
    noise = np.concatenate([x_a - mu[:, :1], x_b - mu[:, 1:]])
    assert abs(noise.std() - 5.0) < 0.05  # N(μ, 25): variance 25


def test_similarity_is_deterministic(similarity):
    cfg = preset_similarity("tiny")
    pd.testing.assert_frame_equal(run_similarity(cfg, progress=False), similarity)
    other = run_similarity(dataclasses.replace(cfg, seed=1, n_pairs=10, n_networks=1),
                           progress=False)
    assert not np.allclose(other.input_cosine[:10], similarity.input_cosine[:10])


def test_similarity_plots_and_files(similarity, tmp_path):
    paths = plot_similarity(similarity, tmp_path / "plots")
    assert [p.suffix for p in paths] == [".png", ".svg"]
    assert paths[0].read_bytes()[:4] == b"\x89PNG" and b"<svg" in paths[1].read_bytes()[:500]
    small = dataclasses.replace(preset_similarity("tiny"), n_pairs=8, n_networks=1,
                                p_ks=(0.5,))
    written = write_similarity(tmp_path / "run", small, progress=False)
    assert all(p.exists() and p.stat().st_size > 0 for p in written)
    assert len(pd.read_csv(tmp_path / "run" / "similarity.csv")) == 8


@pytest.mark.parametrize("field, value", [
    ("n_pairs", 0), ("dim", 0), ("mu_max", -1), ("noise_std", 0.0), ("n_networks", 0),
    ("n_hidden", 0), ("width", 0), ("p_ks", ()), ("p_ks", (0.5, 1.5)), ("p_ks", [0.5]),
    ("activation", "gelu"), ("seed", -1),
])
def test_similarity_config_errors_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        SimilarityConfig(**{field: value})


# -- utilisation -----------------------------------------------------------------------------
def test_utilisation_table_shape_and_ranges(utilisation):
    cfg = preset_utilisation("tiny")
    assert {"input", "network", "network_seed", "p_k", "layer", "width", "k", "n_inputs",
            "n_dead", "dead_fraction"} <= set(utilisation.columns)
    assert len(utilisation) == (len(cfg.inputs) * cfg.n_networks * len(cfg.p_ks)
                                * cfg.n_hidden * len(cfg.n_inputs))
    assert set(utilisation.input) == {"cube", "subspace"}
    assert utilisation.dead_fraction.between(0, 1).all()
    assert utilisation.width.between(*cfg.width_range).all()
    # at least the k winners of the first input are alive
    assert (utilisation.n_dead <= utilisation.width - utilisation.k).all()


def test_dead_fraction_never_rises_with_more_inputs(utilisation):
    keys = ["input", "network", "p_k", "layer"]
    for _, g in utilisation.sort_values("n_inputs").groupby(keys):
        assert (np.diff(g.n_dead.to_numpy()) <= 0).all()


def test_first_layer_dead_fraction_never_rises_with_p_k(utilisation):
    # same V at every p_k: layer-1 winners at a smaller k are a subset of those at a larger k
    first = utilisation[utilisation.layer == 1].sort_values("p_k")
    for _, g in first.groupby(["input", "network", "n_inputs"]):
        assert (np.diff(g.n_dead.to_numpy()) <= 0).all()
        assert (np.diff(g.k.to_numpy()) >= 0).all()


def test_no_dead_neurons_without_sparsity():
    cfg = dataclasses.replace(preset_utilisation("tiny"), p_ks=(1.0,), n_networks=2)
    assert (run_utilisation(cfg, progress=False).n_dead == 0).all()


def test_utilisation_summary(utilisation):
    cfg = preset_utilisation("tiny")
    summary = summarise_utilisation(utilisation)
    assert len(summary) == len(cfg.inputs) * len(cfg.p_ks) * len(cfg.n_inputs)
    assert {"dead_fraction", "networks_with_dead", "max_network_dead",
            "dead_fraction_layer1", "dead_fraction_layer2", "n_networks"} <= set(summary.columns)
    for column in ("dead_fraction", "networks_with_dead", "max_network_dead"):
        assert summary[column].between(0, 1).all()
    row = summary[(summary.input == "cube") & (summary.p_k == 0.05)
                  & (summary.n_inputs == 1000)].iloc[0]
    rows = utilisation[(utilisation.input == "cube") & (utilisation.p_k == 0.05)
                       & (utilisation.n_inputs == 1000)]
    assert row.dead_fraction == pytest.approx(rows.n_dead.sum() / rows.width.sum())
    assert row.n_networks == cfg.n_networks


def test_paper_mode_draws_p_k_per_network():
    cfg = UtilisationConfig(n_networks=14, n_hidden=1, width_range=(20, 40), p_ks=None,
                            n_inputs=(50,), inputs=("cube",))
    df = run_utilisation(cfg, progress=False)
    per_network = df.groupby("network").p_k.nunique()
    assert (per_network == 1).all() and df.p_k.nunique() == 14
    assert df.p_k.between(0, 0.95).all() and (df.p_k > 0).all()
    summary = summarise_utilisation(df)  # 14 distinct values: grouped in bins
    assert summary.n_networks.sum() == 14 and summary.p_k.str.startswith("(").all()


def test_utilisation_is_deterministic(utilisation):
    pd.testing.assert_frame_equal(run_utilisation(preset_utilisation("tiny"), progress=False),
                                  utilisation)


def test_utilisation_plots(utilisation, tmp_path):
    paths = plot_utilisation(utilisation, tmp_path)
    assert [p.name for p in paths] == ["comet_utilisation.png", "comet_utilisation.svg"]
    assert all(p.stat().st_size > 0 for p in paths)
    small = dataclasses.replace(preset_utilisation("tiny"), inputs=("cube",), n_networks=1,
                                n_inputs=(50,))
    written = write_utilisation(tmp_path / "run", small, progress=False)
    assert all(p.exists() and p.stat().st_size > 0 for p in written)
    assert '"n_inputs": [\n    50\n  ]' in (tmp_path / "run" / "utilisation_config.json").read_text()


@pytest.mark.parametrize("field, value", [
    ("inputs", ("sphere",)), ("inputs", ()), ("dim", 0), ("subspace_k", 9), ("n_networks", 0),
    ("n_hidden", 0), ("width_range", (0, 10)), ("width_range", (50, 10)),
    ("p_ks", (0.0,)), ("n_inputs", (100, 10)), ("n_inputs", ()), ("batch_size", 0),
    ("seed", -1),
])
def test_utilisation_config_errors_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        UtilisationConfig(**{field: value})


def test_unknown_preset():
    with pytest.raises(ValueError, match="preset"):
        preset_similarity("huge")
    with pytest.raises(ValueError, match="preset"):
        preset_utilisation("huge")


# -- §5.1.2's claim: "fewer than 2% of the models had any such neurons" -----------------------
def _models(counts, n_inputs=1000):
    """Rows of run_utilisation's shape: per input name, (models, models with a dead neuron),
    one network per model at p_k 0.5 (a model with a dead neuron at p_k 0.05), one layer."""
    rows = []
    for name, (n, k) in counts.items():
        for net in range(n):
            rows.append({"input": name, "network": net, "network_seed": net,
                         "p_k": 0.05 if net < k else 0.5, "layer": 1, "width": 100, "k": 5,
                         "n_inputs": n_inputs, "n_dead": 3 if net < k else 0,
                         "dead_fraction": 0.03 if net < k else 0.0})
    return pd.DataFrame(rows)


def _claims(counts):
    from experiments.papers.comet_studies import _utilisation_claims

    return _utilisation_claims(_models(counts), UtilisationConfig(inputs=tuple(counts)))


@pytest.mark.parametrize("n, k, verdict", [
    (400, 0, "supported"),       # upper bound 0.0075 < 2 %
    (400, 3, "supported"),       # 0.75 %: upper bound 0.019 < 2 %
    (400, 8, "inconclusive"),    # 2 %: neither side shown
    (400, 20, "not supported"),  # 5 %: lower bound above 2 %
    (100, 0, "underpowered"),    # even none of 100 cannot show < 2 % (needs ≥ 149)
])
def test_dead_neuron_claim_moves_across_two_percent(n, k, verdict):
    from inference import clopper_pearson

    claim = _claims({"cube": (n, k)})[0]
    assert claim.verdict == verdict, claim.significance
    assert claim.effect == k / n and claim.sesoi == 0.02
    low, high = clopper_pearson(k, n, 0.95)
    assert (claim.effect_low, claim.effect_high) == (low, high)
    assert claim.record == "comet_dead_neuron_models" and claim.kind == "derived"
    assert "CIFAR-10" in claim.sizes


def test_dead_neuron_claims_are_holm_adjusted_over_inputs():
    from scipy.stats import binomtest

    # 160 models with none dead: p = 0.98^160 = 0.039 alone, 0.079 after Holm over two inputs
    one = _claims({"cube": (160, 0)})[0]
    two = _claims({"cube": (160, 0), "subspace": (160, 0)})
    p = binomtest(0, 160, 0.02, alternative="less").pvalue
    assert one.p_value == pytest.approx(p) and one.verdict == "supported"
    assert all(c.p_adjusted == pytest.approx(2 * p) for c in two)
    assert {c.verdict for c in two} == {"underpowered"}
    assert "needs ≥ 183 models" in two[0].significance


def test_dead_neuron_diagnosis_is_read_from_the_rows():
    claim = _claims({"cube": (30, 10)})[0]
    assert "only at p_k ≤ 0.05" in claim.diagnosis and "7.6e-4 %" in claim.diagnosis
    assert "p_k 0.05: 10/10, p_k 0.5: 0/20" in claim.evidence
    from experiments.papers.comet_studies import _utilisation_claims

    with pytest.raises(ValueError, match="df"):
        _utilisation_claims(pd.DataFrame(), UtilisationConfig())


# -- silent activations and unchecked configs ------------------------------------------------
def test_pair_similarities_cosine_of_silent_activations_is_defined():
    from experiments.papers.comet_studies import _cosine
    a = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    b = np.array([[0.0, 0.0], [1.0, 2.0], [2.0, 0.0]])
    np.testing.assert_array_equal(_cosine(a, b), [1.0, 0.0, 1.0])  # both silent, one, same
    layer = COMET(COMETConfig(d_in=3, widths=(8, 8), d_out=2, p_k=0.25, seed=0))
    x = torch.full((4, 3), -50.0)  # far below every bias: few or no units active
    sims = pair_similarities(layer, x, torch.randn(4, 3, generator=torch.Generator().manual_seed(0)))
    assert np.isfinite(sims["activation_cosine"]).all()
    with pytest.raises(ValueError, match="x_b must have shape"):
        pair_similarities(layer, x, x[:3])


def test_more_config_flags_and_seeds_are_checked():
    """String flags read by truthiness and seeds never checked on one path."""
    from experiments.kinds.continual_harness import class_split
    from experiments.kinds.fitting import AdamConfig
    with pytest.raises(ValueError, match="bias must be True or False, got 'False'"):
        SimilarityConfig(bias="False")  # was accepted: COMET with biases, read as True
    with pytest.raises(ValueError, match="cache_features must be True or False"):
        AdamConfig(cache_features="False")
    assert class_split(2, 2, "naive", 0) == [(0, 1), (2, 3)]
    with pytest.raises(ValueError, match="seed must be an integer"):
        class_split(2, 2, "naive", 2.5)  # was ignored: only the "random" order read it
