"""A router layer from ``routing.layers`` inside your own classifier.

Every layer of ``routing.layers`` maps x (B, d_in) to ``(y (B, d_out), aux_losses)``: add the
auxiliary losses (σ-MoE's entropy regulariser here) to your loss, and read the layer's usage
counters (``utilisation()``, ``dead_fraction()``) after an evaluation pass. Here a σ-MoE layer
(Csordás et al. 2023, §5: 8 experts of 16 hidden units, 2 active per example) is the hidden
block of a small classifier of handwritten digits — scikit-learn's bundled 8×8 digits when
scikit-learn is installed (nothing is downloaded), otherwise generated Gaussian clusters.

Run: python examples/classifier_with_layers.py   (a few seconds on one CPU core)
"""

import numpy as np
import torch

from routing.layers import SigmaMoE, SigmaMoEConfig


def load_data(seed: int = 0):
    """(X_train, y_train, X_test, y_test, name): float32 features in [0, 1], int64 labels."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:  # generated stand-in: 10 Gaussian clusters in 64 dimensions
        rng = np.random.default_rng(seed)
        centres = rng.uniform(0, 1, size=(10, 64))
        labels = rng.integers(0, 10, size=1800)
        X = np.clip(centres[labels] + rng.normal(0, 0.25, size=(1800, 64)), 0, 1)
        name = "generated clusters"
    else:
        digits = load_digits()
        X, labels, name = digits.data / 16.0, digits.target, "scikit-learn digits"
    order = np.random.default_rng(seed).permutation(len(X))
    X, labels = X[order].astype(np.float32), labels[order].astype(np.int64)
    split = int(0.8 * len(X))
    return (torch.from_numpy(X[:split]), torch.from_numpy(labels[:split]),
            torch.from_numpy(X[split:]), torch.from_numpy(labels[split:]), name)


class MoEClassifier(torch.nn.Module):
    """64 pixels -> 32 (linear) -> σ-MoE block (residual) -> 10 class logits."""

    def __init__(self, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.embed = torch.nn.Linear(64, 32)
        self.moe = SigmaMoE(SigmaMoEConfig(d_in=32, d_out=32, n_experts=8, expert_size=16,
                                           k=2, seed=seed))
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x):  # x (B, 64) -> logits (B, 10), auxiliary losses
        h = torch.relu(self.embed(x))                           # (B, 32)
        y, aux = self.moe(h)                                    # (B, 32), {"entropy": ...}
        return self.head(h + y), aux


def main() -> None:
    torch.set_num_threads(1)
    X_train, y_train, X_test, y_test, name = load_data()
    model = MoEClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    for epoch in range(10):
        model.train()
        for batch in torch.randperm(len(X_train), generator=generator).split(64):
            logits, aux = model(X_train[batch])
            loss = torch.nn.functional.cross_entropy(logits, y_train[batch])
            loss = loss + sum(aux.values())                     # the router's own losses
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    model.moe.reset_usage()                                     # count usage on test data only
    with torch.no_grad():
        logits, _ = model(X_test)
    accuracy = float((logits.argmax(dim=1) == y_test).float().mean())
    usage = model.moe.utilisation()
    print(f"data: {name}, {len(X_train)} training and {len(X_test)} test images")
    config = model.moe.config
    print(f"σ-MoE: {config.k} of {config.n_experts} experts ({model.moe.activated_units} "
          f"hidden units) active per example; share of test examples using each expert: "
          f"{np.round(usage.numpy(), 2).tolist()}")
    print(f"test accuracy: {accuracy:.3f}")


if __name__ == "__main__":
    main()
