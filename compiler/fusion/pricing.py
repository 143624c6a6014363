"""What a candidate kernel costs: the one price every fusion decision and every plan total uses.

A price is the kernel's device work under a cost model plus its launch term under the runtime
the plan is run with (compiler/target/launch.py: a CUDA graph by default, or stream launches):
merging two kernels saves one launch term, which counts for more under stream launches.

The fuser asks a `Pricer` for the time of each kernel it considers; `explore` asks the same
pricer for the kernels of every strategy's plan. So the decision that made a kernel and the
figure a user reads next to it come from one function, and the question "which plan is
fastest?" gets the answer the search optimised.

Models (`--cost-model`, `PRICERS`):
- "projected" (the default): the kernel under the best of the CodeGen plans the code generator
  would consider (`schedules.enumerate_plans`, ranked by `projected.rank_plans` with estimated
  registers: the same enumeration and model `codegen` ranks with). A group the code generator
  can only emit badly (a reduction recomputed per element, a strided read, one block on a
  132-SM GPU) is priced as such, so the fuser never builds it unless it still pays. Library
  kernels (cuBLAS, cuDNN) get `projected.project_library`.
- "sol": the speed of light (bytes at peak bandwidth, flops at peak) and the launch term, the
  pre-V2 behaviour: every fusion that saves bytes looks good.
- "learned": the projected model's best `LEARNED_SHORTLIST` plans re-ranked by a trained
  learned cost model (compiler/cost/learned/), which gives the time (it predicts a kernel timed
  alone: what a lone launch adds, `launch.device_work_of_alone`, is taken off to get its device
  work); kernels it cannot describe, and plans outside its training support
  (compiler/cost/learned/support.py), fall back to the projected time.
A price measured on a GPU would plug in the same way (a pricer keyed by the same signature).

Every price carries the speed of light (`sol_us`), a lower bound on any model's device work:
the search compares it (with its launch term) with the price of the pieces a merge replaces
and skips pricing a merge whose bound already shows no gain (`Pricer.bound`).

Prices are cached by the kernel's *structure* (`Signature`): its nodes' ops, shapes, layouts
and attributes, the edges between them, which values it reads and writes, its kind and
dominant node, but not the node names. The twelve layers of a transformer step make twelve
identical candidates for every merge, priced once.
"""

from __future__ import annotations

import dataclasses
from array import array
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Hashable

import numpy as np

from compiler.codegen.c_syntax import CodegenUnsupported, EmissionTooLarge
from compiler.codegen.emission import emission_refusal
from compiler.codegen.plan import CodeGenPlan
from compiler.codegen.schedules import choose_plan, enumerate_plans
from compiler.cost.learned.features import kernel_sample
from compiler.cost.projected import Breakdown, Derating, project_kernel, project_library, rank_key
from compiler.errors import InputError
from compiler.ir.graph import COMPUTATION_ATTRS, Graph
from compiler.kernels.plan import FusionPlan, Kernel
from compiler.target.devices import Device
from compiler.target.launch import DEFAULT_RUNTIME, Launch, device_work_of_alone, launch_for
from compiler.target.sol import SolEstimate, SolModel

DEFAULT_MODEL = "projected"
# The projected pricer first scores each family of plans (`_family`) at the block size nearest
# FAMILY_BLOCK, then every block size of the families whose first score is within
# FAMILY_MARGIN of the best one's.
FAMILY_BLOCK = 256
FAMILY_MARGIN = 1.25
# A plan within this fraction of the pricer's floor (`bound`) is at the floor: none is faster.
FLOOR_TOLERANCE = 1e-9
# Plans of a kernel the learned model scores: the projected model's best few.
LEARNED_SHORTLIST = 4


@dataclass(frozen=True)
class Price:
    """A kernel's time under one cost model and runtime, and the CodeGen plan that achieves
    it."""

    us: float                        # the time decisions use: device work + launch term
    device_us: float                 # the device work alone
    sol_us: float                    # speed of light: no model's device work is below it
    model: str                       # "projected" | "sol" | "learned"
    plan: CodeGenPlan | None = None  # the winning plan (None: library call, SOL, no plan)
    breakdown: Breakdown | None = None
    # Why no code can be generated for the kernel, which is then not a legal kernel: its code
    # would pass the statement budget (compiler/codegen/emission.py).
    refusal: str | None = None

    @property
    def launch_us(self) -> float:
        return self.us - self.device_us

    def describe(self) -> str:
        """The winning plan in a few words, for the decision log ("row-reduce-warp, 256
        threads x 132 blocks, dram-bound"; "launch-bound" when the launch term is the larger
        part of the price)."""
        if self.plan is None:
            return "library call" if self.breakdown is not None else "speed of light"
        plan = self.plan
        text = f"{plan.schedule}, {plan.block_size} threads x {plan.grid_size} blocks"
        if plan.cooperative:
            text += ", grid barrier"
        if self.launch_us > self.device_us:
            text += ", launch-bound"
        elif self.breakdown is not None:
            text += f", {self.breakdown.limiter}-bound"
        return text


