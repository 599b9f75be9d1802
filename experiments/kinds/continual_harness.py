"""Class-incremental continual learning on Split data sets (Bricken et al. 2023, §5, App. E.1,
F.3).

The classes are cut into disjoint tasks of ``classes_per_task`` (digits and MNIST: (0, 1),
(2, 3), …, the "naive split" of App. F.3; CIFAR-10: a random order per seed, as §5's five
random task splits). A model is trained on task 1, then task 2, … with no replay and no task
label; it is always evaluated over *all* classes (the class-incremental setting, §5). After
task i the test accuracy on each task j gives the accuracy matrix R[i, j]; from it

* final accuracy: accuracy on the whole test set after the last task (§5's "validation
  accuracy", Tables 1, 3, 7);
* average accuracy: mean_j R[T−1, j];
* forgetting: mean over j < T−1 of max_{i < T−1} R[i, j] − R[T−1, j] (Chaudhry et al. 2018);
  0 for the joint oracle, trained once on every task (no task is learnt after another);
* learning accuracy: mean_j R[j, j], each task right after it was learnt (plasticity: a model
  that stops learning forgets little but learns little; ``learning_accuracy``);
* dead neurons per task: after each task, the share of hidden units active for no test input
  (Bricken et al. App. C.1 Fig. 14b, App. B.3 Fig. 10c: "not active for any of the
  validation inputs").

Every model is a registered router (``experiments.kinds.routers``: one ``RouterKind`` builds
its layer for a sweep, d_out = 1, and here, d_out = the number of classes) with the harness's
options (``ContinualModel``: its training rule, EWC, joint training, parameter matching); the
built-in ones (``MODELS``) are the routers of ``routing.layers`` and Bricken et al.'s
baselines: the Top-K MLP, SDMLP with masking (Table 2's "Linear Mask"), the ReLU MLP with EWC
(Kirkpatrick et al. 2017), SDMLP + EWC (their best model on Split MNIST, Table 7) and the
joint-training "oracle". A router registered since (a user's) runs with its defaults.

Matched parameters. The reference is the ReLU MLP of the preset (one
hidden layer of N = ``n_neurons`` units, biases included). Every other kind keeps its k
active units and searches its router's size knob (``RouterKind.knob``: SDMLP's neurons, the
MoEs' and SMEAR's expert count, PKM's n_keys, …) for the trainable-parameter count closest to the
reference's (``ContinualModel.match``), within ``param_tolerance`` (±5 % by default) or, where the
steps of that argument cannot reach it, the closest achievable with the reason recorded. The
choice is a function of the preset and the data's shape alone, made before any training.
Bricken et al. compare their models at equal neuron counts, "approximately the same number of
parameters … ignoring bias terms", and do "not consider the activation sparsity of the Top-K
models in [their] parameter counts" (App. F.3, footnote 17); so do we, counting biases too.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn

import experiments.kinds.routers  # noqa: F401  (registers the routers every model is built from)
from experiments.kinds.image_models import TopKMLP, TrainSettings, accuracy, fit_classifier
from experiments.kinds.registry import model_kind
from routing.layers import COMET, SDMLP, DenseMLP
from routing.validation import (check_bool, check_choice, check_finite_tensor, check_int,
                                check_points, check_real, check_seed)

__all__ = ["ContinualSettings", "ContinualModel", "MODELS", "ORACLE", "REFERENCE",
           "TRAINING_RULES", "register", "unregister", "class_split",
           "task_masks", "average_accuracy", "forgetting", "learning_accuracy", "unit_activity",
           "EWC", "run_continual_model"]

ORACLE = "oracle (ReLU MLP, joint)"


@dataclass(frozen=True)
class ContinualSettings:
    """Sizes and training of a continual-learning run.

    Attributes:
        n_tasks, classes_per_task: the split (>= 1 each; n_tasks · classes_per_task classes).
        class_order: "naive" ((0, 1), (2, 3), …: App. F.3) or "random" (a permutation of the
            classes drawn from the run's seed: §5's random task splits).
        n_neurons: hidden units N of the reference ReLU MLP (>= 4), whose trainable
            parameters every model matches (module docstring); 1,000 in the paper (§5).
        k: activated units per example of every sparse model (1 <= k <= N); 10 in §5 (1
            also shown).
        n_experts: sets the preferred expert size N / n_experts of σ-MoE and top-k MoE (k a
            multiple of it, k / expert size experts active); their expert count is then
            chosen to match parameters. SMEAR merges experts of k units; PKM has n_keys²
            value slots, k active; both choose their count to match parameters.
        param_tolerance: largest |params − reference| / reference counted as matched
            (in (0, 1); 0.05: ±5 %).
        epochs_per_task: passes over each task's training data (>= 1); 500 on Split MNIST
            (F.3), 2,000 on Split CIFAR-10 (§5).
        batch_size: examples per step (>= 1); 128 in App. B.3's discussion.
        sgd_lr: learning rate of plain SGD for SDMLP, SDMLP (mask), Top-K, ReLU MLP and EWC
            (Bricken et al. train these with SGD, §4 and App. D, footnote 8).
        sdm_lr: SGD rate of SDMLP and SDMLP (mask) (its L2-normalised activations are
            smaller than the ReLU MLP's).
        ewc_lambda: EWC coefficient λ of λ/2 Σ F_i (θ_i − θ*_i)² (>= 0) for the ReLU MLP.
        sdm_ewc_lambda: the same coefficient for SDMLP + EWC (>= 0); its own, as Bricken et
            al. suggest the combination may want a smaller one (App. F.3, footnote 18).

    The defaults of sdm_lr (0.3 of 0.3, 1, 3), sgd_lr (0.1 of 0.01, 0.03, 0.1, 0.3: the ReLU
    MLP forgot to ~0.19 at all four) and ewc_lambda (3e4 of 1e4, 3e4, 1e5, 3e5, 1e6, 1e7) are
    the best final accuracy of each on Split digits with seed 100 (N = 256, k = 8, 40 epochs a
    task), a calibration seed that no verdict uses; the rule is
    ``experiments.papers.real_data.calibration``'s (the presets use its values on their own data and
    epochs where it was run: ``experiments.papers.real_data.CALIBRATED_RATES``).
        fisher_samples: training examples per task whose per-example gradients estimate the
            diagonal Fisher (>= 1).
        evals_per_task: test-set evaluations per task for the Fig. 3-style curve (>= 1).
        anneal_fraction: SDMLP anneals k from N to k over this fraction of the first task's
            epochs (in (0, 1]); §5 anneals during pretraining, F.3 (no pretraining) "well
            within the first task".

    Raises:
        ValueError: values out of range or inconsistent (k not a multiple of the expert size).
    """

    n_tasks: int = 5
    classes_per_task: int = 2
    class_order: str = "naive"
    n_neurons: int = 256
    k: int = 8
    n_experts: int = 32
    epochs_per_task: int = 40
    batch_size: int = 32
    sgd_lr: float = 0.1
    sdm_lr: float = 0.3
    ewc_lambda: float = 3e4
    sdm_ewc_lambda: float = 3e4
    fisher_samples: int = 200
    evals_per_task: int = 4
    anneal_fraction: float = 0.5
    param_tolerance: float = 0.05

    def __post_init__(self):
        check_int(self.n_tasks, "n_tasks", 1)
        check_int(self.classes_per_task, "classes_per_task", 1)
        check_choice(self.class_order, "class_order", ("naive", "random"))
        check_int(self.n_neurons, "n_neurons", 4)
        check_int(self.k, "k", 1, self.n_neurons)
        check_int(self.n_experts, "n_experts", 1, self.n_neurons)
        if self.n_neurons % self.n_experts or self.k % (self.n_neurons // self.n_experts):
            raise ValueError(f"n_neurons ({self.n_neurons}) must be a multiple of n_experts "
                             f"({self.n_experts}) and k ({self.k}) a multiple of the expert "
                             f"size {self.n_neurons // self.n_experts}")
        check_int(self.epochs_per_task, "epochs_per_task", 1)
        check_int(self.batch_size, "batch_size", 1)
        check_real(self.sgd_lr, "sgd_lr", 0.0, low_open=True)
        check_real(self.sdm_lr, "sdm_lr", 0.0, low_open=True)
        check_real(self.ewc_lambda, "ewc_lambda", 0.0)
        check_real(self.sdm_ewc_lambda, "sdm_ewc_lambda", 0.0)
        check_int(self.fisher_samples, "fisher_samples", 1)
        check_int(self.evals_per_task, "evals_per_task", 1)
        check_real(self.anneal_fraction, "anneal_fraction", 0.0, 1.0, low_open=True)
        check_real(self.param_tolerance, "param_tolerance", 0.0, 1.0, low_open=True,
                   high_open=True)

    @property
    def expert_size(self) -> int:
        """N / n_experts."""
        return self.n_neurons // self.n_experts

    def to_dict(self) -> dict:
        return asdict(self)


# -- the split -------------------------------------------------------------------------------

def class_split(n_tasks: int, classes_per_task: int, order: str = "naive",
                seed: int = 0) -> list[tuple[int, ...]]:
    """The classes of each task: consecutive groups of ``classes_per_task`` of 0..C−1
    ("naive") or of a permutation drawn by ``np.random.default_rng(seed)`` ("random").

    Returns:
        [(c, …), …] of ``n_tasks`` disjoint tuples.

    Raises:
        ValueError: arguments out of range.
    """
    n_tasks, per = check_int(n_tasks, "n_tasks", 1), check_int(classes_per_task,
                                                                 "classes_per_task", 1)
    check_choice(order, "order", ("naive", "random"))
    seed = check_seed(seed)  # checked for either order: a bad seed is never ignored
    classes = np.arange(n_tasks * per)
    if order == "random":
        classes = np.random.default_rng(seed).permutation(classes)
    return [tuple(int(c) for c in classes[i * per:(i + 1) * per]) for i in range(n_tasks)]


def task_masks(y: np.ndarray, tasks: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Boolean masks (N,) of the examples of each task.

    Raises:
        ValueError: a task with no example in y.
    """
    masks = [np.isin(y, task) for task in tasks]
    for task, mask in zip(tasks, masks):
        if not mask.any():
            raise ValueError(f"task {task} has no example among the labels given")
    return masks


