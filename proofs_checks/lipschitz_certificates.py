"""Lipschitz certificates: for every target family, the certified bound is never below the
empirical estimate.

For random instances of every family of ``lipschitz`` (random polynomial, random hypercube
function, random MLP with each activation, and the rescaled / linearly composed versions) and
of the bump fields of Theorem 4.3's packing family (``proofs_checks.packing``) the
empirical Lipschitz constant is estimated from below — ``lipschitz.estimate_lipschitz`` on
uniform points of the cube (plus all corners for the hypercube function, where its gradient
is largest), then refined by projected gradient ascent on ‖∇f(x)‖² inside the cube — and must
not exceed ``lipschitz_bound`` (up to a relative 1e-6 for rounding in difference quotients of
close points).

sympy checks the certificates' algebra on small instances: for a polynomial, the bound equals
‖G‖₂ with G_i = Σ|coefficients of ∂p/∂x_i| and Σ|c_α|·degree = L (the paper's "sum of
coefficient absolute values < 1/d" at L = 1); for the hypercube function, the largest
‖∇f‖² over the corners equals the sensitivity and its root equals the bound; for an MLP, the
bound equals Π‖W_l‖₂ · Lip(σ)^(layers − 1) with the spectral norms from exact eigenvalues.

Decision (``LipschitzCertificatesCheck.rule``): holds when no instance's empirical estimate
exceeds its certificate by more than the relative 1e-6 and every sympy re-derivation agrees
with the class's bound (relative 1e-12; 1e-9 for the MLP's numerical eigenvalues); refuted
otherwise. Calibration: none (a certificate has no free constant); validation: every instance.

Power. The planted violations are targets whose certified bound is understated by 10 % where
the true constant is known exactly and the estimator reaches it: a random hypercube function
(its certificate √sensitivity is attained at a corner, and the corners are sampled), a
random linear polynomial (constant gradient) and a one-unit ReLU MLP (gradient w₂w₁ wherever
the unit is active: the product-of-norms certificate is exact), each as a subclass whose
``lipschitz_bound`` is 0.9 × the true constant (``UnderstatedHypercube``,
``UnderstatedPolynomial``, ``UnderstatedMLP``); a planted run decides the check on that family
alone (with the sympy re-derivations), since the other families' instances cannot be changed
by the plant. Each is caught on every seed (empirical/certified = 1/0.9); the detection is deterministic given that the
estimator reaches the constant. What the check cannot see: an understatement smaller than a
family's slack, 1 − (largest empirical/certified ratio) — about 0 for the hypercube function,
linear polynomials and one-unit ReLU MLPs, but large for wider MLPs, whose certificate (a
product of spectral norms) is loose; ``details["undetectable_understatement"]`` reports it
per family from the data, and the printed line gives the MLP families'.

Source: Baykal et al. 2022, §5.1 (the target functions); lipschitz/ (their certificates).
"""

from __future__ import annotations

import itertools
import math
import pathlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy as sp
import torch

from lipschitz import (
    RandomHypercubeFunction, RandomMLP, RandomPolynomial, UniformCube, compose_linear,
    estimate_lipschitz, rescale,
)
from lipschitz.mlp import ACTIVATIONS
from routing.validation import check_int, check_real
from proofs_checks._framework import (
    SVI, Check, CheckParams, CheckResult, Planted, Verdict, child_seeds, register,
)
from proofs_checks._plots import plt, save_figure

__all__ = ["CertificatesParams", "LipschitzCertificatesCheck", "FAMILIES", "empirical_lipschitz",
           "sympy_polynomial_bound", "sympy_hypercube_bound", "sympy_mlp_bound", "RTOL",
           "SYMBOLIC", "UnderstatedHypercube", "UnderstatedPolynomial", "UnderstatedMLP",
           "PLANTED_FACTOR"]

#: Relative slack of "empirical ≤ certified" (rounding in difference quotients).
RTOL = 1e-6
#: The planted certificates' factor: 10 % below the true constant.
PLANTED_FACTOR = 0.9


