"""Router layers of the papers sparselab is built from, as PyTorch modules (CPU and CUDA).

Every layer maps x (B, d_in) to ``(y (B, d_out), aux_losses)`` and counts per-unit usage in
registered buffers (``RouterLayer``):

* ``COMET``: frozen random routing network, k-winner-take-all masks (COMET §4);
* ``SigmaMoE``: sigmoid expert scores, top-K experts, entropy regularisation, expert dropout
  (Csordás et al. 2023 §5);
* ``TopKMoE``: softmax gate before top-k with a load-balancing loss (Switch / Shazeer et al.,
  reviewed in Csordás et al. §4);
* ``PKM``: product-key memory (Csordás et al. §3.2; Lample et al. 2019);
* ``SMEAR``: router probabilities merge the experts' parameters (Muqeeth et al. 2024 §3);
* ``SDMLP``: Top-K with subtraction of the (k+1)-th activation, k annealing, normalised
  non-negative weights (Bricken et al. 2023 §4);
* ``DenseMLP``: the dense baseline, every hidden unit active (COMET §5.2.1's "smaller model"
  at matched activated units).

What the layers share and a training loop needs too: ``OPTIMIZERS`` (the optimisers a layer
config names) and ``uniform_fan_in_`` (PyTorch's default ``nn.Linear`` initialisation drawn
from a seeded generator).
"""

from routing.layers._base import OPTIMIZERS, RouterLayer, uniform_fan_in_
from routing.layers.comet import COMET, COMETConfig
from routing.layers.dense import DenseMLP, DenseMLPConfig
from routing.layers.pkm import PKM, PKMConfig
from routing.layers.sdmlp import SDMLP, SDMLPConfig
from routing.layers.sigma_moe import SigmaMoE, SigmaMoEConfig
from routing.layers.smear import SMEAR, SMEARConfig
from routing.layers.topk_moe import TopKMoE, TopKMoEConfig

__all__ = ["RouterLayer", "COMET", "COMETConfig", "SigmaMoE", "SigmaMoEConfig", "TopKMoE",
           "TopKMoEConfig", "PKM", "PKMConfig", "SMEAR", "SMEARConfig", "SDMLP", "SDMLPConfig",
           "DenseMLP", "DenseMLPConfig", "OPTIMIZERS", "uniform_fan_in_"]