# -- metrics ---------------------------------------------------------------------------------

def _check_accuracies(R) -> np.ndarray:
    """R as a finite (T, T) float64 array of accuracies, T >= 1, else ValueError."""
    R = check_points(R, None, "R")
    if R.shape[0] != R.shape[1] or R.shape[0] == 0:
        raise ValueError(f"R must be a square (T, T) accuracy matrix with T >= 1, got shape "
                         f"{R.shape}")
    if R.size and np.abs(R).max() > 1e300:  # accuracies are O(1): their mean would overflow
        raise ValueError(f"R must hold accuracies (of order 1), got |entry| up to "
                         f"{np.abs(R).max():.3g}")
    return R


def average_accuracy(R: np.ndarray) -> float:
    """mean_j R[T−1, j] of the (T, T) accuracy matrix R (R[i, j]: task j after task i).

    Raises:
        ValueError: R is not a square finite real matrix (T, T), T >= 1.
    """
    R = _check_accuracies(R)
    return float(R[-1].mean())


def forgetting(R: np.ndarray) -> float:
    """Average forgetting (Chaudhry et al. 2018): mean over j < T−1 of
    max_{i < T−1} R[i, j] − R[T−1, j], taking only i >= j (a task is not forgotten before it
    is learnt); 0 for one task. In accuracy units (0..1); negative when later tasks help.

    Raises:
        ValueError: R is not a square finite real matrix (T, T), T >= 1.
    """
    R = _check_accuracies(R)
    T = len(R)
    if T < 2:
        return 0.0
    drops = [R[j:T - 1, j].max() - R[T - 1, j] for j in range(T - 1)]
    return float(np.mean(drops))


