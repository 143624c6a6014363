"""Mutated real files never crash or hang the compiler: each imports, or is refused with an
InputError that names the file (issue 18).

Hypothesis draws the cases of tests/compiler/fuzzing.py (real files of each format put through
byte-level, text-level and structure-aware mutations, sometimes gzip-compressed) and checks
`run_case`'s property on each: the importer, then, for what imports, the reference interpreter,
`explore` with every strategy and CUDA code generation must succeed or raise an InputError
naming the file. The draws are derandomized, so every run tries the same few hundred cases, and
hypothesis shrinks a failing one to a small mutation of a real file. benchmarks/fuzz.py runs
tens of thousands of the same cases.

Each test also requires that some of its cases import and reach code generation: a change that
made every mutation a parse error would otherwise pass while testing nothing past the parser.
"""

from __future__ import annotations

import collections

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.limits import Limits
from tests.compiler.fuzzing import FORMATS, load_seeds, make_case, run_case

# The smaller real files: explore and codegen of the big ones cost a second a case.
SEEDS = load_seeds(max_bytes=32 << 10)
TEXT_STABLEHLO = [seed for seed in SEEDS["stablehlo"] if seed.filename.endswith(".mlir")]
BYTECODE = [seed for seed in SEEDS["stablehlo"] if seed.filename.endswith(".mlirbc")]
# Cases per test (586 in all: about 15 s of CPU), and how many of them must import.
EXAMPLES = {"hlo": 200, "stablehlo": 100, "onnx": 120, "json": 160}
MUST_IMPORT = {"hlo": 20, "stablehlo": 5, "onnx": 15, "json": 10}
# A bytecode case starts a process (half a second); one that makes MLIR's reader loop costs
# this many seconds instead of the default 30.
LIMITS = Limits(max_bytecode_seconds=5)


class DrawChoices:
    """`fuzzing.Choices` drawn from hypothesis, so that it can shrink a failing case."""

    def __init__(self, data):
        self.data = data

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))

    def choice(self, options):
        return self.data.draw(st.sampled_from(options))


def fuzz(seeds, examples: int) -> collections.Counter:
    """Runs `examples` cases made from `seeds`; the count of each outcome and stage reached."""
    counts: collections.Counter = collections.Counter()

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.data())
    def one_case(data):
        case = make_case(DrawChoices(data), seeds)
        outcome = run_case(case, limits=LIMITS)
        counts[outcome.status] += 1
        counts.update(outcome.stage_results())
        assert outcome.status != "bug", (
            f"{case.seed} through {', '.join(case.steps)}, uploaded as {case.filename}: "
            f"{outcome.signature}\n{outcome.error}\n{outcome.trace}")

    one_case()
    return counts


@pytest.mark.parametrize("fmt", FORMATS)
def test_mutated_files_import_or_are_refused_naming_the_file(fmt, run_report):
    seeds = TEXT_STABLEHLO if fmt == "stablehlo" else SEEDS[fmt]
    counts = fuzz(seeds, EXAMPLES[fmt])
    run_report.append(f"fuzz {fmt}: {dict(sorted(counts.items()))}")
    assert counts["imported"] >= MUST_IMPORT[fmt], counts
    assert counts["codegen ok"] >= MUST_IMPORT[fmt], counts


def test_mutated_mlir_bytecode_is_read_apart_and_refused_naming_the_file(run_report):
    counts = fuzz(BYTECODE, 6)
    run_report.append(f"fuzz stablehlo bytecode: {dict(sorted(counts.items()))}")
    assert counts["imported"] + counts["refused"] == 6
