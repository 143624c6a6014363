"""Training, evaluating, saving and loading the learned cost model.

Losses (Kaufman et al., MLSys 2021, section 4):
- "mse": squared error of log runtime, so a kernel predicted 2x too slow and one 2x too fast
  weigh the same whatever their size (the paper's loss for absolute runtimes);
- "rank": the pairwise ranking loss over samples of the same `group` (one kernel under its
  candidate CodeGen plans): for every pair where plan i is faster than plan j, phi(p_j - p_i)
  of the predicted log times, with phi logistic, log(1 + exp(-z)), or hinge, max(0, m - z)
  (the paper's loss for choosing among configurations: only the order matters);
- "combined": mse + rank_weight x rank.

Batches hold whole groups, so every pair of a group meets in one batch. Samples are split
into training and test sets by `program` (the graph they come from), never by kernel: plans
of one kernel, and kernels of one program, are too alike to test one with another.

Metrics (`metrics`): MAPE; the median absolute percentage error of kernels under and over
SPLIT_US (launch-bound kernels, a few microseconds, are a different regime); Kendall's tau
between predicted and true times within each group (compiler.cost.plan_ranking.kendall_tau),
averaged; and the top-1 and top-5 regrets: how much slower the best of the plans ranked
first (or among the first five) is than the group's fastest, averaged over groups (plans
predicted equally fast count as a random pick among them).

A saved model is one `torch.save` file: the state dict and a JSON-able header (format and
format_version, model config, opcode vocabulary, feature names, training config and metrics,
plus whatever the caller adds: experiment.py adds the device, origin, registry version,
datasets, splits and evaluation); `load_model` refuses a file whose vocabulary or features
differ from this code's. `read_header` reads the header alone, without building the model.
"""

from __future__ import annotations

import math
import pickle
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from compiler.cost.plan_ranking import kendall_tau, regret_percent
from compiler.cost.learned.features import KernelSample, feature_names, other_features
from compiler.cost.learned.model import CostModel, ModelConfig, collate, predict_us
from compiler.errors import InputError

FORMAT = "fusion-explorer-learned-cost"
# The file layout's version. The header's "version" is the model's own number in a registry
# (learned-<device>-v<N>.pt), so the layout's is kept under "format_version".
FORMAT_VERSION = 2
LOSSES = ("mse", "rank", "combined")
SPLIT_US = 5.0


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 60
    batch_size: int = 64          # samples per step (whole groups; a larger group is alone)
    learning_rate: float = 3e-3
    weight_decay: float = 0.0
    loss: str = "combined"
    rank_weight: float = 0.1      # logistic pairs never stop pulling apart: keep it small
    rank_kind: str = "logistic"   # "logistic" | "hinge"
    margin: float = 0.1           # hinge only, in log-time units
    seed: int = 0
    # torch threads while training. One: on the 2-core development machine under load, two
    # made training on 200 samples 30x slower (time spent in the scatter-adds of message
    # passing, forward and backward), and on 56,000 samples they gained 10-20 %
    # (benchmarks/learned_cost.py measures one epoch both ways).
    threads: int = 1

    def to_dict(self) -> dict:
        return asdict(self)


# -- losses -----------------------------------------------------------------------------------


def log_mse_loss(predicted_log: torch.Tensor, target_log: torch.Tensor) -> torch.Tensor:
    return torch.mean((predicted_log - target_log) ** 2)


def pairwise_rank_loss(predicted_log: torch.Tensor, target_log: torch.Tensor,
                       groups: torch.Tensor, kind: str = "logistic",
                       margin: float = 0.1) -> torch.Tensor:
    """Mean over ordered pairs (i faster than j, same group) of phi(p_j - p_i); zero when the
    batch has no such pair."""
    same = groups.unsqueeze(0) == groups.unsqueeze(1)
    faster = target_log.unsqueeze(1) < target_log.unsqueeze(0)      # [i, j]: i faster than j
    pairs = same & faster
    if not bool(pairs.any()):
        return predicted_log.sum() * 0.0
    gap = (predicted_log.unsqueeze(0) - predicted_log.unsqueeze(1))[pairs]   # p_j - p_i
    if kind == "logistic":
        return torch.nn.functional.softplus(-gap).mean()
    if kind == "hinge":
        return torch.relu(margin - gap).mean()
    raise ValueError(f"rank_kind must be 'logistic' or 'hinge', not {kind!r}")