class Signature:
    """Structural keys of a graph's kernels: equal for kernels that differ only in node names
    (and the values of constants, which no cost model reads)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.position = graph.positions()
        self._node_keys: dict[str, int] = {}
        self._input_keys: dict[str, int] = {}
        self._interned: dict[Hashable, int] = {}
        self._steps: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = {}

    def node_key(self, name: str) -> int:
        """An id shared by nodes of the same op, shape (with layout) and attributes."""
        key = self._node_keys.get(name)
        if key is None:
            node = self.graph.nodes[name]
            attrs = tuple(sorted((k, _frozen(v)) for k, v in node.attrs.items()
                                 if k not in COMPUTATION_ATTRS and k != "value"))
            whole = (node.op, str(node.shape), _layouts(node.shape), attrs)
            key = self._node_keys[name] = self._interned.setdefault(whole, len(self._interned))
        return key

    def input_key(self, name: str) -> Hashable:
        """What a value read from memory is to a kernel's cost: its shape and layout, and
        whether it is a one-element constant (an immediate): not which parameter it is."""
        key = self._input_keys.get(name)
        if key is None:
            node = self.graph.nodes[name]
            immediate = node.op == "constant" and not node.shape.is_tuple and \
                node.array_shape.size == 1
            key = self._input_keys[name] = self._interned.setdefault(
                ("input", str(node.shape), _layouts(node.shape), immediate),
                len(self._interned))
        return key

    def of(self, kernel: Kernel) -> tuple:
        """The kernel's structural key."""
        computed = sorted(kernel.computed, key=self.position.__getitem__)
        dominant = computed.index(kernel.dominant) if kernel.dominant in kernel.computed \
            else -1
        return kernel.kind, dominant, self.shape(computed, set(kernel.recomputed),
                                                 kernel.outputs)

    def shape(self, computed: list[str], recomputed, outputs) -> bytes:
        """The structural key of a kernel computing `computed` (in graph order), of which it
        recomputes `recomputed` and writes `outputs`, but for its kind and dominant node
        (`of` puts them first: (kind, the dominant's index in `computed` or -1, shape)).

        Each node is its `node_key`, its operands (an index in `computed`, or -1 - the index
        of the input among the kernel's inputs in order of first use) and whether it is
        recomputed; then the inputs' `input_key`s and the outputs' indices. The numbers are
        packed into bytes, each list after its length: a key that hashes and compares at
        memory speed (the fusion search looks up hundreds of thousands of candidates, of up
        to a thousand nodes, most of them layers of the same structure)."""
        # Computed nodes map to their index, inputs (added as they are met) to -1 - theirs:
        # one lookup per operand.
        local = dict(zip(computed, range(len(computed))))
        inputs: list[str] = []
        steps = self._steps
        flat = [len(computed)]
        append, extend = flat.append, flat.extend
        for name in computed:
            found = steps.get(name)
            head, operands = found if found is not None else self._step(name)
            extend(head)
            for operand in operands:
                k = local.get(operand)
                if k is None:
                    k = local[operand] = -1 - len(inputs)
                    inputs.append(operand)
                append(k)
            append(name in recomputed)
        append(len(inputs))
        keys = self._input_keys
        extend([keys[name] if name in keys else self.input_key(name) for name in inputs])
        append(len(outputs))
        extend(sorted([local[name] for name in outputs]))
        return array("q", flat).tobytes()

    def _step(self, name: str) -> tuple[tuple[int, int], tuple[str, ...]]:
        """A node's `node_key` and operand count, and its operands (`shape`), remembered."""
        operands = self.graph.nodes[name].operands
        found = self._steps[name] = ((self.node_key(name), len(operands)), operands)
        return found