class UnderstatedHypercube(RandomHypercubeFunction):
    """A ``RandomHypercubeFunction`` whose certificate is ``factor`` × the exact constant.

    The function is unchanged (same corner values for the same seed); only
    ``lipschitz_bound`` = factor · √sensitivity, so for factor < 1 the certificate is false.

    Arguments:
        n_inputs, seed: as ``RandomHypercubeFunction``. factor: in (0, ∞).

    Raises:
        ValueError: as ``RandomHypercubeFunction``, or factor ≤ 0.

    Source: planted violation of ``LipschitzCertificatesCheck`` (Baykal et al. 2022, §5.1).
    """

    def __init__(self, n_inputs: int, seed: int = 0, factor: float = PLANTED_FACTOR):
        super().__init__(n_inputs, seed)
        self.factor = check_real(factor, "factor", 0.0, None, low_open=True)

    @property
    def lipschitz_bound(self) -> float:
        return self.factor * super().lipschitz_bound


class UnderstatedPolynomial(RandomPolynomial):
    """A ``RandomPolynomial`` whose certificate is ``factor`` × its ‖G‖₂ bound.

    For degree 1 the bound ‖G‖₂ = ‖∇p‖₂ is the exact constant, so factor < 1 makes the
    certificate false by exactly that factor.

    Arguments:
        n_inputs, degree, lipschitz, seed: as ``RandomPolynomial``. factor: in (0, ∞).

    Raises:
        ValueError: as ``RandomPolynomial``, or factor ≤ 0.

    Source: planted violation of ``LipschitzCertificatesCheck`` (Baykal et al. 2022, §5.1).
    """

    def __init__(self, n_inputs: int, degree: int, lipschitz: float = 1.0, seed: int = 0,
                 factor: float = PLANTED_FACTOR):
        super().__init__(n_inputs, degree, lipschitz, seed)
        self.factor = check_real(factor, "factor", 0.0, None, low_open=True)

    @property
    def lipschitz_bound(self) -> float:
        return self.factor * super().lipschitz_bound


class UnderstatedMLP(RandomMLP):
    """A ``RandomMLP`` whose certificate is ``factor`` × its Π‖W_l‖₂ · Lip(σ)^(layers − 1)
    bound.

    With one hidden ReLU unit, f(x) = w₂·relu(w₁·x + b) has gradient w₂w₁ wherever the unit
    is active, so its exact Lipschitz constant on the cube is |w₂|·‖w₁‖₂ — the certificate
    itself — whenever the unit is active somewhere in the cube: there the MLP family has no
    slack, and factor < 1 makes the certificate false by exactly that factor. (Wider MLPs
    have slack — their certificate is loose — and an understatement smaller than it cannot be
    seen: ``details["undetectable_understatement"]``.)

    Arguments:
        n_inputs, hidden, activation, seed: as ``RandomMLP``. factor: in (0, ∞).

    Raises:
        ValueError: as ``RandomMLP``, or factor ≤ 0.

    Source: planted violation of ``LipschitzCertificatesCheck`` (Baykal et al. 2022, §5.1).
    """

    def __init__(self, n_inputs: int, hidden: tuple[int, ...] = (1,), activation: str = "relu",
                 seed: int = 0, factor: float = PLANTED_FACTOR):
        super().__init__(n_inputs, hidden, activation, seed)
        self.factor = check_real(factor, "factor", 0.0, None, low_open=True)

    @property
    def lipschitz_bound(self) -> float:
        return self.factor * super().lipschitz_bound


def _random_map(rng, n_out: int, n_in: int) -> tuple[np.ndarray, np.ndarray]:
    """A random affine map of [-1, 1]^n_in into [-1, 1]^n_out (row abs sums ≤ 1)."""
    M = rng.standard_normal((n_out, n_in))
    b = rng.standard_normal(n_out) * 0.2
    scale = (np.abs(M).sum(axis=1) + np.abs(b)) * rng.uniform(1.0, 2.0, n_out)
    return M / scale[:, None], b / scale