def learning_accuracy(R: np.ndarray) -> float:
    """Learning accuracy: mean_j R[j, j], each task's test accuracy right after training on
    it (Riemer et al. 2019's "learning accuracy"; the plasticity whose loss Chaudhry et al.
    2018 call intransigence). A model that stops learning new tasks has a low one however
    little it forgets. In accuracy units (0..1).

    Raises:
        ValueError: R is not a square finite real matrix (T, T), T >= 1.
    """
    R = _check_accuracies(R)
    return float(np.diag(R).mean())


@torch.no_grad()
def unit_activity(model: nn.Module, X: torch.Tensor, batch_size: int = 4096) -> torch.Tensor:
    """(n_units,) bool: which hidden units are active for at least one row of X.

    "Active" is a positive post-activation where the model has one (SDMLP and its masking
    variant: a* > 0 of Eq. 4; ``TopKMLP``: a kept ReLU > 0; ``DenseMLP``: ReLU > 0; COMET:
    masked f(a) > 0, its three hidden layers concatenated), so a unit that is never active
    gets no gradient: Bricken et al.'s dead neuron (§4, App. B.3). For the MoE layers (σ-MoE,
    top-k MoE, PKM, SMEAR) a unit is an expert (PKM: a value slot) and active means routed to
    (``RouterLayer``'s usage counters); SMEAR merges every expert with a softmax weight > 0,
    so none of its experts is ever dead by this measure. An X without rows activates no unit.

    Raises:
        ValueError: ``X`` not a finite (n, d_in) tensor of the model's dtype (its
            ``check_input``), ``batch_size`` not an integer >= 1.
    """
    batch_size = check_int(batch_size, "batch_size", 1)
    if hasattr(model, "check_input"):
        try:
            model.check_input(X)
        except ValueError as error:
            raise ValueError(f"X: {error}") from None
    for kind, read in _ACTIVITY.items():
        if isinstance(model, kind):
            parts = [read(model, X[i:i + batch_size]).any(dim=0)
                     for i in range(0, max(len(X), 1), batch_size)]
            return torch.stack(parts).any(dim=0)
    layer = model
    tracking = layer.track_usage
    layer.reset_usage()
    layer.track_usage = True
    try:
        for i in range(0, len(X), batch_size):
            layer(X[i:i + batch_size])
    finally:
        layer.track_usage = tracking
    return layer.unit_usage > 0


_ACTIVITY: dict[type, Callable[[nn.Module, torch.Tensor], torch.Tensor]] = {
    SDMLP: lambda m, x: m.hidden(x)[0] > 0,  # SDMLPMask included (a subclass)
    TopKMLP: lambda m, x: m.activations(x)[0] > 0,
    DenseMLP: lambda m, x: torch.relu(m.hidden(x)) > 0,
    COMET: lambda m, x: torch.cat(m.hidden_activations(x), dim=1) > 0,
}


# -- EWC -------------------------------------------------------------------------------------

