"""Eq. (1): the forward pass of the sparse (LSH) model costs O(dk log(1/ε)), a dense model
Ω(d (2√d/(Cε))^k).

Three parts, all deterministic:

1. **Symbolic (sympy).** With the Theorem 4.1 construction — m = C_h·k hashes and at most
   N = (2√d/ε)^{γk} non-empty buckets (Lemma 4.2(2)) — the LSH forward pass costs
   S = m(2d + 4) + ⌈log2 N⌉ operations (``proofs_checks.op_counts``); a dense random-features
   model of width w = (2√d/(Cε))^k costs D = w(2d + 3) − 1. sympy shows
   lim_{ε→0} S / (d k ln(1/ε)) < ∞ (S = O(dk log(1/ε))), lim D / (d (2√d/(Cε))^k) = 2
   = (2d + 3)/d (D = Θ(d (2√d/(Cε))^k)) and lim S / D = 0 (for k = 1, 2, 3).
2. **Counted on the models of ``experiments``.** ``Dense``, ``DSM`` and ``LSHModel`` (with a
   ``EuclideanLSH`` hasher, the Theorem 4.1 learner) document their ``flops_true()`` and
   ``flops_paper()``; these are compared with sympy expressions of the same conventions, and
   the matrix-multiply FLOPs of an actual forward pass are counted with
   ``torch.utils.flop_counter.FlopCounterMode`` and compared with the expressions' matmul
   part (2dw for the dense layer, 2d·H·s for s tables of H hashes).
3. **The gap.** For a grid of ε, the dense/sparse cost ratio (``flops_true``) must grow as ε
   shrinks; its fitted exponent in 1/ε is reported next to k, the theory's.

Source: Baykal et al. 2022, Eq. (1), Theorem 4.1 (forward pass), Theorem 4.3, §3.2.
"""

from __future__ import annotations

import functools
import math
import pathlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy as sp
import torch
from torch.utils.flop_counter import FlopCounterMode

from lipschitz.validation import check_int, check_real
from proofs_checks._framework import Check, CheckParams, CheckResult, Verdict, register
from proofs_checks._plots import plt, save_figure
from proofs_checks.op_counts import DENSE_OPS, LSH_OPS, SYMBOLS

__all__ = ["FlopsParams", "Eq1FlopsCheck", "symbolic_claims", "MODEL_FLOPS"]

_d, _k, _eps, _C, _gamma = (SYMBOLS[s] for s in ("d", "k", "eps", "C", "gamma"))
_w, _m, _N = SYMBOLS["w"], SYMBOLS["m"], SYMBOLS["N"]
_s, _H, _a = sp.symbols("s H a", positive=True)  # tables, hashes per table, activated units

#: The conventions the models of ``experiments`` document for ``flops_true`` (and the
#: matrix-multiply part of each, what FlopCounterMode sees), as sympy expressions.
MODEL_FLOPS = {
    "Dense": {"flops_true": 2 * (_d + 1) * _w, "flops_paper": 2 * (_d + 1) * _w,
              "matmul": 2 * _d * _w},
    "DSM": {"flops_true": 2 * _d * _w + _w + 2 * _a, "flops_paper": 2 * (_d + 1) * _a,
            "matmul": 2 * _d * _w},
    "LSHModel": {"flops_true": _s * 2 * _d * _H + _s, "flops_paper": 2 * (_d + 1) * _s,
                 "matmul": 2 * _d * _H * _s},
}


def symbolic_claims(C_h: int = 4) -> dict:
    """The sympy part: S and D of the module docstring and their limits as ε → 0.

    Arguments:
        C_h: hashes per subspace dimension (m = C_h·k).

    Returns:
        dict of sympy expressions (as strings) and booleans: ``S``, ``D``,
        ``S_over_dk_log`` (the limit, finite: γ/(d ln 2)), ``D_over_dense_bound`` (the limit,
        (2d + 3)/d: finite and positive, so D = Θ(d(2√d/(Cε))^k)) and ``S_over_D_k123``
        (the limits for k = 1, 2, 3, all 0), each with ``*_ok``. Cached: the limits take seconds.
    """
    return dict(_symbolic_claims(check_int(C_h, "C_h", 1)))


