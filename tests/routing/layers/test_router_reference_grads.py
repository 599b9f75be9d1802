"""Outputs and gradients of COMET, SMEAR and SDMLP against slow loop references.

Each reference loops over examples and units with torch scalar and vector operations (so
autograd differentiates it) in float64, from the papers' equations rather than from the
layers' code; the layers run their fast paths (the Numba winners-only kernels for COMET and
SDMLP on the CPU, the merged-route matmuls for SMEAR). The loss is L = Σ_bo R_bo y_bo with a
fixed random R, so every output carries its own weight, and the gradients of L with respect
to every trainable parameter and to x are compared.

float32 tolerance: the layer runs in float32 and the reference in float64 on the same
(float32-valued) parameters and inputs. Forward and backward are chains of at most about four
sums (normalisation, hidden units, outputs, and back) of at most max(d_in + 1, width) = 13
terms of size O(1) (inputs in [-1, 1], U(±1/√fan_in) weights), each adding at most
13·2⁻²⁴ ≈ 8e-7 relative error: about 3e-6 in all. rtol = atol = 5e-6 (the errors observed
are below 1e-7), still 10³ times tighter than any of the mutations tried (a missing ReLU,
inhibition or softmax weight changes values by O(0.01-1)).
"""

import math

import pytest
import torch

from routing.layers.comet import COMET, COMETConfig
from routing.layers.sdmlp import SDMLP, SDMLPConfig
from routing.layers.smear import SMEAR, SMEARConfig

TOL = {torch.float64: dict(rtol=1e-11, atol=1e-12), torch.float32: dict(rtol=5e-6, atol=5e-6)}


def _x(n, d, seed, dtype):
    gen = torch.Generator().manual_seed(seed)
    return (2 * torch.rand(n, d, generator=gen, dtype=torch.float64) - 1).to(dtype)


def _winners(scores: list[float], k: int) -> list[int]:
    """The k largest scores, equal scores won by the lowest index (COMET Eq. 3's C_k with the
    tie rule of ``routing.torch_twins.topk_mask``), by sorting (index, score) pairs."""
    return sorted(range(len(scores)), key=lambda j: (-scores[j], j))[:k]


def _gap_at(scores: list[float], k: int) -> float:
    """Distance between the k-th and (k+1)-th largest scores (inf when k = len)."""
    s = sorted(scores, reverse=True)
    return s[k - 1] - s[k] if k < len(s) else math.inf


def _compare(layer, reference, x, dtype, seed=0):
    """y and dL/dθ, dL/dx of ``layer`` (in ``dtype``) against ``reference(params64, x64)``
    (float64 copies of the same values), L = Σ R ∘ y."""
    layer = layer.to(dtype)
    layer.eval()
    x = x.to(dtype).requires_grad_(True)
    y, _ = layer(x)
    R = _x(*y.shape, seed=seed + 100, dtype=torch.float64)
    names = [n for n, p in layer.named_parameters() if p.requires_grad]
    params = [p for p in layer.parameters() if p.requires_grad]
    grads = torch.autograd.grad((y.double() * R).sum(), params + [x])

    p64 = {n: p.detach().double().requires_grad_(True) for n, p in zip(names, params)}
    x64 = x.detach().double().requires_grad_(True)
    y_ref = reference(p64, x64)
    ref_grads = torch.autograd.grad((y_ref * R).sum(), list(p64.values()) + [x64])

    assert y.dtype == dtype
    torch.testing.assert_close(y.double(), y_ref, **TOL[dtype])
    for name, g, g_ref in zip(names + ["x"], grads, ref_grads):
        assert g is not None, name
        torch.testing.assert_close(g.double(), g_ref, **TOL[dtype], msg=lambda m: f"{name}: {m}")
    return y_ref


