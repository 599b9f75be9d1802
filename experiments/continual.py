"""Class-incremental continual learning on Split data sets (Bricken et al. 2023, §5, App. E.1,
F.3; issue 28, item 3).

The classes are cut into disjoint tasks of ``classes_per_task`` (digits and MNIST: (0, 1),
(2, 3), …, the "naive split" of App. F.3; CIFAR-10: a random order per seed, as §5's five
random task splits). A model is trained on task 1, then task 2, … with no replay and no task
label; it is always evaluated over *all* classes (the class-incremental setting, §5). After
task i the test accuracy on each task j gives the accuracy matrix R[i, j]; from it

* final accuracy: accuracy on the whole test set after the last task (§5's "validation
  accuracy", Tables 1, 3, 7);
* average accuracy: mean_j R[T−1, j];
* forgetting: mean over j < T−1 of max_{i < T−1} R[i, j] − R[T−1, j] (Chaudhry et al. 2018);
* dead neurons per task: after each task, the share of hidden units active for no test input
  (Bricken et al. App. C.1 Fig. 14b, App. B.3 Fig. 10c: "not active for any of the
  validation inputs").

Every model of ``routing.layers`` runs in the same harness (``MODELS``, a registry: each kind
builds its model and says how it is trained and how its units' activity is read), at matched
total hidden units N and activated units k, plus Bricken et al.'s baselines: the Top-K MLP,
SDMLP with masking (Table 2's "Linear Mask"), the ReLU MLP with EWC (Kirkpatrick et al. 2017)
and the joint-training "oracle".
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn

from experiments.image_models import (SDMLPMask, TopKMLP, TrainSettings, accuracy,
                                      fit_classifier)
from routing.layers import (COMET, PKM, SDMLP, SMEAR, COMETConfig, DenseMLP, DenseMLPConfig,
                            PKMConfig, SDMLPConfig, SigmaMoE, SigmaMoEConfig, SMEARConfig,
                            TopKMoE, TopKMoEConfig)
from routing.validation import check_choice, check_int, check_real, check_seed

__all__ = ["ContinualSettings", "ModelKind", "MODELS", "ORACLE", "class_split", "task_masks",
           "average_accuracy", "forgetting", "unit_activity", "EWC", "run_continual_model"]

ORACLE = "oracle (ReLU MLP, joint)"


@dataclass(frozen=True)
class ContinualSettings:
    """Sizes and training of a continual-learning run.

    Attributes:
        n_tasks, classes_per_task: the split (>= 1 each; n_tasks · classes_per_task classes).
        class_order: "naive" ((0, 1), (2, 3), …: App. F.3) or "random" (a permutation of the
            classes drawn from the run's seed: §5's random task splits).
        n_neurons: total hidden units N of every model (>= 4); 1,000 in the paper (§5).
        k: activated units per example (1 <= k <= N); 10 in §5 (1 also shown).
        n_experts: experts of σ-MoE and top-k MoE (N = n_experts · expert size; k a
            multiple of the expert size N / n_experts). SMEAR has N // k experts of k units
            (it merges them into one per example); PKM √N sub-keys per half (N a square).
        epochs_per_task: passes over each task's training data (>= 1); 500 on Split MNIST
            (F.3), 2,000 on Split CIFAR-10 (§5).
        batch_size: examples per step (>= 1); 128 in App. B.3's discussion.
        sgd_lr: learning rate of plain SGD for SDMLP, SDMLP (mask), Top-K, ReLU MLP and EWC
            (Bricken et al. train these with SGD, §4 and App. D, footnote 8).
        sdm_lr: SGD rate of SDMLP and SDMLP (mask) (its L2-normalised activations are
            smaller than the ReLU MLP's).
        ewc_lambda: EWC coefficient λ of λ/2 Σ F_i (θ_i − θ*_i)² (>= 0).

    The defaults of sdm_lr (0.3 of 0.3, 1, 3), sgd_lr (0.1 of 0.01, 0.03, 0.1, 0.3: the ReLU
    MLP forgot to ~0.19 at all four) and ewc_lambda (3e4 of 1e4, 3e4, 1e5, 3e5, 1e6, 1e7) are
    the best final accuracy of each on Split digits with seed 100 (N = 256, k = 8, 40 epochs a
    task), a calibration seed that no verdict uses.
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
    fisher_samples: int = 200
    evals_per_task: int = 4
    anneal_fraction: float = 0.5

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
        if math.isqrt(self.n_neurons) ** 2 != self.n_neurons:
            raise ValueError(f"n_neurons must be a perfect square (PKM has n_keys² values), "
                             f"got {self.n_neurons}")
        check_int(self.epochs_per_task, "epochs_per_task", 1)
        check_int(self.batch_size, "batch_size", 1)
        check_real(self.sgd_lr, "sgd_lr", 0.0, low_open=True)
        check_real(self.sdm_lr, "sdm_lr", 0.0, low_open=True)
        check_real(self.ewc_lambda, "ewc_lambda", 0.0)
        check_int(self.fisher_samples, "fisher_samples", 1)
        check_int(self.evals_per_task, "evals_per_task", 1)
        check_real(self.anneal_fraction, "anneal_fraction", 0.0, 1.0, low_open=True)

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
    classes = np.arange(n_tasks * per)
    if order == "random":
        classes = np.random.default_rng(check_seed(seed)).permutation(classes)
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

def average_accuracy(R: np.ndarray) -> float:
    """mean_j R[T−1, j] of the (T, T) accuracy matrix R (R[i, j]: task j after task i)."""
    R = np.asarray(R, dtype=float)
    return float(R[-1].mean())


def forgetting(R: np.ndarray) -> float:
    """Average forgetting (Chaudhry et al. 2018): mean over j < T−1 of
    max_{i < T−1} R[i, j] − R[T−1, j], taking only i >= j (a task is not forgotten before it
    is learnt); 0 for one task. In accuracy units (0..1); negative when later tasks help.
    """
    R = np.asarray(R, dtype=float)
    T = len(R)
    if T < 2:
        return 0.0
    drops = [R[j:T - 1, j].max() - R[T - 1, j] for j in range(T - 1)]
    return float(np.mean(drops))


@torch.no_grad()
def unit_activity(model: nn.Module, X: torch.Tensor, batch_size: int = 4096) -> torch.Tensor:
    """(n_units,) bool: which hidden units are active for at least one row of X.

    "Active" is a positive post-activation where the model has one (SDMLP and its masking
    variant: a* > 0 of Eq. 4; ``TopKMLP``: a kept ReLU > 0; ``DenseMLP``: ReLU > 0; COMET:
    masked f(a) > 0, its three hidden layers concatenated), so a unit that is never active
    gets no gradient: Bricken et al.'s dead neuron (§4, App. B.3). For the MoE layers (σ-MoE,
    top-k MoE, PKM, SMEAR) a unit is an expert (PKM: a value slot) and active means routed to
    (``RouterLayer``'s usage counters); SMEAR merges every expert with a softmax weight > 0,
    so none of its experts is ever dead by this measure.
    """
    for kind, read in _ACTIVITY.items():
        if isinstance(model, kind):
            parts = [read(model, X[i:i + batch_size]).any(dim=0)
                     for i in range(0, len(X), batch_size)]
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
        """Store F_t and θ*_t for the task (X, y) just learnt."""
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

@dataclass(frozen=True)
class ModelKind:
    """A model of the continual-learning harness.

    Attributes:
        label: its name in results and plots.
        build: (d_in, n_classes, settings, seed) -> the model (a ``RouterLayer``).
        training: settings -> (optimizer, lr).
        ewc: train with the EWC penalty.
        joint: train once on all tasks together (the oracle), not task by task.
        grad_clip: gradient-norm clip of its training (None: its layers' default).
        source: paper and section.
    """

    label: str
    build: Callable
    training: Callable
    ewc: bool = False
    joint: bool = False
    grad_clip: float | None = None
    source: str = ""


def _sdmlp(cls):
    def build(d_in, n_classes, s, seed):
        anneal = max(1, int(round(s.anneal_fraction * s.epochs_per_task)))
        # non-negative pixels, x/‖x‖ and a non-negative decoder: the paper's own setting
        return cls(SDMLPConfig(d_in=d_in, d_out=n_classes, n_neurons=s.n_neurons,
                               k_target=s.k, anneal_epochs=anneal, lift_inputs=False,
                               nonneg_decoder=True, optimizer="sgd", lr=s.sdm_lr, seed=seed))
    return build


def _own(model_training):  # a router's own optimiser and rate from its config
    return lambda s: model_training


MODELS: dict[str, ModelKind] = {}


def register(kind: ModelKind) -> ModelKind:
    """Add ``kind`` to ``MODELS`` under its label (a user's model joins the same way)."""
    MODELS[kind.label] = kind
    return kind


register(ModelKind("SDMLP", _sdmlp(SDMLP), lambda s: ("sgd", s.sdm_lr),
                   source="Bricken et al. 2023, §4 Eq. 4, App. A.1"))
register(ModelKind("SDMLP (mask)", _sdmlp(SDMLPMask), lambda s: ("sgd", s.sdm_lr),
                   source="Bricken et al. 2023, Table 2 'Linear Mask', App. B.3, Fig. 10"))
register(ModelKind("Top-K", lambda d, c, s, seed: TopKMLP(d, s.n_neurons, s.k, c, seed),
                   lambda s: ("sgd", s.sgd_lr), source="Bricken et al. 2023, §5 Top-K baseline"))
register(ModelKind("ReLU MLP", lambda d, c, s, seed: DenseMLP(DenseMLPConfig(
    d_in=d, width=s.n_neurons, d_out=c, seed=seed)), lambda s: ("sgd", s.sgd_lr),
    source="Bricken et al. 2023, §5 ReLU baseline"))
# clipped at 1 as SDMLP: plain SGD on the stiff EWC penalty (step lr·λ·F) diverges otherwise
register(ModelKind("EWC (ReLU MLP)", MODELS["ReLU MLP"].build, lambda s: ("sgd", s.sgd_lr),
                   ewc=True, grad_clip=1.0,
                   source="Kirkpatrick et al. 2017; Bricken et al. 2023, §5"))
register(ModelKind("COMET", lambda d, c, s, seed: COMET(COMETConfig(
    d_in=d, widths=(s.n_neurons,), d_out=c, p_k=s.k / s.n_neurons, seed=seed)),
    _own(("adam", 1e-3)), source="COMET §4 (one hidden layer)"))
register(ModelKind("σ-MoE", lambda d, c, s, seed: SigmaMoE(SigmaMoEConfig(
    d_in=d, d_out=c, n_experts=s.n_experts, expert_size=s.expert_size,
    k=s.k // s.expert_size, seed=seed)), _own(("adam", 1e-3)),
    source="Csordás et al. 2023, §5"))
register(ModelKind("top-k MoE", lambda d, c, s, seed: TopKMoE(TopKMoEConfig(
    d_in=d, d_out=c, n_experts=s.n_experts, expert_size=s.expert_size,
    k=s.k // s.expert_size, seed=seed)), _own(("adam", 1e-3)),
    source="Csordás et al. 2023, §4 (Switch)"))
register(ModelKind("PKM", lambda d, c, s, seed: PKM(PKMConfig(
    d_in=d, d_out=c, n_keys=math.isqrt(s.n_neurons), k=s.k, seed=seed)), _own(("adam", 1e-3)),
    source="Csordás et al. 2023, §3.2"))
# SMEAR merges its experts into one of k units: N / k experts keep N units in total
register(ModelKind("SMEAR", lambda d, c, s, seed: SMEAR(SMEARConfig(
    d_in=d, d_out=c, n_experts=max(1, s.n_neurons // s.k), expert_size=s.k, seed=seed)),
    _own(("adam", 1e-3)), source="Muqeeth et al. 2024, §3"))
register(ModelKind(ORACLE, MODELS["ReLU MLP"].build, lambda s: ("sgd", s.sgd_lr), joint=True,
                   source="Bricken et al. 2023, Table 7 'Oracle' (all tasks at once)"))


# -- one run ---------------------------------------------------------------------------------

def run_continual_model(label: str, data: tuple, settings: ContinualSettings, seed: int,
                        device: torch.device | str = "cpu") -> dict:
    """Train model ``label`` of ``MODELS`` task after task and measure it.

    Arguments:
        label: a key of ``MODELS``.
        data: (X_train (N, d) float32, y_train (N,) int64, X_test (M, d), y_test (M,)) numpy
            arrays, pixels flattened (the harness's input).
        settings: ``ContinualSettings``.
        seed: >= 0; the model's initialisation, the minibatch order and (class_order
            "random") the split.
        device: torch device.

    Returns:
        a dict: tasks (JSON list of the classes), acc_matrix (JSON T×T), curve (JSON list of
        (tasks trained, test accuracy) pairs, ``evals_per_task`` per task), dead_per_task
        (JSON list), final_accuracy, average_accuracy, forgetting, dead_fraction (after the
        last task), n_units, activated_units, params, optimizer, lr, wall_s.

    Raises:
        ValueError: unknown label, bad seed, or data that do not hold every task's classes.
    """
    kind = MODELS.get(label)
    if kind is None:
        raise ValueError(f"model must be one of {tuple(MODELS)}, got {label!r}")
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
    torch.manual_seed(seed)
    model = kind.build(Xtr.shape[1], n_classes, settings, seed).to(device)
    optimizer, lr = kind.training(settings)
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
        ewc = EWC(model, settings.ewc_lambda, settings.fisher_samples) if kind.ewc else None
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
    return {"tasks": json.dumps([list(t) for t in tasks]),
            "acc_matrix": json.dumps(np.round(R, 6).tolist()),
            "curve": json.dumps([[round(a, 4), round(b, 6)] for a, b in curve]),
            "dead_per_task": json.dumps([round(d, 6) for d in dead]),
            "final_accuracy": accuracy(model, Xte, yte),
            "average_accuracy": average_accuracy(R),
            "forgetting": forgetting(R) if not kind.joint else float("nan"),
            "dead_fraction": dead[-1],
            "n_units": int(info["n_units"]), "activated_units": int(info["activated_units"]),
            "total_units": int(info["total_units"]), "params": int(info["params"]),
            "optimizer": optimizer, "lr": lr, "wall_s": round(time.perf_counter() - start, 3)}