class EWC:
    """Elastic weight consolidation (Kirkpatrick et al. 2017): after each task t, the diagonal
    empirical Fisher F_t (mean over up to ``fisher_samples`` training examples of the squared
    per-example gradient of log p(y | x)) and the parameters θ*_t are stored; the penalty is

        λ/2 Σ_t Σ_i F_t,i (θ_i − θ*_t,i)².

    Bricken et al. 2023 add a β to the softmax of EWC's outputs (App. G.1); not done here.

    Arguments:
        model: the network (maps x to (logits, aux)).
        lam: λ >= 0. fisher_samples: >= 1.

    Raises:
        ValueError: ``lam`` < 0 or not real, ``fisher_samples`` < 1 or not an integer.
    """

    def __init__(self, model: nn.Module, lam: float, fisher_samples: int):
        self.model, self.lam = model, check_real(lam, "lam", 0.0)
        self.fisher_samples = check_int(fisher_samples, "fisher_samples", 1)
        self.tasks = 0
        # Σ_t F_t (θ − θ*_t)² = A θ² − 2 B θ + C with A = Σ F_t, B = Σ F_t θ*_t,
        # C = Σ F_t θ*_t²: one pass over the parameters whatever the number of tasks
        self._terms: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def _params(self) -> list[torch.Tensor]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def consolidate(self, X: torch.Tensor, y: torch.Tensor, seed: int) -> None:
        """Store F_t and θ*_t for the task (X, y) just learnt.

        Arguments:
            X: (N, ...) float tensor the model takes, N >= 1; y: (N,) int64 class labels.
            seed: seed of the choice of the ``fisher_samples`` examples, >= 0.

        Raises:
            ValueError: X not a finite tensor (every row is checked, not only the sampled
                ones), no example, X and y of different lengths, a bad seed, X so large
                that the Fisher information overflows; X as the model's ``forward`` checks it.
        """
        seed = check_seed(seed)
        if not isinstance(X, torch.Tensor):
            raise ValueError(f"X must be a torch.Tensor, got {type(X).__name__}")
        check_finite_tensor(X, "X")  # every row: only the sampled ones reach the model
        if len(X) == 0 or len(X) != len(y):  # no example: F_t would be 0/0 = NaN
            raise ValueError(f"X and y must have the same positive number of rows, got "
                             f"{len(X)} and {len(y)}")
        params = self._params()
        fisher = [torch.zeros_like(p) for p in params]
        generator = torch.Generator().manual_seed(seed)
        rows = torch.randperm(len(X), generator=generator)[:self.fisher_samples].to(X.device)
        was_training = self.model.training
        self.model.eval()
        for i in rows:
            logits, _ = self.model(X[i:i + 1])
            loss = nn.functional.cross_entropy(logits, y[i:i + 1])
            grads = torch.autograd.grad(loss, params, allow_unused=True)
            for f, g in zip(fisher, grads):
                if g is not None:
                    f += g.detach() ** 2
        self.model.train(was_training)
        terms = []
        for j, (f, p) in enumerate(zip(fisher, params)):
            f, theta = f / len(rows), p.detach()
            new = (f, f * theta, f * theta ** 2)
            if self._terms:
                new = tuple(old + add for old, add in zip(self._terms[j], new))
            terms.append(new)
        if not all(bool(torch.isfinite(t).all()) for new in terms for t in new):
            raise ValueError(f"X: the Fisher information of these examples overflows "
                             f"{params[0].dtype} (largest |X| {float(X.abs().max()):.3g}): "
                             f"rescale X")
        self._terms = terms
        self.tasks += 1

    def penalty(self) -> torch.Tensor:
        """λ/2 Σ_t Σ_i F_t,i (θ_i − θ*_t,i)² (a scalar tensor; 0 before the first task)."""
        params = self._params()
        total = params[0].new_zeros(())
        for (a, b, c), p in zip(self._terms, params):
            total = total + (a * p * p - 2 * b * p + c).sum()
        return 0.5 * self.lam * total


# -- the models ------------------------------------------------------------------------------

#: The model whose trainable parameters every other one matches: the preset's ReLU MLP.
REFERENCE = "ReLU MLP"
#: How a harness model is trained: "sgd" (plain SGD at ``sgd_lr``: Bricken et al.'s baselines),
#: "sdm" (plain SGD at ``sdm_lr``: SDMLP), "own" (the layer config's optimiser and rate).
TRAINING_RULES = ("sgd", "sdm", "own")