def loss_value(config: TrainConfig, predicted_log: torch.Tensor, target_log: torch.Tensor,
               groups: torch.Tensor) -> torch.Tensor:
    if config.loss not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}, not {config.loss!r}")
    total = predicted_log.sum() * 0.0
    if config.loss in ("mse", "combined"):
        total = total + log_mse_loss(predicted_log, target_log)
    if config.loss in ("rank", "combined"):
        weight = 1.0 if config.loss == "rank" else config.rank_weight
        total = total + weight * pairwise_rank_loss(predicted_log, target_log, groups,
                                                    config.rank_kind, config.margin)
    return total


# -- data -------------------------------------------------------------------------------------


def draw_held_out(names: list[str], test_fraction: float, seed: int) -> set[str]:
    """About `test_fraction` of `names` (programs or families), drawn with `seed`: at least one,
    and not all, when there are two or more."""
    order = np.random.default_rng(seed).permutation(len(names))
    count = round(test_fraction * len(names))
    if len(names) >= 2:
        count = min(max(1, count), len(names) - 1)
    return {names[k] for k in order[:count]}


def split_by_program(samples: list[KernelSample], test_fraction: float = 0.25,
                     seed: int = 0) -> tuple[list[KernelSample], list[KernelSample]]:
    """(train, test): whole programs, about `test_fraction` of them (at least one each side
    when there are two or more), drawn with `seed`."""
    test_programs = draw_held_out(sorted({s.program for s in samples}), test_fraction, seed)
    train = [s for s in samples if s.program not in test_programs]
    test = [s for s in samples if s.program in test_programs]
    return train, test


def _group_batches(samples: list[KernelSample], batch_size: int,
                   rng: np.random.Generator) -> list[list[int]]:
    """Sample indices in batches of whole groups. Groups go in order of kernel size (node
    count), in a random order among kernels of one size, so a batch holds kernels of similar
    size: the transformer readout pads every kernel of a batch to the largest one, and one
    400-node kernel among 4-node ones made a batch a hundred times its useful work."""
    groups: dict[str, list[int]] = {}
    for k, s in enumerate(samples):
        groups.setdefault(s.group, []).append(k)
    names = sorted(groups)
    shuffle = rng.permutation(len(names))
    order = sorted(range(len(names)),
                   key=lambda k: (len(samples[groups[names[k]][0]].opcodes), shuffle[k]))
    batches, current = [], []
    for k in order:
        members = groups[names[k]]
        if current and len(current) + len(members) > batch_size:
            batches.append(current)
            current = []
        current = current + members
    if current:
        batches.append(current)
    return batches


# -- training ---------------------------------------------------------------------------------


def train(samples: list[KernelSample], model_config: ModelConfig | None = None,
          config: TrainConfig | None = None) -> tuple[CostModel, list[float]]:
    """A model fitted to `samples` (each with a target_us) and its mean loss per epoch, trained
    with `config.threads` torch threads (the process's setting is restored after)."""
    config = config or TrainConfig()
    previous = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        return _fit(samples, model_config, config)
    finally:
        torch.set_num_threads(previous)


def _fit(samples: list[KernelSample], model_config: ModelConfig | None,
         config: TrainConfig) -> tuple[CostModel, list[float]]:
    if any(s.target_us is None or not s.target_us > 0 for s in samples):
        raise ValueError("every training sample needs a positive target_us")
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    model = CostModel(model_config)
    model.fit_normalisation(samples, bound=config.loss != "rank")
    optimiser = torch.optim.Adam(model.parameters(), lr=config.learning_rate,
                                 weight_decay=config.weight_decay)
    targets = torch.tensor([math.log(s.target_us) for s in samples], dtype=torch.float32)
    group_ids = {name: k for k, name in enumerate(sorted({s.group for s in samples}))}
    groups = torch.tensor([group_ids[s.group] for s in samples])
    # Batches are drawn once and collated once (collating costs more than a small model's
    # step); each epoch visits them in a new order.
    batches = []
    for indices in _group_batches(samples, config.batch_size, rng):
        index = torch.tensor(indices)
        batches.append((collate([samples[k] for k in indices]), targets[index],
                        groups[index]))
    history = []
    for _ in range(config.epochs):
        model.train()
        total = 0.0
        for k in rng.permutation(len(batches)):
            batch, target, group = batches[k]
            loss = loss_value(config, model(batch), target, group)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(target)
        history.append(total / len(samples))
    return model, history


