"""A known runtime function of a kernel sample, for testing and benchmarking the learned model's
pipeline where no GPU has measured anything.

`synthetic_target_us(sample)` is nonlinear in the projected time above launch, the block size
(fastest at 256 threads) and the kernel's node count, with log-normal noise. A model that fits
it on held-out programs far better than a constant predictor shows that the features, batching,
losses and splits work; it says nothing about accuracy on a GPU. Datasets labelled with it carry
origin "synthetic" (dataset.py), and every page and report that shows such a model says so.
"""

from __future__ import annotations

import math

import numpy as np

from compiler.cost.learned.features import KERNEL_FEATURES, KernelSample

DESCRIPTION = ("synthetic: 1 + 4 x (projected - launch) x (1 + 0.3 (log2 block - 8)^2) x "
               "sqrt(1 + 0.05 nodes), x exp(0.05 N(0, 1)) noise")
_BLOCK = KERNEL_FEATURES.index("log2_block_size")
_LAUNCH = KERNEL_FEATURES.index("log2_launch_us")


def synthetic_target_us(sample: KernelSample, rng: np.random.Generator | None = None,
                        noise: float = 0.05) -> float:
    """The known function's time for `sample`, with noise when `rng` is given."""
    block = float(sample.kernel_features[_BLOCK])
    launch = 2.0 ** float(sample.kernel_features[_LAUNCH]) - 1.0
    busy = max(0.0, sample.projected_us - launch)
    value = 1.0 + 4.0 * busy * (1.0 + 0.3 * (block - 8.0) ** 2) * \
        math.sqrt(1.0 + 0.05 * len(sample.opcodes))
    if rng is not None:
        value *= math.exp(noise * rng.standard_normal())
    return value


def label(samples: list[KernelSample], seed: int = 0, noise: float = 0.05) -> None:
    """Give every sample its synthetic target (reproducibly, with `seed`)."""
    rng = np.random.default_rng(seed)
    for sample in samples:
        sample.target_us = synthetic_target_us(sample, rng, noise)
