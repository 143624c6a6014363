"""What a learned cost model has seen: the support of its training samples, and whether a
kernel to predict lies inside it.

A network answers for any input, and far from its training data its answer is an
extrapolation, not knowledge (model.py bounds it to a factor EXTRAPOLATION of the projected
time, which is wide). The H200 model shipped on 2026-11-27 was trained on the kernels of four
programs (softmax, rms_norm, cross_entropy, adam): loop, input and stitch kernels under the
elementwise and row-reduce schedules. Asked about the cost plan of the 12-layer training step
(benchmarks/data/transformer_12l.hlo.gz), 90 of the 176 kernels it predicted were of kinds and
schedules it had never seen (horizontal kernels, the transpose-tiled and column-reduce
schedules); it put them at 7-13x their projected time, and they made the plan's learned total
3.6x the projected one. Those kernels are now the projected model's to price, and the plan says
how many kernels the learned model predicted and why it left the others.

`TrainingSupport.fit(samples)` records, over the training samples:
- the one-hot categories set in some sample: the schedule and the fusion kind (the limiter
  one-hots are the projected model's verdict, which moves when that model changes, not a
  property of the kernel, and are not checked);
- the element types of their nodes (float32, float16 or bfloat16 as 16-bit floats, ...) and
  their ops (as the model's opcode vocabulary names them, the ops a kernel reads from too);
- per schedule, the range of every size feature (the kernel features named log2_...) over
  the training samples of that schedule: the sizes seen are a property of each schedule's
  kernels, not of the set (every row-reduce-warp kernel the H200 model saw moved 64-128 MiB;
  asked about layer_norm_bwd's of 32 KiB, within the range of the set's elementwise kernels,
  it put them at 8-9 µs of device work against 0.3-0.7 projected).

`outside(sample)` says why a kernel is outside, or None when it is inside: a category, element
type or op no training sample had, or a size feature more than SIZE_MARGIN (in log2 units: one
octave) beyond the range of the training samples of its schedule. With the categories alone, the 12-layer step's remaining 86
kernels stayed at 2.6x their projected time: every one of them computes in bfloat16 and reads
a dot's result, and the training kernels were all float32 and read no dot. The support is saved
in the model file's header ("support"); a model file without one (trained before it existed)
predicts every kernel, as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.cost.learned.features import (DTYPE_KINDS, KERNEL_FEATURES, NODE_FEATURES,
                                            OPCODES, KernelSample)

# How far (in log2 units) a size feature may lie beyond the training range: a factor of two.
SIZE_MARGIN = 1.0
_CATEGORIES = ("schedule_", "kind_")
_SIZES = "log2_"
# At most this many reasons in a kernel's explanation (the first found, in feature order).
_REASONS = 2
_BITS = NODE_FEATURES.index("dtype_bits_over_32")
_KINDS = [NODE_FEATURES.index(f"dtype_{kind}") for kind in DTYPE_KINDS]


def _element_types(sample: KernelSample) -> set[str]:
    """The element types of a sample's nodes, by kind and width ("float32", "float16": the
    features do not tell bfloat16 from float16; "other8" for a kind outside DTYPE_KINDS)."""
    types = set()
    for row in np.asarray(sample.node_features):
        kind = next((name for name, col in zip(DTYPE_KINDS, _KINDS) if row[col] > 0), "other")
        types.add(f"{kind}{round(float(row[_BITS]) * 32)}")
    return types


def _described(element_type: str) -> str:
    """"float16" -> "16-bit float" (bfloat16 or float16), "sint32" -> "32-bit sint"."""
    kind = element_type.rstrip("0123456789")
    return f"{element_type[len(kind):]}-bit {kind}"


def _schedule(kernel_features: np.ndarray) -> str:
    """The schedule a sample's one-hot names ("" when none does)."""
    return next((name.removeprefix("schedule_") for index, name in enumerate(KERNEL_FEATURES)
                 if name.startswith("schedule_") and kernel_features[index] > 0), "")


def _ops(sample: KernelSample) -> set[str]:
    return {OPCODES[int(index)] for index in np.asarray(sample.opcodes)}


