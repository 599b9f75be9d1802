"""Your own target function: wrap it, draw data from it, fit a sparse model, read its error.

``lipschitz.CustomTarget`` takes any numpy (or torch) function of the cube [-1, 1]^n and the
Lipschitz bound you state for it. The bound is probed when the target is built: if
``estimate_lipschitz`` measures a larger constant on a seeded sample, the target is refused
with the measured value — shown below with a bound that forgot a factor.

Then the target is used like a built-in one: ``make_dataset`` draws (X, y), and a DSM model
(Baykal et al. 2022, §5: k of `width` random ReLU features active per input) and the dense
model of the same width are fitted by exact least squares. The error printed is the nMSE,
MSE / Var(y) on held-out points (1 = predicting the mean).

Run: python examples/own_target.py   (a few seconds on one CPU core)
"""

import numpy as np

from experiments.kinds.fitting import evaluate, fit_model
from routing.models import DSM, Dense
from lipschitz import CustomTarget, UniformCube, make_dataset

N_INPUTS = 4


def bump(X):
    """f(x) = exp(−‖x‖²) · cos(2·x₀): X (N, 4) -> (N,)."""
    return np.exp(-(X ** 2).sum(axis=1)) * np.cos(2.0 * X[:, 0])


def main() -> None:
    # ‖∇f(x)‖ ≤ (2‖x‖ + 2)·e^{−‖x‖²}, whose largest value is ≈ 2.39 (at ‖x‖ = (√3 − 1)/2)
    target = CustomTarget(bump, n_inputs=N_INPUTS, lipschitz_bound=2.6, name="bump")
    print(f"target {target.name}: stated bound {target.lipschitz_bound}, "
          f"probe measured {target.probe.value:.3f} on {target.probe.n_points} points")
    try:
        CustomTarget(bump, n_inputs=N_INPUTS, lipschitz_bound=1.0)  # forgot the factor 2
    except ValueError as error:
        print(f"refused: {error}")

    cube = UniformCube(N_INPUTS)
    X_train, y_train = make_dataset(target, cube, n_samples=4000, seed=0)
    X_eval, y_eval = make_dataset(target, cube, n_samples=2000, seed=1)
    models = {"DSM, width 1024, k = 32": DSM(N_INPUTS, width=1024, k=32, seed=0),
              "dense, width 32": Dense(N_INPUTS, width=32, seed=0)}
    for label, model in models.items():  # both: 32 activated units per input
        fit_model(model, X_train, y_train, fit="exact")
        nmse = evaluate(model, X_eval, y_eval)["mse"] / float(np.var(y_eval))
        print(f"{label:<24} eval nMSE = {nmse:.4f}")


if __name__ == "__main__":
    main()
