"""SDMLP: Sparse Distributed Memory written as a one-hidden-layer MLP (Bricken et al. 2023,
"Sparse Distributed Memory is a Continual Learner", §4, App. A.1, A.5, B.3).

Forward pass (Algorithm 1, App. A.1): the input is L2-normalised, x̂ = x/‖x‖; the neuron
activations are a = X_a x̂ with every neuron address (row of X_a) on the unit sphere and
non-negative; Top-K keeps k neurons and subtracts the (k+1)-th activation (Eq. 4),

    a* = [a − I]_+,   I = descending-sort([a]_+)_(k_t + 1),

and the output is y = X_v a* with no bias on either layer (A.5, item 3). After every optimiser
step all weights are clamped to be non-negative and the addresses renormalised (Algorithm 1,
last two lines; ``after_step``). k_t is annealed once per epoch (Eq. 4),

    k_t = max(k_target, ⌊k_max − E_t (k_max − k_target) / s⌋),

from k_max = n_neurons ("annealing our k value from the maximum number of neurons in the
layer", §4) to k_target over s = ``anneal_epochs`` epochs: the paper's simple stand-in for the
GABA switch, enough when weights and inputs are non-negative (B.3). The full GABA switch
(App. B.3, Eq. 12) is the option ``gaba_switch``: a* = [a − λ_i I]_+ with I taken at
k_target + 1 and λ_i = clip(−1 + 2 C_i / s_gaba, −1, 1), where C_i counts the training
examples in which neuron i fired; every neuron is first *excited* by the interneuron
(λ_i = −1) and becomes inhibited (λ_i = 1) after s_gaba activations.
Plain SGD is the default optimiser (stale momentum, §4 and App. D), at the authors' code's
lr 0.03; that code also clips the gradient norm at 1, without which SGD on an MSE loss can
diverge while k is still near n_neurons (all neurons active, large curvature).

Our adaptations for regression on [-1, 1]^d, each a config field:
  * ``lift_inputs``: x̂ = (x, 1)/‖(x, 1)‖ instead of x/‖x‖. Normalising x itself would throw
    away ‖x‖ (x and 2x would be one input); appending 1 keeps the map injective on R^d.
    x̂ still has both signs, so activations can be negative and an example whose winners all
    have a_j <= 0 gets y = 0 (and no gradient) -- the case the paper's non-negative inputs
    exclude.
  * ``split_signs`` (off by default): x ↦ ([x]_+, [−x]_+) before the lift. The paper assumes
    non-negative inputs as well as weights (B.3: "we implement SDM with positive weights and
    inputs"; the authors' code applies a ReLU to the input), which makes every activation
    non-negative and k annealing sufficient. Splitting keeps our signed inputs non-negative
    and the map injective, at twice the width; on a toy regression (random tanh network on
    [-1, 1]^8) it fitted worse than the plain lift, hence off.
  * ``nonneg_decoder``: Algorithm 1 clamps X_v too, which suits logits but forces y >= 0;
    signed regression targets need False (our default), the paper's setting is True.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from routing.validation import check_bool, check_finite_tensor, check_instance, check_int
from ._base import RouterLayer, check_layer_config, check_parameter_memory
from ._unit_kernel import normalised_rows, project_nonnegative_unit_rows, routed_unit_mlp

__all__ = ["SDMLPConfig", "SDMLP"]



@dataclass(frozen=True)
class SDMLPConfig:
    """Settings of an :class:`SDMLP` layer (defaults from Bricken et al. 2023 where it gives
    one).

    Attributes:
        d_in: input width (>= 1).
        d_out: output width (>= 1).
        n_neurons: hidden neurons r (>= 1); 1,000 in the paper (§5).
        k_target: neurons kept by Top-K once annealing is over, in [1, n_neurons]; 10 in §5.
        k_max: k at epoch 0, in [k_target, n_neurons]; None means n_neurons (§4).
        anneal_epochs: s of Eq. 4 (>= 0): epochs from k_max to k_target; 0 starts at
            k_target (the "No Linear Anneal" ablation of Table 2). The paper gives no value
            for its main runs; 50 is the default of the authors' code.
        gaba_switch: use the full GABA switch (Eq. 12) instead of k annealing.
        gaba_switch_activations: s of Eq. 12 (>= 1): activations after which a neuron is
            fully inhibited; 250,000 as on the ConvMixer embeddings (B.3).
        lift_inputs: normalise (x, 1) rather than x (see the module docstring).
        split_signs: feed ([x]_+, [−x]_+) (see the module docstring).
        nonneg_decoder: clamp the decoder X_v at >= 0 after each step, as Algorithm 1 does.
        optimizer: "sgd" (the paper's choice, §4 and App. D) or "adam".
        lr: learning rate (> 0); 0.03, the authors' code default for SDM (used there with
            gradient-norm clipping at 1).
        seed: seed (>= 0) of the initialisation.

    Raises:
        ValueError: naming the field and its allowed range when a value is outside it.
    """

    d_in: int
    d_out: int = 1
    n_neurons: int = 1000
    k_target: int = 10
    k_max: int | None = None
    anneal_epochs: int = 50
    gaba_switch: bool = False
    gaba_switch_activations: int = 250_000
    lift_inputs: bool = True
    split_signs: bool = False
    nonneg_decoder: bool = False
    optimizer: str = "sgd"
    lr: float = 0.03
    seed: int = 0

    def __post_init__(self):
        check_layer_config(self)
        check_int(self.n_neurons, "n_neurons", 1)
        check_int(self.k_target, "k_target", 1, self.n_neurons)
        if self.k_max is not None:
            check_int(self.k_max, "k_max", self.k_target, self.n_neurons)
        check_int(self.anneal_epochs, "anneal_epochs", 0)
        check_int(self.gaba_switch_activations, "gaba_switch_activations", 1)
        for flag in ("gaba_switch", "lift_inputs", "split_signs", "nonneg_decoder"):
            check_bool(getattr(self, flag), flag)
        check_parameter_memory(self.n_neurons * (self.input_width + self.d_out),
                               {"d_in": self.d_in, "d_out": self.d_out,
                                "n_neurons": self.n_neurons})

    @property
    def k_start(self) -> int:
        """k at epoch 0: ``k_max``, or n_neurons when it is None."""
        return self.n_neurons if self.k_max is None else self.k_max

    @property
    def input_width(self) -> int:
        """Width of the normalised input x̂: d_in, doubled by ``split_signs``, + 1 if lifted."""
        return self.d_in * (2 if self.split_signs else 1) + int(self.lift_inputs)


def annealed_k(epoch: int, k_max: int, k_target: int, anneal_epochs: int) -> int:
    """k_t of Bricken et al. 2023, Eq. 4: max(k_target, ⌊k_max − E_t (k_max − k_target)/s⌋).

    Integer arithmetic (⌊k_max − q⌋ = k_max − ⌈q⌉), so no float rounding moves a step.
    ``anneal_epochs`` = 0 gives k_target at every epoch.

    Raises:
        ValueError: if ``epoch`` < 0.
    """
    epoch = check_int(epoch, "epoch", 0)
    if anneal_epochs == 0:
        return k_target
    drop = -((-epoch * (k_max - k_target)) // anneal_epochs)  # ⌈E_t (k_max − k_target) / s⌉
    return max(k_target, k_max - drop)


class SDMLP(RouterLayer):
    """SDM as an MLP with Top-K-with-subtraction (Bricken et al. 2023, §4, Eq. 4; App. B.3).

    ``forward(x)`` maps x (B, d_in) to ``(y, {})`` with y (B, d_out) in the parameters' dtype
    and device. With k annealing, exactly ``current_k`` neurons are selected per example
    (ties broken by the lowest index), and those are what the usage buffers count; a selected
    neuron outputs 0 when its activation equals the (k+1)-th or is <= 0. With the GABA
    switch, the neurons with a* > 0 are counted.

    Parameters (float32 at construction, satisfying the constraints):
        encoder: (n_neurons, input_width) X_a, rows non-negative and of unit L2 norm,
            initialised uniformly on the non-negative part of the unit sphere (the paper
            places addresses at random on the sphere, §3).
        decoder: (d_out, n_neurons) X_v, U(±1/√n_neurons) (non-negative part only with
            ``nonneg_decoder``).
    Buffers: ``gaba_counts`` (n_neurons,) float64, C_i of Eq. 12 (counted in training mode
        only, GABA switch on; kept float64 through dtype conversions, as the usage
        counters). ``current_k`` is saved in ``state_dict`` as extra state.

    Raises:
        ParameterTypeError (a TypeError and a ValueError): if ``config`` is not an
            ``SDMLPConfig``.
        ValueError: from the config; ``forward``, ``hidden`` and ``normalise_inputs`` naming
            x when it is not a finite (B, d_in) tensor of the parameters' dtype and device;
            ``set_training_progress`` for a negative epoch.
    """

    name = "sdmlp"
    #: Gradient-norm clipping the authors' code trains SDM with (plain SGD at lr 0.03 is
    #: unstable while every neuron is still active, early in the k annealing).
    default_grad_clip = 1.0
    _counter_buffers = RouterLayer._counter_buffers + ("gaba_counts",)

    def __init__(self, config: SDMLPConfig):
        check_instance(config, "config", SDMLPConfig)
        super().__init__(config.n_neurons)
        self.config = config
        gen = torch.Generator().manual_seed(config.seed)
        encoder = torch.randn(config.n_neurons, config.input_width, generator=gen).abs()
        self.encoder = nn.Parameter(encoder / encoder.norm(dim=1, keepdim=True))
        bound = config.n_neurons ** -0.5
        decoder = (2 * torch.rand(config.d_out, config.n_neurons, generator=gen) - 1) * bound
        self.decoder = nn.Parameter(decoder.clamp(min=0) if config.nonneg_decoder else decoder)
        k0 = config.k_target if config.gaba_switch else annealed_k(
            0, config.k_start, config.k_target, config.anneal_epochs)
        self._k = k0  # a Python int: read every forward, so no device sync; saved as extra state
        self.register_buffer("gaba_counts", torch.zeros(config.n_neurons, dtype=torch.float64))

    @property
    def current_k(self) -> int:
        """Neurons Top-K keeps now (k_t of Eq. 4; k_target under the GABA switch)."""
        return self._k

    def get_extra_state(self) -> dict:
        """``{"current_k": k}``, so that ``state_dict`` keeps the annealing point."""
        return {"current_k": self._k}

    def set_extra_state(self, state: dict) -> None:
        """Restore ``current_k`` from ``get_extra_state``'s dict.

        Raises:
            ValueError: if ``state`` is not a dict with ``current_k`` an integer in the range
                Eq. 4 can reach, [k_target, k_start] (k_target under the GABA switch).
        """
        if not isinstance(state, dict) or "current_k" not in state:
            raise ValueError(f"state must be a dict with key 'current_k', got {state!r}")
        c = self.config
        high = c.k_target if c.gaba_switch else c.k_start
        self._k = check_int(state["current_k"], "current_k", c.k_target, high)

    # -- forward ----------------------------------------------------------------------------
    def _input_like(self) -> torch.Tensor:
        return self.encoder

    def normalise_inputs(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, d_in) -> x̂ (B, input_width), non-negative with ``split_signs`` and of unit
        norm (a zero row stays zero); App. A.1, with the lift of the module docstring.

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite.
        """
        return self._normalise(self.check_input(x))

    def _normalise(self, x: torch.Tensor) -> torch.Tensor:
        """``normalise_inputs`` of a checked x."""
        if (not (x.requires_grad and torch.is_grad_enabled()) and x.device.type == "cpu"
                and x.dtype in (torch.float32, torch.float64)):  # one pass, not five ops
            return normalised_rows(x, self.config.split_signs, self.config.lift_inputs)
        if self.config.split_signs:
            x = torch.cat([x.clamp(min=0), (-x).clamp(min=0)], dim=1)
        if self.config.lift_inputs:
            x = torch.cat([x, torch.ones_like(x[:, :1])], dim=1)
        # divided by the largest magnitude first, as the kernel does where it matters: the
        # sum of squares of a finite row then neither overflows nor underflows
        x = x / x.detach().abs().amax(dim=1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
        return x / x.norm(dim=1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)

    def hidden(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Post-inhibition activations and who took part (Eq. 4; Eq. 12 under the GABA
        switch): x (B, d_in) -> (a* (B, n_neurons), active (B, n_neurons) bool).

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite.
        """
        return self._hidden(self.check_input(x))

    def _hidden(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``hidden`` of a checked x."""
        a = self._normalise(x) @ self.encoder.T  # (B, N)
        k, n = self.current_k, self.config.n_neurons
        if k == n:  # no (k+1)-th neuron: nothing is inhibited, a* = [a]_+
            return a.clamp(min=0), torch.ones_like(a, dtype=torch.bool)
        top = torch.topk(a, k + 1, dim=1).values  # (B, k+1), descending
        # The inhibition is a constant to the neurons it acts on: the authors' code detaches
        # it, so no gradient reaches the (k+1)-th neuron through I.
        inhibition = top[:, k:].clamp(min=0).detach()  # (B, 1), I of Eq. 4
        if self.config.gaba_switch:
            lam = (2 * self.gaba_counts / self.config.gaba_switch_activations - 1).clamp(-1, 1)
            # relu, not clamp: clamp(min=0) passes the gradient at exactly 0, so with λ = 1
            # the (k+1)-th neuron (a − I = 0 exactly, output 0) would still learn
            h = torch.relu(a - lam.to(a.dtype) * inhibition)
            return h, h > 0
        # Exactly k winners, ties by the lowest index (the rule of routing.torch_twins.
        # topk_mask): everything above the k-th value, then equal values left to right.
        kth = top[:, k - 1:k]
        greater, equal = a > kth, a == kth
        need = k - greater.sum(dim=1, keepdim=True)
        active = greater | (equal & (torch.cumsum(equal, dim=1) <= need))
        return (a - inhibition).clamp(min=0) * active, active

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """x (B, d_in) -> (y (B, d_out), {}); see the class docstring.

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite (on the winners-only kernel path
                tested only when the kernel meets non-finite activations, which a non-finite
                x always makes: its normalised row is NaN).
        """
        self.check_input(x, finite=False)
        if self._gather_path(x):
            return self.check_output(self._forward_gathered(x), x), {}
        check_finite_tensor(x, "x")
        h, active = self._hidden(x)  # (B, N) each
        if self.config.gaba_switch and self.training:
            with torch.no_grad():
                self.gaba_counts += active.sum(dim=0).to(torch.float64)
        self.record_usage(weights=active)
        return self.check_output(h @ self.decoder.T, x), {}  # (B, d_out)

    def _gather_path(self, x: torch.Tensor) -> bool:
        """Whether ``forward`` runs the winners-only CPU kernels: float32/float64 on the CPU,
        k < n_neurons and no GABA switch (whose excited neurons are not a fixed k)."""
        return (x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)
                and self.encoder.dtype == x.dtype and not self.config.gaba_switch
                and self.current_k < self.config.n_neurons)

    def _forward_gathered(self, x: torch.Tensor) -> torch.Tensor:
        """``forward`` touching each example's k winners only (``_unit_kernel``): the winners
        and inhibition I of ``hidden`` (same tie rule; the activations are sums in another
        order, so a near-tie at the k-th may fall the other way), y equal up to the order of
        the floating-point sums, and the same gradients (none through I, the clamp's at
        a* = 0 included)."""
        xh = self._normalise(x)
        usage = self.unit_usage if self.track_usage else None  # counted by the kernel
        try:  # the winners of a = X_a x̂, minus I (a constant) of Eq. 4, and the decoder
            y, _ = routed_unit_mlp(xh, None, self.current_k, self.encoder, None, self.decoder,
                                   subtract_next=True, open_at_zero=True, usage=usage,
                                   winners=False)
        except ValueError:  # x was checked but for finiteness: the kernel's error is about x̂
            check_finite_tensor(x, "x")
            raise ValueError("the layer's parameter encoder must be finite; it has NaN or "
                             "infinite entries (the activations are not finite)") from None
        if usage is not None:
            self.examples_seen += x.shape[0]
        return y

    # -- training hooks ---------------------------------------------------------------------
    def set_training_progress(self, epoch: int) -> None:
        """Set k_t for ``epoch`` (>= 0) by Eq. 4; a no-op under the GABA switch.

        Raises:
            ValueError: if ``epoch`` is negative or not an integer.
        """
        c = self.config
        k = annealed_k(epoch, c.k_start, c.k_target, c.anneal_epochs)
        if not c.gaba_switch:
            self._k = k

    @torch.no_grad()
    def after_step(self) -> None:
        """Project onto the constraints (Algorithm 1): encoder and (with ``nonneg_decoder``)
        decoder clamped at >= 0, encoder rows rescaled to unit L2 norm. A row clamped to all
        zeros stays zero: the dead neuron the paper warns of (B.3)."""
        if hasattr(torch.autograd.graph, "increment_version") and all(
                p.device.type == "cpu" and p.dtype in (torch.float32, torch.float64)
                and p.is_contiguous() for p in (self.encoder, self.decoder)):
            project_nonnegative_unit_rows(self.encoder, self.decoder, self.config.nonneg_decoder)
            return
        self.encoder.clamp_(min=0)
        norms = self.encoder.norm(dim=1, keepdim=True)
        self.encoder.div_(norms.clamp_min(torch.finfo(norms.dtype).tiny))
        if self.config.nonneg_decoder:
            self.decoder.clamp_(min=0)

    # -- sizes and costs --------------------------------------------------------------------
    @property
    def activated_units(self) -> int:
        """``current_k``: neurons that can be non-zero per example (nominal k_target under the
        GABA switch, whose count varies while neurons are still excited)."""
        return self.current_k

    @property
    def total_units(self) -> int:
        """n_neurons."""
        return self.config.n_neurons

    def flops_per_example(self) -> int:
        """2·(input_width·n_neurons + current_k·d_out): every address is matched against the
        input, only the k active neurons are read out (C.2: "computing the k most active
        neurons requires multiplying the input with each neuron ... a constant k << r neurons
        produce outputs"). Normalisation and the selection are not multiply-adds and are left
        out; the implementation reads out densely, which is cheap for small d_out."""
        c = self.config
        return 2 * (c.input_width * c.n_neurons + self.current_k * c.d_out)
