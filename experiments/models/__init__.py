"""The regression models of Baykal et al. 2022, §5: dense, DSM, LSH and random-hash networks.

Each is a ``torch.nn.Module`` mapping (B, dim) inputs to (B,) outputs, made of frozen random
features (``model.features``) and a trainable linear top layer (``model.top_layer``); fit them
with ``experiments.fitting.fit_model``.
"""

from experiments.models._base import Features, RegressionModel
from experiments.models.dense import Dense
from experiments.models.dsm import DSM
from experiments.models.lsh_model import LSHModel
from experiments.models.random_hash import RandomHashModel

__all__ = ["Dense", "DSM", "LSHModel", "RandomHashModel", "RegressionModel", "Features"]