def _random_bumps(rng, n: int):
    """A random member of the Theorem 4.3 packing family on a random subspace."""
    from lipschitz import UniformSubspace
    from proofs_checks.packing import PackingFamily

    subspace = UniformSubspace(n, int(rng.integers(1, min(n, 3) + 1)),
                               seed=int(rng.integers(2**31)))
    family = PackingFamily(subspace.basis, float(rng.uniform(0.1, 0.5)),
                           float(rng.uniform(0.5, 3)))
    return family.member(family.random_signs(1, int(rng.integers(2**31)))[0])


#: family name -> (rng, n_inputs) -> target, the instances the check draws.
FAMILIES: dict[str, Callable] = {
    "RandomPolynomial": lambda rng, n: RandomPolynomial(
        n, int(rng.integers(1, 5)), float(rng.uniform(0.1, 3)), seed=int(rng.integers(2**31))),
    "RandomHypercubeFunction": lambda rng, n: RandomHypercubeFunction(
        n, seed=int(rng.integers(2**31))),
    **{f"RandomMLP[{act}]": (lambda act: lambda rng, n: RandomMLP(
        n, tuple(int(h) for h in rng.integers(4, 33, int(rng.integers(1, 3)))), act,
        seed=int(rng.integers(2**31))))(act) for act in ACTIVATIONS},
    "rescale(RandomMLP)": lambda rng, n: rescale(
        RandomMLP(n, (16, 16), seed=int(rng.integers(2**31))), float(rng.uniform(0.1, 5))),
    "compose_linear(RandomPolynomial)": lambda rng, n: compose_linear(
        RandomPolynomial(n + 1, 3, seed=int(rng.integers(2**31))), *_random_map(rng, n + 1, n)),
    "BumpField (packing family)": lambda rng, n: _random_bumps(rng, n),
}


def empirical_lipschitz(f, n_points: int, seed: int, ascent_steps: int = 30) -> float:
    """A lower estimate of f's ℓ2 Lipschitz constant on [-1, 1]^n (see module docstring).

    Arguments:
        f: a target. n_points: uniform points. seed: seed of the points.
        ascent_steps: projected gradient-ascent steps on ‖∇f‖² from the 16 best points.

    Returns:
        The largest gradient norm or difference quotient found (≤ the true constant).
    """
    n = f.n_inputs
    X = UniformCube(n).sample(n_points, seed=seed)
    if isinstance(f, RandomHypercubeFunction) and n <= 10:
        X = np.vstack([X, f.corners()])
    best = estimate_lipschitz(f, X).value
    Xt = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(f.torch(Xt).sum(), Xt)
    start = X[np.argsort(-g.norm(dim=1).detach().numpy())[:16]]
    Z = torch.tensor(start, dtype=torch.float64, requires_grad=True)
    step = 0.05
    for _ in range(ascent_steps):
        (g,) = torch.autograd.grad(f.torch(Z).sum(), Z, create_graph=True)
        norm2 = (g**2).sum()
        best = max(best, float(g.detach().norm(dim=1).max()))
        if not norm2.requires_grad:  # a constant gradient (affine target): nothing to climb
            break
        (h,) = torch.autograd.grad(norm2, Z, allow_unused=True)
        if h is None or not torch.isfinite(h).all():
            break
        with torch.no_grad():
            Z += step * h / (h.norm(dim=1, keepdim=True) + 1e-12)
            Z.clamp_(-1.0, 1.0)
    (g,) = torch.autograd.grad(f.torch(Z).sum(), Z)
    return max(best, float(g.norm(dim=1).max()))


def sympy_polynomial_bound(f: RandomPolynomial) -> dict:
    """Symbolic certificate of a ``RandomPolynomial``: (‖G‖₂, Σ|c|·degree) from sympy.

    The coefficients are converted exactly (binary floats are rationals).
    """
    xs = sp.symbols(f"x0:{f.n_inputs}")
    p = sum(sp.Rational(float(c)) * sp.prod([x**int(e) for x, e in zip(xs, row)])
            for c, row in zip(f.coefficients, f.exponents))
    G = [sum(abs(c) for c in sp.Poly(sp.diff(p, x), *xs).coeffs()) if sp.diff(p, x) != 0 else 0
         for x in xs]
    norm = sp.sqrt(sum(g**2 for g in G))
    l1_degree = sum(abs(c) for c in sp.Poly(p, *xs).coeffs()) * max(f.degree, 1)
    return {"bound": float(norm), "sum_abs_coef_times_degree": float(l1_degree)}