@functools.lru_cache(maxsize=8)
def _symbolic_claims(C_h: int) -> tuple:
    base = 2 * sp.sqrt(_d) / _eps
    # ⌈log2 N⌉ ≤ log2 N + 1 with N = base^(γk): the upper bound used for the asymptotics
    S = LSH_OPS.subs(sp.ceiling(sp.log(_N, 2)), sp.log(_N, 2) + 1).subs(
        {_m: C_h * _k, _N: base ** (_gamma * _k)})
    S = sp.expand_log(sp.simplify(S), force=True)
    D = DENSE_OPS.subs(_w, (base / _C) ** _k)
    lim_S = sp.limit(S / (_d * _k * sp.log(1 / _eps)), _eps, 0, "+")
    lim_D = sp.limit(D / (_d * (base / _C) ** _k), _eps, 0, "+")
    # S / D → 0: check it for the paper's sizes k = 1, 2, 3 (sympy cannot take the limit with
    # a symbolic exponent k)
    lim_ratio = [sp.limit((S / D).subs(_k, kk), _eps, 0, "+") for kk in (1, 2, 3)]
    return tuple({
        "S": str(S), "D": str(D),
        "S_over_dk_log": str(lim_S), "S_over_dk_log_ok": bool(lim_S.is_finite),
        "D_over_dense_bound": str(sp.simplify(lim_D)),
        "D_over_dense_bound_ok": bool(sp.simplify(lim_D - (2 * _d + 3) / _d) == 0),
        "S_over_D_k123": [str(v) for v in lim_ratio],
        "S_over_D_ok": all(sp.simplify(v) == 0 for v in lim_ratio),
    }.items())


def _counted_matmul_flops(model, X: torch.Tensor) -> float:
    """Matrix-multiply FLOPs per example of one forward pass (FlopCounterMode)."""
    with FlopCounterMode(display=False) as counter:
        model(X)
    return counter.get_total_flops() / X.shape[0]