# -- metrics ----------------------------------------------------------------------------------


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def metrics(predicted_us, samples: list[KernelSample]) -> dict:
    """Error and ranking figures of `predicted_us` (one per sample) against the targets.
    Ranking figures are over groups of two or more samples (a kernel under several plans)."""
    predicted = np.asarray(predicted_us, dtype=float)
    true = np.array([s.target_us for s in samples], dtype=float)
    apes = 100.0 * np.abs(predicted - true) / true
    groups: dict[str, list[int]] = {}
    for k, s in enumerate(samples):
        groups.setdefault(s.group, []).append(k)
    taus, top1, top5 = [], [], []
    for members in groups.values():
        if len(members) < 2:
            continue
        tau = kendall_tau(list(predicted[members]), list(true[members]))
        if tau is not None:
            taus.append(tau)
        top1.append(regret_percent(list(predicted[members]), list(true[members]), 1))
        top5.append(regret_percent(list(predicted[members]), list(true[members]), 5))
    return {
        "count": len(samples),
        "mape": float(apes.mean()) if len(apes) else None,
        "median_ape_under_5us": _median([a for a, t in zip(apes, true) if t < SPLIT_US]),
        "median_ape_over_5us": _median([a for a, t in zip(apes, true) if t >= SPLIT_US]),
        "groups_ranked": len(taus),
        "mean_kendall_tau": float(np.mean(taus)) if taus else None,
        "mean_top1_regret_percent": float(np.mean(top1)) if top1 else None,
        "mean_top5_regret_percent": float(np.mean(top5)) if top5 else None,
    }


def evaluate(model: CostModel, samples: list[KernelSample]) -> dict:
    return metrics(predict_us(model, samples), samples)


# -- files ------------------------------------------------------------------------------------


def save_model(path: str | Path, model: CostModel, train_config: TrainConfig | None = None,
               model_metrics: dict | None = None, extra: dict | None = None) -> None:
    """Write `model` with its header; `extra` (JSON-able) is merged into the header and may
    not replace the keys this function writes."""
    header = {"format": FORMAT, "format_version": FORMAT_VERSION,
              "config": model.config.to_dict(), **feature_names(),
              "train_config": train_config.to_dict() if train_config else None,
              "metrics": model_metrics or {}}
    clash = sorted(set(extra or {}) & set(header))
    if clash:
        raise ValueError(f"extra header keys {', '.join(clash)} would replace save_model's")
    header.update(extra or {})
    torch.save({"header": header, "state_dict": model.state_dict()}, Path(path))


def _load(path: str | Path) -> tuple[dict, dict]:
    """(header, file contents) of a model file whose format and layout version this code
    reads; an InputError otherwise."""
    try:
        data = torch.load(Path(path), weights_only=True)
        header = data["header"]
    except (OSError, RuntimeError, KeyError, IndexError, TypeError, ValueError, EOFError,
            pickle.UnpicklingError) as error:
        # torch's own message runs to paragraphs of advice about weights_only: keep its gist.
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise InputError(f"{path}: not a learned cost model file ({reason})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise InputError(f"{path}: not a learned cost model file (no {FORMAT} header)")
    if header.get("format_version") != FORMAT_VERSION:
        raise InputError(f"{path}: a {FORMAT} file of layout version "
                         f"{header.get('format_version')}; this code reads version "
                         f"{FORMAT_VERSION}: retrain the model")
    return header, data


def read_header(path: str | Path) -> dict:
    """The header of a model file, without building the model: it is readable even when the
    weights were made for other features than this code computes (load_model refuses those).
    An InputError when the file is not a model file of this layout."""
    return _load(path)[0]


def load_model(path: str | Path) -> tuple[CostModel, dict]:
    """(model, header) of a file `save_model` wrote; an InputError when it is not one, or
    when it was trained on another vocabulary or other features than this code computes."""
    header, data = _load(path)
    differing = other_features(header)
    if differing:
        raise InputError(f"{path}: trained with other {differing} than this version "
                         f"computes; retrain the model")
    try:
        model = CostModel(ModelConfig(**header["config"]))
        model.load_state_dict(data["state_dict"])
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        raise InputError(f"{path}: the weights do not fit the model it describes "
                         f"({error})") from None
    model.eval()
    return model, header