def sympy_hypercube_bound(f: RandomHypercubeFunction) -> dict:
    """Symbolic certificate of a ``RandomHypercubeFunction``: max over corners of ‖∇f‖²."""
    n = f.n_inputs
    xs = sp.symbols(f"x0:{n}")
    expr = 0
    for v, y in zip(f.corner_values, f.corners()):
        expr += int(v) * sp.prod([(1 + int(yi) * x) / 2 for x, yi in zip(xs, y)])
    grad = [sp.diff(expr, x) for x in xs]
    best = 0
    for corner in itertools.product((-1, 1), repeat=n):
        sub = dict(zip(xs, corner))
        best = max(best, sum(sp.nsimplify(g.subs(sub)) ** 2 for g in grad))
    return {"max_grad_norm_sq": int(best), "bound": math.sqrt(int(best))}


def sympy_mlp_bound(f: RandomMLP) -> dict:
    """Symbolic certificate of a ``RandomMLP``: Π‖W_l‖₂ · Lip(σ)^(L−1), ‖W‖₂² the largest
    eigenvalue of WᵀW computed by sympy from the exact (rational) weights."""
    norms = []
    for W in f.weights:
        M = sp.Matrix([[sp.Rational(float(v)) for v in row] for row in W])
        gram = M * M.T if M.shape[0] <= M.shape[1] else M.T * M
        lam = max(float(sp.re(r)) for r in sp.Poly(gram.charpoly()).nroots(n=30))
        norms.append(math.sqrt(max(lam, 0.0)))
    return {"bound": float(np.prod(norms) * ACTIVATIONS[f.activation] ** len(f.hidden))}


#: kind -> (make(rng) -> small target, derive(target) -> dict with "bound", agrees(target,
#: derived) -> bool): the sympy re-derivations the check runs (``n_sympy`` of each kind).
SYMBOLIC: dict[str, tuple[Callable, Callable, Callable]] = {
    "polynomial": (
        lambda rng: RandomPolynomial(3, 3, float(rng.uniform(0.5, 2)),
                                     seed=int(rng.integers(2**31))),
        sympy_polynomial_bound,
        lambda f, s: math.isclose(s["bound"], f.lipschitz_bound, rel_tol=1e-12)
        and s["sum_abs_coef_times_degree"] <= f.lipschitz * (1 + 1e-12)),
    "hypercube": (
        lambda rng: RandomHypercubeFunction(3, seed=int(rng.integers(2**31))),
        sympy_hypercube_bound,
        lambda f, s: s["max_grad_norm_sq"] == f.sensitivity()
        and math.isclose(s["bound"], f.lipschitz_bound, rel_tol=1e-12)),
    "mlp": (
        lambda rng: RandomMLP(3, (4,), str(rng.choice(list(ACTIVATIONS))),
                              seed=int(rng.integers(2**31))),
        sympy_mlp_bound,
        lambda f, s: math.isclose(s["bound"], f.lipschitz_bound, rel_tol=1e-9)),
}


