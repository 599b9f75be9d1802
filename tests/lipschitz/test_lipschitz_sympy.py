"""sympy confirms each certified bound on small random instances."""

import itertools

import numpy as np
import pytest
import sympy as sp

from lipschitz import RandomHypercubeFunction, RandomMLP, RandomPolynomial, UniformCube


def _gradient_norm_function(expr, xs):
    grad = [sp.diff(expr, x) for x in xs]
    return sp.lambdify(xs, sp.sqrt(sum(g**2 for g in grad)), "numpy"), grad


@pytest.mark.parametrize("n, degree, seed", [(2, 3, 0), (3, 2, 1), (3, 4, 2), (1, 4, 3)])
def test_polynomial_certificate_from_symbolic_gradient(n, degree, seed):
    f = RandomPolynomial(n, degree, seed=seed)
    xs = sp.symbols(f"x0:{n}")
    expr = sum(sp.Float(c, 30) * sp.prod([x**int(e) for x, e in zip(xs, alpha)])
               for c, alpha in zip(f.coefficients, f.exponents))
    assert sp.Poly(expr, *xs).total_degree() == degree
    norm, grad = _gradient_norm_function(expr, xs)
    # sup over the cube of |∂p/∂x_i| <= sum of |coefficients| of ∂p/∂x_i (each |x^β| <= 1)
    G = np.array([float(sum(abs(c) for c in sp.Poly(g, *xs).coeffs())) for g in grad])
    assert np.linalg.norm(G) == pytest.approx(f.lipschitz_bound, rel=1e-12)
    X = np.vstack([UniformCube(n).sample(2000, seed),
                   np.array(list(itertools.product([-1.0, 1.0], repeat=n)))])
    assert np.max(norm(*X.T)) <= f.lipschitz_bound * (1 + 1e-12)
    # numeric evaluation agrees with the symbolic polynomial
    np.testing.assert_allclose(sp.lambdify(xs, expr, "numpy")(*X.T), f(X), atol=1e-12)


@pytest.mark.parametrize("n, seed", [(2, 0), (3, 1), (4, 2), (4, 5)])
def test_hypercube_certificate_from_symbolic_gradient(n, seed):
    f = RandomHypercubeFunction(n, seed=seed)
    xs = sp.symbols(f"x0:{n}")
    expr = sum(int(v) * sp.prod([(1 + int(y) * x) / 2 for x, y in zip(xs, corner)])
               for v, corner in zip(f.corner_values, f.corners()))
    norm, grad = _gradient_norm_function(sp.expand(expr), xs)
    corners = f.corners()
    at_corners = np.array([float(sp.sqrt(sum(g.subs(dict(zip(xs, c))) ** 2 for g in grad)))
                           for c in corners])
    # the maximum over the cube is attained at a corner and equals the certificate exactly
    assert at_corners.max() == pytest.approx(f.lipschitz_bound, abs=1e-12)
    X = UniformCube(n).sample(3000, seed)
    assert np.max(norm(*X.T)) <= f.lipschitz_bound + 1e-12


def test_activation_lipschitz_constants_symbolically():
    z = sp.symbols("z", real=True)
    sigmoid = 1 / (1 + sp.exp(-z))
    d_sigmoid = sp.diff(sigmoid, z)
    critical = sp.solve(sp.diff(d_sigmoid, z), z)
    assert critical == [0] and sp.simplify(d_sigmoid.subs(z, 0)) == sp.Rational(1, 4)
    d_tanh = sp.diff(sp.tanh(z), z)
    assert sp.simplify(d_tanh - (1 - sp.tanh(z) ** 2)) == 0  # so 0 < tanh' <= 1, max at 0
    assert sp.limit(sp.diff(sp.log(1 + sp.exp(z)), z), z, sp.oo) == 1  # softplus' = sigmoid < 1


@pytest.mark.parametrize("activation", ["tanh", "sigmoid", "softplus"])
def test_mlp_certificate_from_symbolic_jacobian(activation):
    f = RandomMLP(2, hidden=(3, 2), activation=activation, seed=4)
    xs = sp.symbols("x0:2")
    act = {"tanh": sp.tanh, "sigmoid": lambda u: 1 / (1 + sp.exp(-u)),
           "softplus": lambda u: sp.log(1 + sp.exp(u))}[activation]
    h = sp.Matrix(xs)
    for W, b in zip(f.weights[:-1], f.biases[:-1]):
        h = (sp.Matrix(W) * h + sp.Matrix(b)).applyfunc(act)
    expr = (sp.Matrix(f.weights[-1]) * h + sp.Matrix(f.biases[-1]))[0]
    norm, _ = _gradient_norm_function(expr, xs)
    X = UniformCube(2).sample(2000, 0)
    np.testing.assert_allclose(sp.lambdify(xs, expr, "numpy")(*X.T), f(X), atol=1e-10)
    assert np.max(norm(*X.T)) <= f.lipschitz_bound