# -- COMET, one hidden ReLU layer (COMET §4, Eqs. 3-8 with L = 2) ---------------------------
def comet_reference(layer: COMET):
    """y_b = U (m_b ∘ ReLU(W x_b + b)) + c, m_b the k winners of V x_b, by loops over examples
    and units. V (frozen, no gradient) is the layer's routing buffer."""
    k = layer.ks[0]
    V = layer.V1.detach().double()
    bias = layer.config.bias

    def reference(p, x):
        W, U = p["backbone.0.weight"], p["backbone.1.weight"]
        N, d_out = W.shape[0], U.shape[0]
        rows = []
        for b in range(x.shape[0]):
            xb = x[b].detach()
            scores = [float(sum(V[j, i] * xb[i] for i in range(x.shape[1]))) for j in range(N)]
            assert _gap_at(scores, k) > 1e-4  # no near-tie: the winners are unambiguous
            win = _winners(scores, k)
            hidden = []
            for j in win:
                a = torch.dot(W[j], x[b]) + (p["backbone.0.bias"][j] if bias else 0.0)
                hidden.append((j, torch.where(a > 0, a, torch.zeros_like(a))))
            out = []
            for o in range(d_out):
                acc = sum(U[o, j] * h for j, h in hidden)
                out.append(acc + p["backbone.1.bias"][o] if bias else acc)
            rows.append(torch.stack(out))
        return torch.stack(rows)

    return reference


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("width, p_k, d_out, bias", [
    (9, 1 / 9, 1, True),        # k = 1
    (9, 8 / 9, 3, True),        # k = width - 1
    (12, 0.5, 3, False),        # Eq. 7 to the letter: no bias
    (5, 0.4, 1, True),
])
def test_comet_matches_loop_reference_with_gradients(dtype, width, p_k, d_out, bias):
    layer = COMET(COMETConfig(d_in=5, widths=(width,), d_out=d_out, p_k=p_k, bias=bias, seed=3))
    assert layer._gather_path(torch.zeros(1, 5, dtype=dtype))  # the Numba kernel is tested
    x = _x(7, 5, seed=1, dtype=dtype)
    _compare(layer, comet_reference(layer.double()), x, dtype)


# -- SMEAR (Muqeeth et al. 2024 §3) --------------------------------------------------------
def smear_reference(layer: SMEAR):
    """Per example: p = softmax(W_rᵀ x) by hand (exp and a sum), every expert parameter
    merged as Σ_e p_e θ_e by loops, the merged expert W̄2ᵀ σ(W̄1ᵀ x + b̄1) + b̄2 applied with
    σ written out (SiLU: h / (1 + e^{-h}); ReLU)."""
    c = layer.config
    E = c.n_experts
    act = {"silu": lambda h: h / (1 + torch.exp(-h)),
           "relu": lambda h: torch.where(h > 0, h, torch.zeros_like(h))}[c.activation]

    def reference(p, x):
        rows = []
        for b in range(x.shape[0]):
            logits = [torch.dot(x[b], p["router"][:, e]) for e in range(E)]
            top = max(float(t.detach()) for t in logits)
            ex = [torch.exp(t - top) for t in logits]
            total = sum(ex)
            prob = [t / total for t in ex]
            w1 = sum(prob[e] * p["w1"][e] for e in range(E))  # (d_in, G)
            w2 = sum(prob[e] * p["w2"][e] for e in range(E))  # (G, d_out)
            h = torch.stack([torch.dot(x[b], w1[:, g]) for g in range(c.expert_size)])
            if c.bias:
                h = h + sum(prob[e] * p["b1"][e] for e in range(E))
            h = act(h)
            y = torch.stack([torch.dot(h, w2[:, o]) for o in range(c.d_out)])
            if c.bias:
                y = y + sum(prob[e] * p["b2"][e] for e in range(E))
            rows.append(y)
        return torch.stack(rows)

    return reference


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("kw", [
    dict(n_experts=4, expert_size=6, d_out=1),                      # merged weights route
    dict(n_experts=3, expert_size=2, d_out=3, bias=False),          # scaled inputs route
    dict(n_experts=1, expert_size=5, d_out=3, activation="relu"),
])
def test_smear_matches_loop_reference_with_gradients(dtype, kw):
    layer = SMEAR(SMEARConfig(d_in=5, seed=4, **kw))
    _compare(layer, smear_reference(layer), _x(6, 5, seed=2, dtype=dtype), dtype)