@dataclass(frozen=True)
class CertificatesParams(CheckParams):
    """Parameters of the certificate check (defaults: the quick preset).

    Attributes:
        n_instances: random instances per family.
        max_inputs: largest input dimension drawn (≥ 2).
        n_points: uniform points per instance.
        ascent_steps: gradient-ascent steps per instance.
        n_sympy: small instances per family whose certificate is re-derived with sympy.
        n_power: planted runs per planted violation.
    """

    n_instances: int = 6
    max_inputs: int = 8
    n_points: int = 1000
    ascent_steps: int = 20
    n_sympy: int = 2
    n_power: int = 14

    @classmethod
    def tiny(cls):
        """The tiny preset: a smoke run in seconds that decides nothing (2 instances, 200 points)."""
        return cls(n_instances=2, n_points=200, ascent_steps=5, n_sympy=1)

    @classmethod
    def full(cls):
        return cls(n_instances=40, n_points=5000, ascent_steps=50, n_sympy=5, n_power=14)

    def validate(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        check_int(self.n_instances, "n_instances", 1)
        check_int(self.max_inputs, "max_inputs", 2, 16)
        check_int(self.n_points, "n_points", 2)
        check_int(self.ascent_steps, "ascent_steps", 0)
        check_int(self.n_sympy, "n_sympy", 0)
        check_int(self.n_power, "n_power", 1)


@register
class LipschitzCertificatesCheck(Check):
    """Certified bounds against empirical estimates for every family (module docstring).

    Arguments:
        params: ``CertificatesParams``.
        families: name -> (rng, n_inputs) -> target (default ``FAMILIES``); the planted
            violations put a target whose certificate is too small in place of a family.
        symbolic: kind -> (make, derive, agrees), the sympy re-derivations (default
            ``SYMBOLIC``).
    """

    name = "lipschitz_certificates"
    claim = "for every target family, the certified Lipschitz bound ≥ the empirical estimate"
    source = "Baykal et al. 2022, §5.1 (targets); lipschitz package (certificates)"
    Params = CertificatesParams
    rule = ("holds when, for every random instance of every family, empirical Lipschitz "
            "estimate ≤ certified bound × (1 + 1e-6), and every sympy re-derivation equals the "
            "class's bound (relative 1e-12, MLP 1e-9); refuted when one instance or "
            "re-derivation fails")

    def __init__(self, params: CertificatesParams | None = None,
                 families: dict[str, Callable] | None = None,
                 symbolic: dict[str, tuple] | None = None):
        super().__init__(params)
        self.families = FAMILIES if families is None else families
        self.symbolic = SYMBOLIC if symbolic is None else symbolic

    def smallest_violations(self) -> list[SVI]:
        return [SVI("all", 1 - PLANTED_FACTOR,
                    "relative understatement 1 − certified/true of a family's certificate",
                    "a round 10 %, fixed with the check before any data: the families whose "
                    "estimator reaches the true constant resolve far less (relative 1e-6), the "
                    "wider MLPs only their slack, printed with the result")]

    def planted_violations(self) -> list[Planted]:
        p, c = self.params, PLANTED_FACTOR
        svi = 1 - c

        def families(factor, which):
            make = {
                "RandomHypercubeFunction": lambda rng, n: UnderstatedHypercube(
                    n, seed=int(rng.integers(2**31)), factor=factor),
                "RandomPolynomial": lambda rng, n: UnderstatedPolynomial(
                    n, 1, float(rng.uniform(0.1, 3)), seed=int(rng.integers(2**31)),
                    factor=factor),
                "RandomMLP[relu]": lambda rng, n: UnderstatedMLP(
                    n, (1,), "relu", seed=int(rng.integers(2**31)), factor=factor)}[which]
            # the planted family alone: the other families' instances cannot be changed by
            # it, and drawing them again in every planted run only costs time
            return lambda: LipschitzCertificatesCheck(p, {which: make}, self.symbolic)

        curve = max(2, self.n_power // 4)
        return [
            Planted(f"hypercube_bound_x{c:g}",
                    f"random hypercube functions certified at {c:g} × their exact constant "
                    f"√sensitivity (UnderstatedHypercube), the check on that family alone "
                    f"(at the SVI)", families(c, "RandomHypercubeFunction"), part="all", size=svi),
            Planted(f"linear_bound_x{c:g}",
                    f"random linear polynomials certified at {c:g} × their exact constant "
                    f"‖∇p‖ (UnderstatedPolynomial, degree 1), the check on that family "
                    f"alone (at the SVI)", families(c, "RandomPolynomial"), part="all", size=svi),
            Planted(f"mlp_bound_x{c:g}",
                    f"random one-unit ReLU MLPs (no slack: the certificate is the exact "
                    f"constant) certified at {c:g} × it (UnderstatedMLP), the check on that "
                    f"family alone (at the SVI)", families(c, "RandomMLP[relu]"),
                    part="all", size=svi),
            Planted("hypercube_bound_x0.99", "hypercube certificates 1 % low (power curve)",
                    families(0.99, "RandomHypercubeFunction"), part="all", size=0.01,
                    runs=curve),
            Planted("hypercube_bound_x0.5", "hypercube certificates 50 % low (power curve)",
                    families(0.5, "RandomHypercubeFunction"), part="all", size=0.5,
                    runs=curve),
        ]

    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult:
        p = self.params
        p.validate()
        per_family, violations = {}, []
        for j, (name, make) in enumerate(self.families.items()):
            rng = np.random.default_rng(child_seeds(seed, 1, 40, j)[0])
            ratios = []
            for i in range(p.n_instances):
                f = make(rng, int(rng.integers(2, p.max_inputs + 1)))
                emp = empirical_lipschitz(f, p.n_points, int(rng.integers(2**31)), p.ascent_steps)
                if f.lipschitz_bound > 0:
                    ratio = emp / f.lipschitz_bound
                else:  # a constant target (e.g. equal corner values): 0/0 is fine, x/0 is not
                    ratio = 0.0 if emp == 0 else math.inf
                ratios.append(ratio)
                if emp > f.lipschitz_bound * (1 + RTOL):
                    violations.append({"family": name, "instance": repr(f), "empirical": emp,
                                       "certified": f.lipschitz_bound})
            per_family[name] = {"ratios": ratios, "max_ratio": max(ratios)}
        symbolic = self._sympy(seed, p.n_sympy)
        sym_fail = [s for s in symbolic if not s["agrees"]]
        worst = max(v["max_ratio"] for v in per_family.values())
        verdict = Verdict.REFUTED if (violations or sym_fail) else Verdict.HOLDS
        extra = {"calibration": "none: a certificate has no free constant",
                 "validation": f"{p.n_instances} instances per family, {len(symbolic)} sympy "
                               f"re-derivations",
                 "undetectable_understatement": {
                     name: max(0.0, 1.0 - v["max_ratio"]) for name, v in per_family.items()}}
        if verdict == Verdict.REFUTED:
            extra["diagnosis"] = (
                f"{len(violations)} instances above their certificate (largest "
                f"empirical/certified {worst:.4g}, in "
                f"{sorted({v['family'] for v in violations})}); {len(sym_fail)} sympy "
                f"re-derivations differ from the class bound"
                + (f" ({[s['target'] for s in sym_fail][:3]})" if sym_fail else ""))
        plots = self._plot(per_family, out)
        return self.result(
            seed=seed, measured=worst, bound=1.0,
            measured_text=f"max empirical/certified = {worst:.4g}; {len(violations)} violations; "
                          f"sympy {len(symbolic) - len(sym_fail)}/{len(symbolic)} agree; "
                          f"MLP slack (understatements it cannot see): " + ", ".join(
                              f"{n.replace('RandomMLP', '')} {v:.2f}" for n, v in
                              extra["undetectable_understatement"].items() if "MLP" in n),
            bound_text=f"≤ 1 (+{RTOL:g}); sympy certificates = the classes' bounds",
            verdict=verdict,
            details={"per_family": per_family, "violations": violations, "sympy": symbolic,
                     "rtol": RTOL, **extra}, plots=plots)

    def _sympy(self, seed: int, n: int) -> list[dict]:
        """Re-derive the certificates of ``n`` small instances per kind of ``self.symbolic``."""
        out = []
        rng = np.random.default_rng(child_seeds(seed, 1, 41)[0])
        for _ in range(n):
            for make, derive, agrees in self.symbolic.values():
                f = make(rng)
                s = derive(f)
                out.append({"target": repr(f), **s, "class_bound": f.lipschitz_bound,
                            "agrees": bool(agrees(f, s))})
        return out

    def _plot(self, per_family, out):
        if out is None:
            return []
        fig, ax = plt.subplots(figsize=(6.5, 3.8))
        names = list(per_family)
        for i, name in enumerate(names):
            r = per_family[name]["ratios"]
            ax.scatter(np.full(len(r), i), r, s=10)
        ax.axhline(1.0, color="k", ls="--", lw=1)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("empirical / certified Lipschitz")
        return save_figure(fig, out, "lipschitz_certificates.png")