@dataclass(frozen=True)
class TrainingSupport:
    categories: frozenset[str]                  # one-hot features some training sample set
    element_types: frozenset[str]               # of their nodes: "float32", "pred8", ...
    ops: frozenset[str]                         # of their nodes, as OPCODES names them
    # schedule -> size feature -> (least, most) over the training samples of that schedule
    ranges: dict[str, dict[str, tuple[float, float]]]
    samples: int
    size_margin: float = SIZE_MARGIN

    @classmethod
    def fit(cls, samples: list[KernelSample]) -> TrainingSupport:
        if not samples:
            raise ValueError("the support of no samples")
        features = np.stack([np.asarray(s.kernel_features, dtype=np.float64)
                             for s in samples])
        if features.shape[1] != len(KERNEL_FEATURES):
            raise ValueError(f"samples of {features.shape[1]} kernel features; this code "
                             f"computes {len(KERNEL_FEATURES)}")
        categories = frozenset(name for index, name in enumerate(KERNEL_FEATURES)
                               if name.startswith(_CATEGORIES) and features[:, index].max() > 0)
        schedules = [_schedule(row) for row in features]
        ranges = {}
        for schedule in sorted(set(schedules)):
            rows = features[[k for k, other in enumerate(schedules) if other == schedule]]
            ranges[schedule] = {name: (float(rows[:, index].min()), float(rows[:, index].max()))
                                for index, name in enumerate(KERNEL_FEATURES)
                                if name.startswith(_SIZES)}
        element_types = frozenset().union(*map(_element_types, samples))
        ops = frozenset().union(*map(_ops, samples))
        return cls(categories, element_types, ops, ranges, len(samples))

    def to_dict(self) -> dict:
        return {"categories": sorted(self.categories),
                "element_types": sorted(self.element_types), "ops": sorted(self.ops),
                "ranges": {schedule: {name: [round(lo, 5), round(hi, 5)]
                                      for name, (lo, hi) in sizes.items()}
                           for schedule, sizes in self.ranges.items()},
                "samples": self.samples, "size_margin": self.size_margin}

    @classmethod
    def from_dict(cls, data: dict) -> TrainingSupport:
        """The support a model header stores; ValueError when it is not one."""
        try:
            return cls(frozenset(str(name) for name in data["categories"]),
                       frozenset(str(name) for name in data["element_types"]),
                       frozenset(str(name) for name in data["ops"]),
                       {str(schedule): {str(name): (float(lo), float(hi))
                                        for name, (lo, hi) in sizes.items()}
                        for schedule, sizes in data["ranges"].items()},
                       int(data["samples"]), float(data.get("size_margin", SIZE_MARGIN)))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ValueError(f"not a training support ({error})") from None

    def outside(self, sample: KernelSample) -> str | None:
        """Why `sample` lies outside what the model was trained on, or None when it does not."""
        reasons = []
        for index, name in enumerate(KERNEL_FEATURES):
            if not name.startswith(_CATEGORIES):
                continue
            if float(sample.kernel_features[index]) > 0 and name not in self.categories:
                category, _, what = name.partition("_")
                reasons.append(f"{category} {what}: none in its training")
        reasons += [f"{_described(kind)} values: none in its training"
                    for kind in sorted(_element_types(sample) - self.element_types)]
        reasons += [f"op {op}: none in its training" for op in sorted(_ops(sample) - self.ops)]
        schedule = _schedule(np.asarray(sample.kernel_features))
        if schedule not in self.ranges and not schedule:
            # A schedule the features have no column for (phased, ...), unlike every
            # training kernel: nothing to judge its sizes by.
            reasons.append("a schedule the features do not name: none in its training")
        sizes = self.ranges.get(schedule, {})
        for index, name in enumerate(KERNEL_FEATURES):
            if len(reasons) >= _REASONS:
                break
            value = float(sample.kernel_features[index])
            if name in sizes:
                lo, hi = sizes[name]
                if not lo - self.size_margin <= value <= hi + self.size_margin:
                    reasons.append(f"{name} {value:.3g} outside its {schedule} training "
                                   f"kernels' {lo:.3g}..{hi:.3g}")
        return "; ".join(reasons[:_REASONS]) or None