@dataclass(frozen=True)
class ContinualModel:
    """A model of the continual-learning harness: a registered router
    (``experiments.kinds.routers.RouterKind``, which builds its layer with d_out = the number
    of classes and names the size knob searched to match parameters) and how the harness
    trains it. EWC, joint training and parameter matching are options of the harness, not
    kinds of their own.

    Attributes:
        kind: the router's registry name ("sdmlp", "dense_mlp", a user's "hash_moe", …).
        label: its name in results (``model_label``) and plots; "" takes the router's label.
        rule: the training rule, one of ``TRAINING_RULES``.
        ewc: train with the EWC penalty; its λ is ``settings.ewc_lambda``, or
            ``settings.sdm_ewc_lambda`` where ``ewc_lambda`` names that field.
        joint: train once on all tasks together (the oracle), not task by task.
        grad_clip: gradient-norm clip of its training (None: its layers' default).
        param_matching: search the router's knob to match the reference's trainable
            parameters (``match``); False: the preset's sizes, reported as matched only if
            they happen to be within the tolerance.
        layer_options: settings -> further arguments of the router's layer (SDMLP's image
            setting: non-negative decoder, x/‖x‖, k annealed over part of the first task), or
            None.
        size_rule: how the size is chosen, in words ("": the router's ``size_rule``).
        source: paper and section ("": the router's).

    Raises:
        ValueError: ``kind`` no registered router, ``label`` or ``size_rule`` not a string,
            ``rule`` not one of ``TRAINING_RULES``, ``ewc``, ``joint`` or ``param_matching``
            not a bool, ``ewc_lambda`` not "ewc_lambda" or "sdm_ewc_lambda", ``grad_clip`` not
            a real > 0.
        TypeError: ``layer_options`` neither callable nor None.
    """

    kind: str
    label: str = ""
    rule: str = "own"
    ewc: bool = False
    ewc_lambda: str = "ewc_lambda"
    joint: bool = False
    grad_clip: float | None = None
    param_matching: bool = True
    layer_options: Callable | None = None
    size_rule: str = ""
    source: str = ""

    def __post_init__(self):
        router = _router(self.kind)  # a registered router, else ValueError naming them
        for name in ("label", "size_rule", "source"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")
        object.__setattr__(self, "label", self.label or router.label)
        check_choice(self.rule, "rule", TRAINING_RULES)
        check_bool(self.ewc, "ewc")
        check_choice(self.ewc_lambda, "ewc_lambda", ("ewc_lambda", "sdm_ewc_lambda"))
        check_bool(self.joint, "joint")
        check_bool(self.param_matching, "param_matching")
        if self.grad_clip is not None:
            check_real(self.grad_clip, "grad_clip", 0.0, low_open=True)
        if self.layer_options is not None and not callable(self.layer_options):
            raise TypeError(f"layer_options must be callable or None, got "
                            f"{self.layer_options!r}")

    @property
    def router(self):
        """The registered ``RouterKind`` of ``kind``."""
        return _router(self.kind)

    @property
    def knob(self) -> str:
        """The size argument ``match`` searches ("" with parameter matching off)."""
        return self.router.knob if self.param_matching else ""

    def make(self, d_in: int, n_classes: int, settings: ContinualSettings, seed: int,
             size: dict | None = None) -> nn.Module:
        """The model with ``size`` (``match``'s "size"; None or {}: the preset's sizes, the
        router's ``sizes`` of N = ``n_neurons``, k and n_experts) for ``d_in`` inputs and
        ``n_classes`` outputs, for a training of n_tasks · epochs_per_task passes."""
        router = self.router
        arguments = {**router.sizes(settings.n_neurons, settings.k, settings.n_experts),
                     **(size or {})}
        if self.layer_options is not None:
            arguments.update(self.layer_options(settings))
        return router.make_layer(d_in, n_classes, seed,
                                 settings.n_tasks * settings.epochs_per_task, **arguments)

    def training(self, settings: ContinualSettings, model: nn.Module | None = None) -> tuple:
        """(optimizer, lr) by ``rule``; "own" reads ``model``'s config (None: the model at
        the preset's sizes on 2 inputs and 2 classes, built without touching the global
        torch random state)."""
        if self.rule == "sgd":
            return "sgd", settings.sgd_lr
        if self.rule == "sdm":
            return "sgd", settings.sdm_lr
        if model is None:
            with torch.random.fork_rng(devices=[]):
                model = self.make(2, 2, settings, 0)
        return model.config.optimizer, model.config.lr

    def count_params(self, d_in: int, n_classes: int, settings: ContinualSettings,
                     size: dict | None = None) -> int:
        """Trainable parameters of ``make(d_in, n_classes, settings, 0, size)``; the global
        torch random state is left as it was."""
        with torch.random.fork_rng(devices=[]):
            model = self.make(d_in, n_classes, settings, 0, size)
        return sum(p.numel() for p in model.parameters() if p.requires_grad)

    def match(self, d_in: int, n_classes: int, settings: ContinualSettings) -> dict:
        """The size whose trainable-parameter count is closest to the reference's (the ReLU
        MLP of ``settings.n_neurons`` hidden units on ``d_in`` inputs and ``n_classes``
        outputs), chosen from the settings and these two numbers alone: the router's knob
        searched over its families (``RouterKind.families``), the first family whose closest
        size is within ``param_tolerance`` taken, else the closest of all.

        Returns:
            a JSON-serialisable dict: size (the knob and the family's fixed arguments; {}
            without a knob or with parameter matching off), params, reference_params,
            relative_difference ((params − reference) / reference), matched
            (|relative_difference| <= param_tolerance) and rule (how the size was chosen and,
            when not matched, why).

        Raises:
            ValueError: the model cannot be built on these sizes (its layer's message).
            RuntimeError: a router whose parameter count is not a non-decreasing polynomial
                of degree <= 2 in its knob.
        """
        ref = MODELS[REFERENCE].count_params(d_in, n_classes, settings)
        tol = settings.param_tolerance
        knob = self.knob
        if not knob:
            params = self.count_params(d_in, n_classes, settings)
            rel = (params - ref) / ref
            rule = ("the preset's sizes (the kind has no size to search)" if
                    self.param_matching else "the preset's sizes (parameter matching off)")
            if abs(rel) > tol:
                rule += f"; not matched: {rel:+.1%} and no size to choose"
            return _record({}, params, ref, tol, rule)
        families = self.router.families(settings.n_neurons, settings.k, settings.n_experts)
        if not families:
            raise ValueError(f"router {self.kind!r}: its families must give at least one range "
                             f"of its knob {knob!r}, got none")
        tried = []
        for fixed, low, high, note in families:
            def count(n, fixed=fixed):
                return self.count_params(d_in, n_classes, settings, {**fixed, knob: n})

            n, params = _closest_size(count, ref, low, high)
            tried.append(dict(fixed=fixed, low=low, high=high, note=note, n=n, params=params,
                              count=count))
            if abs(params - ref) <= tol * ref:
                break
        within = abs(tried[-1]["params"] - ref) <= tol * ref
        best = tried[-1] if within else min(tried, key=lambda t: abs(t["params"] - ref))
        n, params, note = best["n"], best["params"], best["note"]
        rule = (f"{knob} = {n}" + (f" ({note})" if note else "")
                + f": {self.size_rule or self.router.size_rule}")
        passed = [t for t in tried if t is not best]
        if within and passed:
            rule += "; " + "; ".join(f"{t['note']}: at best {(t['params'] - ref) / ref:+.1%}"
                                     for t in passed)
        if not within:
            if n == best["low"] and params > ref:
                why = (f"the smallest {knob} allowed ({n}) already has {params:,} "
                       f"parameters")
            else:
                step = best["count"](n + 1) - params
                why = (f"one step of {knob} moves the count by {step:,} ({step / ref:.1%} "
                       f"of the reference's {ref:,}), too coarse for ±{tol:.0%}")
            if len(tried) > 1:
                why += f" (and so at each of the {len(tried)} choices tried)"
            rule += f"; not matched: {why}; the closest achievable is {(params - ref) / ref:+.1%}"
        return _record({**best["fixed"], knob: n}, params, ref, tol, rule)


def _router(name):
    """The registered router ``name`` (``experiments.kinds.routers``), else ValueError."""
    from experiments.kinds.routers import router_names

    if name not in router_names():
        raise ValueError(f"kind must be a registered router, one of {router_names()}, got "
                         f"{name!r}")
    return model_kind(name)


def _record(size: dict, params: int, ref: int, tol: float, rule: str) -> dict:
    rel = (params - ref) / ref
    return {"size": size, "params": int(params), "reference_params": int(ref),
            "relative_difference": round(rel, 6), "matched": bool(abs(rel) <= tol),
            "rule": rule}


def _closest_size(count: Callable[[int], int], target: int, low: int,
                  high: int | None) -> tuple[int, int]:
    """(n, count(n)) for the integer n in [low, high] (high None: no bound) whose count is
    closest to ``target``, ties to the smaller n.

    ``count`` must be a non-decreasing polynomial of degree <= 2 in n — a width or an expert
    count: linear; PKM's n_keys: quadratic (n_keys² value slots). It is read at low … low + 3
    (small models, cheap to build whatever the target), solved in closed form, and read again
    at the answer to check.

    Raises:
        RuntimeError: ``count`` is not such a polynomial.
    """
    if high is not None and high - low < 4:
        return min(((n, count(n)) for n in range(low, high + 1)),
                   key=lambda t: (abs(t[1] - target), t[0]))
    c0, c1, c2, c3 = (count(low + i) for i in range(4))
    d1, d2 = c1 - c0, c2 - 2 * c1 + c0
    if c3 - 3 * c2 + 3 * c1 - c0 or d1 < 0 or d2 < 0:
        raise RuntimeError(f"the parameter count {c0}, {c1}, {c2}, {c3} at {low}…{low + 3} is "
                           f"not a non-decreasing polynomial of degree <= 2")

    def p(m: int) -> int:  # count(low + m), exactly (Newton's forward differences)
        return c0 + m * d1 + m * (m - 1) // 2 * d2

    a, b, c = d2 / 2, d1 - d2 / 2, c0 - target  # a m² + b m + c = 0
    if a > 0:
        root = (-b + math.sqrt(max(b * b - 4 * a * c, 0.0))) / (2 * a)
    else:
        root = -c / b if b > 0 else 0.0
    top = math.inf if high is None else high - low
    guesses = {int(min(max(v, 0), top)) for v in (math.floor(root) - 1, math.floor(root),
                                                     math.ceil(root), math.ceil(root) + 1)}
    m = min(guesses, key=lambda m: (abs(p(m) - target), m))
    got = count(low + m)
    if got != p(m):
        raise RuntimeError(f"the parameter count at {low + m} is {got}, not {p(m)} as its "
                           f"values at {low}…{low + 3} predict (not a polynomial of degree <= 2)")
    return low + m, got


def _image_sdm(s: ContinualSettings) -> dict:
    """SDMLP's layer on images, Bricken et al.'s own setting: non-negative pixels, x/‖x‖ and
    a non-negative decoder; k annealed from N to k over ``anneal_fraction`` of the first
    task's epochs; SGD at ``sdm_lr`` recorded in its config."""
    return {"anneal_epochs": max(1, int(round(s.anneal_fraction * s.epochs_per_task))),
            "lift_inputs": False, "nonneg_decoder": True, "optimizer": "sgd", "lr": s.sdm_lr}


class _Models(Mapping):
    """label -> ``ContinualModel``, read-only: the entries ``register`` made, then one entry
    (its defaults: the router's label, its own training, parameters matched) for every
    registered router that no entry builds — a user's (``sparselab scale --module``). A
    router's registry name finds its plain entry (no EWC, not joint) too."""

    def _entries(self) -> dict[str, ContinualModel]:
        from experiments.kinds.routers import router_names

        entries = dict(_ENTRIES)
        used = {entry.kind for entry in entries.values()}
        for name in router_names():
            if name not in used:
                entry = ContinualModel(name)
                entries[entry.label if entry.label not in entries else name] = entry
        return entries

    def __getitem__(self, key) -> ContinualModel:
        entries = self._entries()
        if isinstance(key, str):
            if key in entries:
                return entries[key]
            for entry in entries.values():
                if entry.kind == key and not (entry.ewc or entry.joint):
                    return entry
        raise KeyError(key)

    def __iter__(self):
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def __repr__(self) -> str:
        return f"MODELS({list(self)})"


_ENTRIES: dict[str, ContinualModel] = {}
#: Every model of the harness by label (a read-only view; ``register`` adds one).
MODELS = _Models()


def register(entry: ContinualModel) -> ContinualModel:
    """Add the harness model ``entry`` (a registered router and its training options) under
    its label; a user's router needs none to run with its defaults (``MODELS``).

    Raises:
        TypeError: ``entry`` is not a ``ContinualModel``.
    """
    if not isinstance(entry, ContinualModel):
        raise TypeError(f"entry must be a ContinualModel, got {entry!r}")
    _ENTRIES[entry.label] = entry
    return entry


def unregister(label: str) -> None:
    """Remove the entry ``register`` added under ``label``.

    Raises:
        ValueError: no entry of that label was registered.
    """
    if not isinstance(label, str) or label not in _ENTRIES:
        raise ValueError(f"label must be a registered entry's, one of {tuple(_ENTRIES)}, got "
                         f"{label!r}")
    del _ENTRIES[label]


_SDM = dict(rule="sdm", layer_options=_image_sdm)
register(ContinualModel("sdmlp", **_SDM))
register(ContinualModel("sdmlp_mask", **_SDM))
# SGD, not the SGD with momentum Bricken et al. found slightly better for it (§5, footnote 8);
# clipped at 1 as EWC: the penalty's step lr·λ·F is stiff
register(ContinualModel("sdmlp", "SDMLP + EWC", ewc=True, ewc_lambda="sdm_ewc_lambda",
                        grad_clip=1.0, size_rule="as SDMLP (EWC's Fisher and anchors are "
                        "buffers)", source="Bricken et al. 2023, §5 Fig. 3, Table 7 'SDMLP+EWC'",
                        **_SDM))
register(ContinualModel("topk_mlp", rule="sgd"))
register(ContinualModel("dense_mlp", REFERENCE, rule="sgd",
                        size_rule="the reference, N = n_neurons of the preset"))
# clipped at 1 as SDMLP: plain SGD on the stiff EWC penalty (step lr·λ·F) diverges otherwise
register(ContinualModel("dense_mlp", "EWC (ReLU MLP)", rule="sgd", ewc=True, grad_clip=1.0,
                        size_rule="the ReLU MLP's network (EWC's Fisher and anchors are "
                        "buffers)", source="Kirkpatrick et al. 2017; Bricken et al. 2023, §5"))
for _name in ("comet", "sigma_moe", "topk_moe", "pkm", "smear"):
    register(ContinualModel(_name))  # each router's own optimiser and rate
register(ContinualModel("dense_mlp", ORACLE, rule="sgd", joint=True,
                        size_rule="the ReLU MLP's network",
                        source="Bricken et al. 2023, Table 7 'Oracle' (all tasks at once)"))


# -- one run ---------------------------------------------------------------------------------

def run_continual_model(model, data: tuple, settings: ContinualSettings, seed: int,
                        device: torch.device | str = "cpu", matched: dict | None = None) -> dict:
    """Train ``model`` task after task and measure it.

    Arguments:
        model: a ``ContinualModel``, or a key of ``MODELS`` (a label, or a registered
            router's name: its plain entry).
        data: (X_train (N, d) float32, y_train (N,) int64, X_test (M, d), y_test (M,)) numpy
            arrays, pixels flattened (the harness's input).
        settings: ``ContinualSettings``.
        seed: >= 0; the model's initialisation, the minibatch order and (class_order
            "random") the split.
        device: torch device.
        matched: ``model.match(d, classes, settings)`` for these data (what a config
            recorded); None: computed here.

    Returns:
        a dict: model (the router's registry name), ewc, joint (the harness options it ran
        with), tasks (JSON list of the classes), acc_matrix (JSON T×T), curve (JSON list of
        (tasks trained, test accuracy) pairs, ``evals_per_task`` per task), dead_per_task
        (JSON list), final_accuracy, average_accuracy, forgetting, learning_accuracy (mean of
        R's diagonal; the oracle's: its last row's mean), dead_fraction (after the last task), n_units, activated_units, params, relu_mlp_params (the reference's),
        params_rel_diff ((params − reference) / reference), params_matched (within
        ``settings.param_tolerance``), size (JSON of the size arguments chosen), sizing (how
        they were chosen; why not matched where not), optimizer, lr, wall_s.

    Raises:
        ValueError: an unknown model, bad seed, data that do not hold every task's classes, or a
            ``matched`` that is not ``match``'s record for these data and settings.
    """
    kind = model if isinstance(model, ContinualModel) else MODELS.get(model)
    if kind is None:
        raise ValueError(f"model must be one of {tuple(MODELS)} (or a registered router's "
                         f"name, or a ContinualModel), got {model!r}")
    label = kind.label
    seed = check_seed(seed)
    device = torch.device(device)
    X_train, y_train, X_test, y_test = data
    tasks = class_split(settings.n_tasks, settings.classes_per_task, settings.class_order,
                        seed)
    train_masks, test_masks = task_masks(y_train, tasks), task_masks(y_test, tasks)
    n_classes = int(max(max(t) for t in tasks) + 1)
    Xtr = torch.as_tensor(X_train, dtype=torch.float32, device=device)
    ytr = torch.as_tensor(y_train, dtype=torch.int64, device=device)
    Xte = torch.as_tensor(X_test, dtype=torch.float32, device=device)
    yte = torch.as_tensor(y_test, dtype=torch.int64, device=device)
    start = time.perf_counter()
    if matched is None:
        matched = kind.match(Xtr.shape[1], n_classes, settings)
    if not isinstance(matched, dict) or not {"size", "params", "reference_params",
                                             "relative_difference", "matched",
                                             "rule"} <= set(matched):
        raise ValueError(f"matched must be ContinualModel.match's record (a dict with size, params, "
                         f"reference_params, relative_difference, matched, rule), got "
                         f"{matched!r}")
    torch.manual_seed(seed)
    model = kind.make(Xtr.shape[1], n_classes, settings, seed, matched["size"]).to(device)
    built = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if built != matched["params"]:
        raise ValueError(f"matched records {matched['params']} parameters for {label!r} but "
                         f"its size {matched['size']} builds {built} on {Xtr.shape[1]} inputs "
                         f"and {n_classes} classes: it was matched for other data or settings")
    optimizer, lr = kind.training(settings, model)
    train = TrainSettings(epochs=settings.epochs_per_task, batch_size=settings.batch_size,
                          optimizer=optimizer, lr=lr, grad_clip=kind.grad_clip)
    every = max(1, settings.epochs_per_task // settings.evals_per_task)
    curve: list[tuple[float, float]] = []
    R = np.full((settings.n_tasks, settings.n_tasks), np.nan)
    dead: list[float] = []
    test_rows = [torch.as_tensor(np.flatnonzero(m), device=device) for m in test_masks]

    def measure(i: int) -> None:
        R[i] = [accuracy(model, Xte[rows], yte[rows]) for rows in test_rows]
        active = unit_activity(model, Xte)
        dead.append(float((~active).double().mean()))

    if kind.joint:  # the oracle: every task at once, as many steps as the sequence
        joint = TrainSettings(epochs=settings.epochs_per_task, batch_size=settings.batch_size,
                              optimizer=optimizer, lr=lr)
        rows = np.flatnonzero(np.any(train_masks, axis=0))
        fit_classifier(model, Xtr[rows], ytr[rows], joint, seed=seed, on_epoch=lambda e: (
            curve.append((settings.n_tasks * (e + 1) / joint.epochs, accuracy(model, Xte, yte)))
            if (e + 1) % every == 0 else None))
        measure(settings.n_tasks - 1)
        R[:-1] = np.nan
        dead = dead * settings.n_tasks
    else:
        ewc = (EWC(model, getattr(settings, kind.ewc_lambda), settings.fisher_samples)
               if kind.ewc else None)
        for i, mask in enumerate(train_masks):
            rows = torch.as_tensor(np.flatnonzero(mask), device=device)
            fit_classifier(model, Xtr[rows], ytr[rows], train, seed=seed * 1000 + i,
                           epoch_offset=i * settings.epochs_per_task,
                           penalty=ewc.penalty if ewc is not None and ewc.tasks else None,
                           on_epoch=lambda e, i=i: (
                               curve.append((i + (e + 1) / train.epochs,
                                             accuracy(model, Xte, yte)))
                               if (e + 1) % every == 0 else None))
            if ewc is not None:
                ewc.consolidate(Xtr[rows], ytr[rows], seed=seed * 1000 + i)
            measure(i)
    info = model.describe()
    return {"model": kind.kind, "ewc": kind.ewc, "joint": kind.joint, "tasks": json.dumps([list(t) for t in tasks]),
            "acc_matrix": json.dumps(np.round(R, 6).tolist()),
            "curve": json.dumps([[round(a, 4), round(b, 6)] for a, b in curve]),
            "dead_per_task": json.dumps([round(d, 6) for d in dead]),
            "final_accuracy": accuracy(model, Xte, yte),
            # the oracle is measured once, after its one joint task (rows i < T-1 of R are
            # nan): its average accuracy is its last row's mean, and it forgets nothing (0, as
            # for a single task: no later task is learnt after any other)
            "average_accuracy": float(R[-1].mean()) if kind.joint else average_accuracy(R),
            "forgetting": 0.0 if kind.joint else forgetting(R),
            # the oracle learns every task at once: right after its training is its last row
            "learning_accuracy": float(R[-1].mean()) if kind.joint else learning_accuracy(R),
            "dead_fraction": dead[-1],
            "n_units": int(info["n_units"]), "activated_units": int(info["activated_units"]),
            "total_units": int(info["total_units"]), "params": int(info["params"]),
            "relu_mlp_params": int(matched["reference_params"]),
            "params_rel_diff": float(matched["relative_difference"]),
            "params_matched": bool(matched["matched"]),
            "size": json.dumps(matched["size"], sort_keys=True), "sizing": matched["rule"],
            "optimizer": optimizer, "lr": lr, "wall_s": round(time.perf_counter() - start, 3)}