# -- SDMLP (Bricken et al. 2023 §4, Eq. 4; App. A.5) ---------------------------------------
def sdmlp_reference(layer: SDMLP):
    """Per example: x̂ = (x, 1)/‖(x, 1)‖ (``lift_inputs``; x/‖x‖ without), a_j = X_a[j]·x̂,
    I = max(a_(k+1), 0) treated as a constant (the authors' code detaches it), the k largest
    a_j kept (ties to the lowest index), a*_j = max(a_j − I, 0), y = X_v a* with no bias
    (A.5). k = n_neurons: no (k+1)-th, a* = max(a, 0)."""
    c, k = layer.config, layer.current_k

    def reference(p, x):
        enc, dec = p["encoder"], p["decoder"]
        rows = []
        for b in range(x.shape[0]):
            parts = [x[b, i] for i in range(c.d_in)]
            if c.lift_inputs:
                parts.append(torch.ones((), dtype=x.dtype))
            norm = torch.sqrt(sum(t * t for t in parts))
            xh = torch.stack([t / norm for t in parts])
            a = [torch.dot(enc[j], xh) for j in range(c.n_neurons)]
            scores = [float(t.detach()) for t in a]
            assert _gap_at(scores, k) > 1e-4  # no near-tie at the k-th
            inhibition = max(sorted(scores, reverse=True)[k], 0.0) if k < c.n_neurons else 0.0
            hidden = [(j, torch.clamp(a[j] - inhibition, min=0)) for j in _winners(scores, k)]
            rows.append(torch.stack([sum(dec[o, j] * h for j, h in hidden)
                                     for o in range(c.d_out)]))
        return torch.stack(rows)

    return reference


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("n, k, d_out, lift", [
    (10, 1, 1, True),           # k = 1
    (10, 9, 3, True),           # k = width - 1
    (12, 4, 3, False),          # x/‖x‖ as in the paper
    (6, 6, 1, True),            # k = n_neurons: no inhibition, the masked matmuls
])
def test_sdmlp_matches_loop_reference_with_gradients(dtype, n, k, d_out, lift):
    layer = SDMLP(SDMLPConfig(d_in=4, d_out=d_out, n_neurons=n, k_target=k, anneal_epochs=0,
                              lift_inputs=lift, seed=5)).to(dtype)
    x = _x(6, 4, seed=3, dtype=dtype)
    assert layer._gather_path(x) == (k < n)  # the Numba kernel whenever k < n
    _compare(layer, sdmlp_reference(layer), x, dtype)


def test_sdmlp_reference_inhibition_is_active():
    """The cases above exercise the subtraction: for k < n some winner's a_j − I differs from
    a_j, i.e. I = max(a_(k+1), 0) > 0 in some example (else dropping it would go unseen)."""
    layer = SDMLP(SDMLPConfig(d_in=4, n_neurons=10, k_target=1, anneal_epochs=0, seed=5))
    x = _x(6, 4, seed=3, dtype=torch.float64)
    a = layer.double().normalise_inputs(x) @ layer.encoder.T
    nxt = torch.sort(a, dim=1, descending=True).values[:, 1]
    assert bool((nxt > 0).any())


# -- SDMLP's GABA switch (Bricken et al. 2023, App. B.3, Eq. 12) ----------------------------
def gaba_reference(layer: SDMLP, counts: list[float]):
    """Eq. 12 by loops: λ_i = clip(−1 + 2 C_i / s, −1, 1), a*_i = max(a_i − λ_i I, 0) with
    I = max(a_(k+1), 0) at k = k_target (a constant), every neuron with a*_i > 0 taking part
    and y = X_v a*. Returns the reference (giving y) and, per neuron, the examples in which
    it took part (filled in by each call)."""
    c, k = layer.config, layer.config.k_target
    lam = [min(1.0, max(-1.0, -1.0 + 2.0 * C / c.gaba_switch_activations)) for C in counts]
    active = [0] * c.n_neurons

    def reference(p, x):
        enc, dec = p["encoder"], p["decoder"]
        rows = []
        for b in range(x.shape[0]):
            parts = [x[b, i] for i in range(c.d_in)] + [torch.ones((), dtype=x.dtype)]
            norm = torch.sqrt(sum(t * t for t in parts))
            xh = torch.stack([t / norm for t in parts])
            a = [torch.dot(enc[j], xh) for j in range(c.n_neurons)]
            inhibition = max(sorted((float(t.detach()) for t in a), reverse=True)[k], 0.0)
            hidden = []
            for j in range(c.n_neurons):
                h = a[j] - lam[j] * inhibition
                if float(h.detach()) > 0:
                    active[j] += 1
                    hidden.append((j, h))
            rows.append(torch.stack([sum((dec[o, j] * h for j, h in hidden),
                                         torch.zeros((), dtype=x.dtype))
                                     for o in range(c.d_out)]))
        return torch.stack(rows)

    return reference, active


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_gaba_switch_matches_eq12_for_intermediate_lambda(dtype):
    s = 20
    layer = SDMLP(SDMLPConfig(d_in=4, d_out=2, n_neurons=16, k_target=3, gaba_switch=True,
                              gaba_switch_activations=s, seed=6))
    gen = torch.Generator().manual_seed(0)
    counts = torch.randint(1, s, (16,), generator=gen).double()  # -1 < λ < 1
    counts[:4] = torch.tensor([0.0, s / 2, s, 3 * s])  # λ = −1, 0, 1 and 1 (clipped)
    lam = (2 * counts / s - 1).clamp(-1, 1)
    assert int(((lam > -1) & (lam < 1)).sum()) == 13
    with torch.no_grad():
        layer.gaba_counts.copy_(counts)
    reference, active = gaba_reference(layer, counts.tolist())
    x = _x(9, 4, seed=4, dtype=dtype)
    y_ref = _compare(layer, reference, x, dtype)  # eval mode: the counts stay as they are
    # who takes part: a*_i > 0 (Eq. 12), counted in the usage buffers; some neurons have
    # a*_i = 0 in some examples, so counting a*_i >= 0 would be seen
    assert layer.unit_usage.tolist() == [float(n) for n in active]
    assert 0 < sum(active) < 16 * 9
    assert torch.equal(layer.gaba_counts, counts)
    layer.train()
    layer.reset_usage()
    layer(x.to(dtype))  # training mode: C_i grows by the examples in which neuron i fired
    assert layer.gaba_counts.tolist() == (counts + torch.tensor(active).double()).tolist()
    assert y_ref.abs().max() > 0


