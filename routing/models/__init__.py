"""The regression models of Baykal et al. 2022, §5: dense, DSM, LSH and random-hash networks.

Each is a ``torch.nn.Module`` mapping (B, dim) inputs to (B,) outputs, made of frozen random
features (``model.features``) and a trainable linear top layer (``model.top_layer``); fit them
with ``experiments.kinds.fitting.fit_model``.
"""

from routing.models._base import Features, RegressionModel
from routing.models.dense import Dense
from routing.models.dsm import DSM
from routing.models.lsh_model import LSHModel
from routing.models.random_hash import RandomHashModel

__all__ = ["Dense", "DSM", "LSHModel", "RandomHashModel", "RegressionModel", "Features"]