@dataclass(frozen=True)
class FlopsParams(CheckParams):
    """Parameters of the Eq. (1) check (defaults: the quick preset).

    Attributes:
        dim: d. k: subspace dimension. lipschitz: L (the hash width is width_constant·ε/L).
        C_h: hashes per subspace dimension of the LSH model.
        width_constant: as in the Theorem 4.1 check.
        gamma: the exponent of Lemma 4.2(2) used for the table size (N = (2√d/ε)^{γk}).
        C_dense: the constant C of the dense width w = ⌈(2√d/(Cε))^k⌉.
        dsm_fraction: activated fraction of the DSM counted alongside (k_a = ⌈fraction·w⌉).
        epsilons: the grid of ε (decreasing).
        n_inputs: batch size of the counted forward passes.
    """

    dim: int = 8
    k: int = 2
    lipschitz: float = 1.0
    C_h: int = 4
    width_constant: float = 0.75
    gamma: float = 1.5
    C_dense: float = 4.0
    dsm_fraction: float = 0.25
    epsilons: tuple[float, ...] = (0.5, 0.25, 0.125, 0.0625)
    n_inputs: int = 16

    @classmethod
    def full(cls):
        return cls(epsilons=(0.5, 0.25, 0.125, 0.0625, 0.03125))

    def validate(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        check_int(self.dim, "dim", 1)
        check_int(self.k, "k", 1, self.dim)
        check_real(self.lipschitz, "lipschitz", 0.0, None, low_open=True)
        check_int(self.C_h, "C_h", 1)
        check_real(self.width_constant, "width_constant", 0.0, None, low_open=True)
        check_real(self.gamma, "gamma", 0.0, None, low_open=True)
        check_real(self.C_dense, "C_dense", 0.0, None, low_open=True)
        check_real(self.dsm_fraction, "dsm_fraction", 0.0, 1.0, low_open=True)
        if len(self.epsilons) < 2 or list(self.epsilons) != sorted(self.epsilons, reverse=True):
            raise ValueError("epsilons must hold at least two values, decreasing")
        for e in self.epsilons:
            check_real(e, "epsilons[i]", 0.0, 1.0, low_open=True)
        check_int(self.n_inputs, "n_inputs", 1)


def _default_models():
    from experiments.models import DSM, Dense, LSHModel

    return Dense, DSM, LSHModel


@register
class Eq1FlopsCheck(Check):
    """Eq. (1) as a measurement (method in the module docstring).

    Arguments:
        params: ``FlopsParams``.
        model_classes: optional (Dense, DSM, LSHModel) classes with the constructors of
            ``experiments.models``; tests plant violations through it (default: those).
    """

    name = "eq1_flops"
    claim = ("forward-pass cost: sparse LSH model O(dk log(1/ε)) vs dense model "
             "Ω(d (2√d/(Cε))^k) — exponentially cheaper as ε → 0")
    source = "Baykal et al. 2022, Eq. (1) (Theorems 4.1 and 4.3)"
    Params = FlopsParams

    def __init__(self, params: FlopsParams | None = None,
                 model_classes: tuple[Callable, Callable, Callable] | None = None):
        super().__init__(params)
        self.model_classes = model_classes

    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult:
        from routing.euclidean_lsh import EuclideanLSH

        p = self.params
        p.validate()
        Dense, DSM, LSHModel = self.model_classes or _default_models()
        symbolic = symbolic_claims(p.C_h)
        X = torch.as_tensor(np.random.default_rng(seed).uniform(-1, 1, (p.n_inputs, p.dim)),
                            dtype=torch.float32)
        rows, mismatches = [], []
        for eps in p.epsilons:
            base = 2 * math.sqrt(p.dim) / eps
            width = max(1, math.ceil((base / p.C_dense) ** p.k))
            n_bits = max(1, math.ceil(p.gamma * p.k * math.log2(base)))
            H = p.C_h * p.k
            active = max(1, math.ceil(p.dsm_fraction * width))
            models = {
                "Dense": (Dense(p.dim, width, seed=seed), {_w: width}),
                "DSM": (DSM(p.dim, width, active, seed=seed), {_w: width, _a: active}),
                "LSHModel": (LSHModel(p.dim, n_bits=min(n_bits, 24), hasher=EuclideanLSH(
                    p.dim, H, p.width_constant * eps / p.lipschitz, seed=seed)),
                    {_s: 1, _H: H}),
            }
            row = {"epsilon": eps, "dense_width": width, "lsh_hashes": H, "lsh_n_bits": n_bits,
                   "dsm_active": active}
            for name, (model, subs) in models.items():
                subs = {_d: p.dim, **subs}
                expected = {key: int(expr.subs(subs)) for key, expr in MODEL_FLOPS[name].items()}
                X_in = X.clone().requires_grad_(name == "DSM")  # the torch path of the DSM
                counted = _counted_matmul_flops(model, X_in)
                got = {"flops_true": int(model.flops_true()),
                       "flops_paper": int(model.flops_paper()), "matmul": counted}
                row[name] = {"expected": expected, "got": got}
                for key in expected:
                    if got[key] != expected[key]:
                        mismatches.append(f"eps={eps:g} {name}.{key}: got {got[key]}, "
                                          f"formula {expected[key]}")
            # Theorem 4.1's count with the lookup (op_counts), for the sparse side of Eq. (1)
            row["lsh_ops_with_lookup"] = int(LSH_OPS.subs(
                {_m: H, _d: p.dim, _N: 2 ** n_bits}))
            row["dense_ops"] = int(DENSE_OPS.subs({_w: width, _d: p.dim}))
            row["ratio_dense_over_sparse"] = (row["Dense"]["got"]["flops_true"]
                                              / row["LSHModel"]["got"]["flops_true"])
            rows.append(row)

        ratios = np.array([r["ratio_dense_over_sparse"] for r in rows])
        growing = bool(np.all(np.diff(ratios) > 0))
        inv_eps = np.log([1 / r["epsilon"] for r in rows])
        exponent = float(np.polyfit(inv_eps, np.log(ratios), 1)[0])
        sym_ok = symbolic["S_over_dk_log_ok"] and symbolic["D_over_dense_bound_ok"] \
            and symbolic["S_over_D_ok"]
        verdict = Verdict.HOLDS if (sym_ok and not mismatches and growing) else Verdict.REFUTED
        plots = self._plot(rows, out)
        details = {
            "symbolic": symbolic, "rows": rows, "mismatches": mismatches,
            "ratio_grows_as_eps_shrinks": growing,
            "ratio_exponent_in_1_over_eps": exponent,
            "constants": {"C_h": p.C_h, "gamma": p.gamma, "C_dense": p.C_dense,
                          "dense_width": "⌈(2√d/(C_dense·ε))^k⌉",
                          "lsh_table": "2^⌈γk·log2(2√d/ε)⌉ slots"},
            "notes": [
                "flops_true of the models ignores the table lookup; lsh_ops_with_lookup "
                "adds the hash arithmetic and ⌈log2 N⌉ comparisons (proofs_checks.op_counts)",
                "FlopCounterMode counts matrix multiplies only (the DSM is counted on its torch "
                "path; its CPU Numba kernel does the same multiplies)",
                "DSM's flops_true includes its whole bottom layer: Top-K needs every "
                "activation, so the DSM saves only in the top layer",
            ],
        }
        return self.result(
            seed=seed, measured=exponent, bound=float(p.k),
            measured_text=(f"dense/sparse ratio {ratios[0]:.3g} → {ratios[-1]:.3g} "
                           f"(ε {p.epsilons[0]:g} → {p.epsilons[-1]:g}), exponent {exponent:.3g}; "
                           f"{len(mismatches)} count mismatches"),
            bound_text=f"ratio grows ~ (1/ε)^k, k={p.k}; sympy limits S/(dk log(1/ε)) < ∞, S/D → 0",
            verdict=verdict, details=details, plots=plots)

    def _plot(self, rows, out):
        if out is None:
            return []
        eps = [r["epsilon"] for r in rows]
        fig, ax = plt.subplots(figsize=(5.5, 4))
        ax.plot(eps, [r["Dense"]["got"]["flops_true"] for r in rows], "o-", label="Dense")
        ax.plot(eps, [r["DSM"]["got"]["flops_true"] for r in rows], "s-", label="DSM (true)")
        ax.plot(eps, [r["LSHModel"]["got"]["flops_true"] for r in rows], "^-", label="LSH")
        ax.plot(eps, [r["lsh_ops_with_lookup"] for r in rows], "v--", label="LSH + lookup")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.invert_xaxis()
        ax.set_xlabel("ε")
        ax.set_ylabel("operations per forward pass")
        ax.legend(fontsize=7)
        return save_figure(fig, out, "eq1_flops.png")