def _frozen(value) -> Hashable:
    """An attribute value as a hashable (dicts and lists become tuples, arrays their shape)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, np.ndarray):
        return ("array", value.shape, str(value.dtype))
    return value


def _layouts(shape) -> tuple:
    return tuple(leaf.minor_to_major for leaf in shape.leaves())


class Pricer:
    """Prices kernels of one graph on one device with one model and one runtime (how the
    plan's kernels are launched: compiler/target/launch.py), cached by structure."""

    name = "abstract"

    def __init__(self, graph: Graph, model: SolModel, runtime: str = DEFAULT_RUNTIME):
        self.graph = graph
        self.sol_model = model
        self.device: Device = model.device
        self.runtime = runtime
        self.launch: Launch = launch_for(model.device, runtime)
        self.signature = Signature(graph)
        self._cache: dict[tuple, Price] = {}
        self._plan_kernels: dict[int, tuple[Kernel, Price]] = {}  # id -> (kernel, price)
        self.priced = 0     # kernels priced (not served from the cache)
        self.asked = 0      # prices asked for
        # Another process pricing ahead with this pricer's model (explore's background
        # process): `submit(key, kernel)`, `collect(key)` -> Price or None, `wants_more()`,
        # `pricing(key)`, `answered(key)`, `has(key)` (answered or asked).
        self.assistant = None

    def price(self, kernel: Kernel, structure: tuple | None = None) -> Price:
        """The kernel's price (cached by its structure: `signature.of(kernel)`, or
        `structure` when the caller has it; the assistant's price when it has one)."""
        self.asked += 1
        key = structure if structure is not None else self.signature.of(kernel)
        found = self._cache.get(key)
        if found is None and self.assistant is not None:
            found = self.assistant.collect(key)
            if found is not None:
                self._cache[key] = found
        if found is None:
            self.priced += 1
            found = self._cache[key] = self._price(kernel)
        return found

    def plan_kernel(self, kernel: Kernel) -> Price:
        """The price of a kernel of a plan (`plan_price`, `price_plan`): a plan's kernels are
        priced several times (each strategy's plan is totalled, shown, and compared with the
        cost search's), so their prices are also kept by the kernel itself, which spares
        working out its structure again."""
        known = self._plan_kernels.get(id(kernel))
        if known is not None and known[0] is kernel:
            self.asked += 1
            return known[1]
        price = self.price(kernel)
        self._plan_kernels[id(kernel)] = kernel, price
        return price

    def cached(self, structure: tuple) -> Price | None:
        """The price of the kernel whose `signature.of` is `structure`, if it was priced."""
        found = self._cache.get(structure)
        if found is not None:
            self.asked += 1
        return found

    # What a search that prices ahead asks (cost_based/search.py, `Search`); `structure` is a
    # kernel's key in the cache (`signature.of(kernel)`).

    def wants_ahead(self) -> bool:
        """Whether an assistant would price a kernel ahead now (`price_ahead`)."""
        return self.assistant is not None and self.assistant.wants_more()

    def knows(self, structure: tuple) -> bool:
        """Whether that kernel's price is here (found here or answered by the assistant)."""
        return structure in self._cache or (self.assistant is not None and
                                            self.assistant.answered(structure))

    def needs(self, structure: tuple) -> bool:
        """Whether that kernel's price is neither known nor being found by the assistant."""
        return structure not in self._cache and not (self.assistant is not None and
                                                     self.assistant.has(structure))

    def waiting_for(self, structure: tuple) -> bool:
        """Whether the assistant is pricing that kernel now (its answer not here yet)."""
        return self.assistant is not None and self.assistant.pricing(structure)

    def price_ahead(self, kernel: Kernel, structure: tuple) -> None:
        """Have the assistant price `kernel`, which is likely to be asked for soon."""
        if structure not in self._cache:
            self.assistant.submit(structure, kernel)

    def remember(self, kernel: Kernel, price: Price) -> None:
        """Take a price another pricer of the same model, graph and device found for `kernel`
        (explore's background process), so it is not priced again here."""
        price = self._cache.setdefault(self.signature.of(kernel), price)
        self._plan_kernels[id(kernel)] = kernel, price

    def bound(self, sol: SolEstimate) -> float:
        """A lower bound on the price of a kernel whose speed of light is `sol`, cheap to
        compute (the search bounds candidates before it builds them): the speed of light and
        its launch term (a kernel's time never falls as its device work grows)."""
        return self.launch.kernel_us(sol.total_us)

    def price_at(self, kernel: Kernel, device_us: float, plan: CodeGenPlan | None = None,
               breakdown: Breakdown | None = None, model: str | None = None,
               refusal: str | None = None) -> Price:
        """The price of `kernel` for `device_us` of device work under this pricer's runtime."""
        return Price(self.launch.kernel_us(device_us), device_us, kernel.sol.total_us,
                     model or self.name, plan, breakdown, refusal)

    def _price(self, kernel: Kernel) -> Price:
        raise NotImplementedError


class SolPricer(Pricer):
    """Speed of light: bytes at peak bandwidth, flops at the peak of their pipe, and the launch
    term."""

    name = "sol"

    def _price(self, kernel: Kernel) -> Price:
        refusal = None if kernel.kind == "library" else \
            emission_refusal(self.graph, kernel.computed, kernel.outputs)
        return self.price_at(kernel, kernel.sol.total_us, refusal=refusal)


class ProjectedPricer(Pricer):
    """The projected time of the best CodeGen plan (module docstring)."""

    name = "projected"

    def bound(self, sol: SolEstimate) -> float:
        """The speed of light with DRAM at the bandwidth the projected model allows
        (`Derating.dram_efficiency`), and its launch term: every plan moves at least the SOL's
        bytes."""
        return self.launch.kernel_us(self.device_bound(sol))

    @staticmethod
    def device_bound(sol: SolEstimate) -> float:
        """The least device work the projected model gives a kernel of speed of light `sol`."""
        memory_us = sol.memory_us / Derating().dram_efficiency
        return max(memory_us, sol.compute_us)

    def _price(self, kernel: Kernel) -> Price:
        if kernel.kind == "library":
            breakdown = project_library(kernel, self.device)
            return self.price_at(kernel, breakdown.projected_us, None, breakdown)
        try:
            best = self.best_plans(kernel, 1, floor_us=self.device_bound(kernel.sol))
        except EmissionTooLarge as error:
            # No CodeGen plan: the emitter would not finish its code. The speed of light
            # stands in for the time of what no plan holds, and the refusal says why.
            return self.price_at(kernel, kernel.sol.total_us, refusal=str(error))
        if not best:
            # No plan the workload model covers (a type codegen does not emit): nothing better
            # is known than the speed of light, and the plan shows no projection.
            return self.price_at(kernel, kernel.sol.total_us)
        plan, breakdown = best[0]
        return self.price_at(kernel, breakdown.projected_us, plan, breakdown)

    def best_plans(self, kernel: Kernel, count: int, floor_us: float | None = None
                   ) -> list[tuple[CodeGenPlan, Breakdown]]:
        """The kernel's `count` fastest plans, fastest first, in two steps over the candidates:
        every family of plans (the same plan but for its launch dimensions: block size and
        what follows from it) at the block size nearest FAMILY_BLOCK, then every block size
        of the families within FAMILY_MARGIN of the best. Ties are broken as `rank_plans`
        breaks them.

        `floor_us`: device work no plan can beat (`device_bound`). The family heads are
        scored in the order of `choose_plan`'s pick first, and with `count` 1 the first plan
        that reaches the floor is returned at once: no plan is faster, so the kernel's price
        is known (the plan may be another of the same time than `rank_plans`' tie-break would
        pick). A third of a transformer step's candidate kernels are DRAM-bound at the floor
        under the first plan scored."""

        try:
            plans = enumerate_plans(self.graph, kernel)
        except EmissionTooLarge:
            raise
        except CodegenUnsupported:
            return []
        if not plans:
            return []
        families: dict[tuple, list[int]] = {}
        for index, plan in enumerate(plans):
            families.setdefault(_family(plan), []).append(index)
        memo: dict = {}
        scored: dict[int, tuple] = {}

        def score(indices) -> list[tuple]:
            for index in indices:
                if index not in scored:
                    scored[index] = self._score(kernel, plans[index], index, memo)
            return sorted(scored[i] for i in indices if scored[i] is not None)

        first = _family(choose_plan(plans))
        heads = [min(members, key=lambda i: (abs(plans[i].block_size - FAMILY_BLOCK),
                                             plans[i].block_size))
                 for family, members in sorted(families.items(),
                                               key=lambda item: item[0] != first)]
        if floor_us is not None and count == 1:
            for index in heads:
                found = score([index])
                if found and abs(found[0][-1] - floor_us) <= FLOOR_TOLERANCE * floor_us:
                    return [self._breakdown(kernel, plans[index], memo)]
        ranked = score(heads)
        if not ranked:
            return []
        leading = [item for item in ranked if item[0] <= ranked[0][0] * FAMILY_MARGIN]
        swept = [i for *_, index, _ in leading for i in families[_family(plans[index])]]
        ranked = score(swept + heads)
        return [self._breakdown(kernel, plans[index], memo) for *_, index, _ in ranked[:count]]

    def _score(self, kernel: Kernel, plan: CodeGenPlan, index: int, memo: dict):
        """`rank_plans`' sort key of one plan (its time rounded, its slack, its index) and
        its unrounded time; None when the workload model does not cover it. Only the plans
        returned get a whole breakdown (`_breakdown`)."""
        try:
            projected, slack = rank_key(self.graph, kernel, plan, self.device, memo)
        except ValueError:
            return None
        return round(projected, 6), slack, index, projected

    def _breakdown(self, kernel: Kernel, plan: CodeGenPlan, memo: dict
                   ) -> tuple[CodeGenPlan, Breakdown]:
        """A plan `_score` ranked, with its breakdown."""
        return plan, project_kernel(self.graph, kernel, plan, self.device, memo=memo)


# What a plan's launch dimensions decide (`_family` leaves them out).
_LAUNCH_FIELDS = ("block_size", "grid_size", "rows_per_block", "shared_bytes", "scratch_bytes",
                  "parts")
_family_fields = attrgetter(*(f.name for f in fields(CodeGenPlan)
                              if f.name not in _LAUNCH_FIELDS))


def _family(plan: CodeGenPlan) -> tuple:
    """The plan but for its launch dimensions (its parts' too): plans of one family differ
    only in block size and what follows from it. A cooperative plan's grid is a choice of
    its own (how many co-resident blocks), not a consequence of the block size: it stays."""
    return (_family_fields(plan), plan.grid_size if plan.cooperative else None,
            tuple(_family(part) for part in plan.parts))


class LearnedPricer(ProjectedPricer):
    """The projected model's best LEARNED_SHORTLIST plans, timed by a learned model."""

    name = "learned"

    def __init__(self, graph: Graph, model: SolModel, predictor,
                 runtime: str = DEFAULT_RUNTIME):
        super().__init__(graph, model, runtime)
        if predictor.device != model.device.name:
            raise InputError(f"the learned model {predictor.label} predicts "
                             f"{predictor.device} kernels, not {model.device.name} ones")
        self.predictor = predictor

    def _price(self, kernel: Kernel) -> Price:
        projected = super()._price(kernel)
        if kernel.kind == "library" or projected.plan is None:
            return dataclasses.replace(projected, model="projected")
        from compiler.cost.learned.model import predict_us  # torch

        shortlist, samples = [], []
        for plan, breakdown in self.best_plans(kernel, LEARNED_SHORTLIST):
            try:
                sample = kernel_sample(self.graph, kernel, plan, self.device, breakdown)
            except ValueError:
                continue
            # A plan unlike any the model was trained on is the projected model's to price.
            if self.predictor.outside(sample):
                continue
            samples.append(sample)
            shortlist.append((plan, breakdown))
        if not samples:
            return dataclasses.replace(projected, model="projected")
        times = predict_us(self.predictor.model, samples).tolist()
        best = min(range(len(times)), key=times.__getitem__)
        plan, breakdown = shortlist[best]
        return self.price_at(kernel, device_work_of_alone(self.device, float(times[best])),
                           plan, breakdown)


PRICERS = ("projected", "sol", "learned")


def make_pricer(name: str, graph: Graph, model: SolModel, learned=None,
                runtime: str = DEFAULT_RUNTIME) -> Pricer:
    """The pricer called `name` under `runtime`; "learned" needs `learned` (a
    LearnedPredictor for the model's device). InputError for an unknown name or a missing
    model."""
    if name == "projected":
        return ProjectedPricer(graph, model, runtime)
    if name == "sol":
        return SolPricer(graph, model, runtime)
    if name == "learned":
        if learned is None:
            raise InputError("the learned cost model needs a model file: pass "
                             "--learned-model FILE (python -m compiler train-costmodel makes one)")
        return LearnedPricer(graph, model, learned, runtime)
    raise InputError(f"unknown cost model {name!r}; choose from {', '.join(PRICERS)}")


def plan_price(plan: FusionPlan, pricer: Pricer) -> float:
    """The plan's total under the pricer: its kernels' prices, in order."""
    return sum(pricer.plan_kernel(kernel).us for kernel in plan.kernels)


def price_plan(plan: FusionPlan, pricer: ProjectedPricer) -> None:
    """Set every kernel's projected breakdown (`Kernel.projected`) to its best CodeGen plan's,
    as the pricer finds it: the projection `explore` shows, the one the search optimised.
    Kernels with no plan the workload model covers stay None."""
    for kernel in plan.kernels:
        price = pricer.plan_kernel(kernel)
        kernel.projected = price.breakdown
        kernel.schedule = price.plan.schedule if price.plan is not None else None