# -- SDMLP.after_step: the torch projection against the kernel (Algorithm 1, last lines) ----
def _unprojected(layer: SDMLP) -> None:
    """Weights of both signs, rows of any norm, and one all-negative encoder row (which the
    projection must leave all zero: the dead neuron of B.3)."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        layer.encoder.copy_(3 * torch.randn(layer.encoder.shape, generator=gen))
        layer.encoder[2] = -layer.encoder[2].abs() - 0.1
        layer.decoder.copy_(torch.randn(layer.decoder.shape, generator=gen))


def _projection_reference(encoder, decoder, nonneg_decoder):
    """Row by row: clamp at 0, divide by the row's L2 norm (an all-zero row stays zero)."""
    enc = encoder.detach().double().clone()
    for j in range(enc.shape[0]):
        row = [max(float(v), 0.0) for v in enc[j]]
        norm = math.sqrt(sum(v * v for v in row))
        enc[j] = torch.tensor([v / norm if norm > 0 else 0.0 for v in row], dtype=enc.dtype)
    dec = decoder.detach().double().clamp(min=0) if nonneg_decoder else decoder.detach().double()
    return enc, dec


def _non_contiguous(p: torch.Tensor) -> torch.nn.Parameter:
    """The same values in a transposed (column-major) layout."""
    q = torch.nn.Parameter(p.detach().t().contiguous().t())
    assert not q.is_contiguous() and torch.equal(q, p)
    return q


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("nonneg_decoder", [False, True])
@pytest.mark.parametrize("force", ["non_contiguous", "no_increment_version"])
def test_after_step_torch_fallback_equals_kernel_and_projects(dtype, nonneg_decoder, force,
                                                              monkeypatch):
    import routing.layers.sdmlp as sdmlp_module

    cfg = SDMLPConfig(d_in=5, d_out=3, n_neurons=9, k_target=2, nonneg_decoder=nonneg_decoder)
    kernel = SDMLP(cfg).to(dtype)
    _unprojected(kernel)
    dead = (kernel.encoder <= 0).all(dim=1)  # rows the clamp zeroes: row 2 and any other
    assert bool(dead[2]) and int(dead.sum()) < 9
    fallback = SDMLP(cfg).to(dtype)
    fallback.load_state_dict(kernel.state_dict())
    expected = _projection_reference(kernel.encoder, kernel.decoder, nonneg_decoder)

    calls = []
    real = sdmlp_module.project_nonnegative_unit_rows
    monkeypatch.setattr(sdmlp_module, "project_nonnegative_unit_rows",
                        lambda *a: calls.append(1) or real(*a))
    kernel.after_step()
    assert calls == [1]  # the kernel path ran
    if force == "non_contiguous":
        fallback.encoder = _non_contiguous(fallback.encoder)
        fallback.decoder = _non_contiguous(fallback.decoder)
    else:  # torch without autograd.graph.increment_version cannot run the in-place kernel
        monkeypatch.delattr(torch.autograd.graph, "increment_version")
    fallback.after_step()
    assert calls == [1]  # the torch path ran

    tol = TOL[dtype]
    for layer in (kernel, fallback):
        enc, dec = layer.encoder.detach().double(), layer.decoder.detach().double()
        assert bool((enc >= 0).all())
        norms = enc.norm(dim=1)
        assert bool((norms[dead] == 0).all())
        torch.testing.assert_close(norms[~dead], torch.ones_like(norms[~dead]), **tol)
        torch.testing.assert_close(enc, expected[0], **tol)
        torch.testing.assert_close(dec, expected[1], rtol=0, atol=0)
    torch.testing.assert_close(fallback.encoder, kernel.encoder, **tol)
    assert torch.equal(fallback.decoder, kernel.decoder)
