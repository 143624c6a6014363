"""Run fusion strategies on a graph and put their plans side by side.

`explore` is the stage the CLI's `explore` command and the web app's compile task call; its
result serialises (`exploration_to_dict`) to the JSON shape DESIGN.md fixes for scripts.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import signal
import tempfile
import threading
import time
from importlib import import_module
from multiprocessing.connection import Connection
from typing import Callable, Hashable

from compiler.errors import InputError
from compiler.fusion.pricing import (DEFAULT_MODEL, Price, Pricer, ProjectedPricer, make_pricer,
                                     price_plan)
from compiler.gc_pause import cyclic_gc_paused
from compiler.ir.graph import Graph
from compiler.kernels.plan import FusionPlan, StrategyUnavailable
from compiler.target.devices import get_device
from compiler.target.launch import DEFAULT_RUNTIME, parse_runtime, terms_for
from compiler.target.sol import SolModel

# Strategy name -> (module, function). Imported on first use, so one strategy's import cost
# is not paid by runs that do not ask for it.
STRATEGIES = {
    "unfused": ("compiler.fusion.unfused", "unfused"),
    "xla": ("compiler.fusion.xla", "xla_fusion"),
    "stitch": ("compiler.fusion.stitch", "stitch_fusion"),
    "cost": ("compiler.fusion.cost_based", "cost_fusion"),
    # XLA:GPU's own plan, from its compiler (compiler/fusion/xla_gpu.py): named explicitly,
    # since it needs the CUDA plugin and seconds to minutes of XLA's compile.
    "xla-gpu": ("compiler.fusion.xla_gpu", "xla_gpu_fusion"),
}
# What "all" means: our own four strategies (scripts rely on it), not xla-gpu.
OUR_STRATEGIES = ("unfused", "xla", "stitch", "cost")
# Set to 1 to run every strategy in this process, one after another.
SERIAL_ENV = "FUSION_EXPLORER_SERIAL_EXPLORE"
# Graphs smaller than this explore in well under a second: not worth a process.
CONCURRENT_NODES = 1000


def parse_strategies(text: str) -> list[str]:
    """'all' (our four strategies) or a comma-separated list of strategy names, checked."""
    if text.strip() == "all":
        return list(OUR_STRATEGIES)
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in STRATEGIES]
    if unknown or not names:
        raise InputError(f"unknown strategy {', '.join(unknown) or repr(text)}; choose 'all' "
                         f"or from {', '.join(STRATEGIES)}")
    return names


def explore(graph: Graph, device: str = "h100", strategies=OUR_STRATEGIES,
            cost_model: str = DEFAULT_MODEL, learned=None,
            concurrent: bool | None = None,
            runtime: str = DEFAULT_RUNTIME,
            on_plan: Callable[[str, FusionPlan], None] | None = None) -> dict[str, FusionPlan]:
    """One plan per strategy, each with the wall time its strategy took (explore_ms) and every
    kernel's projected breakdown under its best CodeGen plan (`pricing.price_plan`).

    `runtime` says how the plans' kernels are launched (compiler/target/launch.py: "graph", a
    CUDA graph replay, or "stream"): every price's launch term, and so the cost search's
    decisions and every plan's total, are that runtime's.

    `cost_model` names the pricer the cost strategy decides with (pricing.PRICERS; "learned"
    needs `learned`, a LearnedPredictor for the device). Whatever decides, the plans' kernels
    are shown with the projected model, and one projected pricer serves all strategies, so a
    kernel two plans share is priced once.

    `concurrent`: run the rule-based strategies in a forked process while the cost search runs
    here (`_RulesInBackground`); None decides by the machine (more than one CPU, fork, one
    thread). The plans are the same either way.

    A strategy that cannot run here (xla-gpu without its plugin) gives a plan with no kernels
    whose `unavailable` says why, instead of failing the others.

    `on_plan(name, plan)` is called with each plan as soon as it is made and priced, so that a
    caller can show the cheap strategies' plans while the slow ones still run: in strategy
    order when the strategies run here one after another; with the rule-based ones in the
    background, each plan made here as it is made and theirs once they are joined."""
    runtime = parse_runtime(runtime)
    model = SolModel(graph, get_device(device))
    projector = ProjectedPricer(graph, model, runtime)
    pricer = projector if cost_model == "projected" else make_pricer(cost_model, graph,
                                                                      model, learned, runtime)
    strategies = list(strategies)
    # The rule-based strategies the cost search compares itself with: ours before it.
    rules = [name for name in strategies[:strategies.index("cost")]
             if name in OUR_STRATEGIES] if "cost" in strategies else []
    if concurrent is None:
        concurrent = len(graph) >= CONCURRENT_NODES and _can_fork()
    background = None
    if rules and concurrent:
        background = _RulesInBackground(graph, model, projector, rules, pricer)
    plans: dict[str, FusionPlan] = {}

    def made(name: str, plan: FusionPlan) -> None:
        plan.runtime = runtime
        plans[name] = plan
        if on_plan is not None:
            on_plan(name, plan)

    try:
        for name in strategies:
            if background is not None and name in rules:
                continue
            # The cost search prices with the chosen model and compares itself with the plans
            # made before it (in the background: once its own search is done).
            extra = {}
            if name == "cost":
                others = background.join if background is not None else \
                    {rule: plans[rule] for rule in rules}
                extra = {"pricer": pricer, "others": others}
            made(name, _run_strategy(name, graph, model, projector, extra))
    finally:
        if background is not None:
            background.close()
    if background is not None:
        for name, plan in background.join().items():
            made(name, plan)
    return {name: plans[name] for name in strategies}


def _run_strategy(name: str, graph: Graph, model: SolModel, projector: ProjectedPricer,
                  extra: dict) -> FusionPlan:
    """One strategy's plan, timed (explore_ms), its kernels priced by `projector`."""
    module, function = STRATEGIES[name]
    strategy = getattr(import_module(module), function)
    start = time.perf_counter()
    try:
        with cyclic_gc_paused():
            plan = strategy(graph, model, **extra)
    except StrategyUnavailable as reason:
        return FusionPlan(name, model.device.name, [], [], unavailable=str(reason),
                          explore_ms=(time.perf_counter() - start) * 1e3)
    plan.explore_ms = (time.perf_counter() - start) * 1e3
    with cyclic_gc_paused():
        price_plan(plan, projector)
    return plan


def _can_fork() -> bool:
    """Whether a forked helper process can run beside this one: a second CPU to run on,
    os.fork, and no other thread (a lock another thread holds would stay held in the child)."""
    return hasattr(os, "fork") and (os.cpu_count() or 1) > 1 \
        and threading.active_count() == 1 and os.environ.get(SERIAL_ENV) != "1"


class _RulesInBackground:
    """The rule-based strategies (unfused, xla, stitch), each priced, in a forked process, while
    the cost search runs in this one: on two cores the wall time of `explore` is about the cost
    search's alone. The cost search needs their plans only at its end, to compare itself with
    them (`join`).

    The child writes its plans, and the price of every kernel in them, to a temporary file and
    says so ("ready"); `join` loads them and hands the prices to this process's projected
    pricer, so the kernels the cost search shares with them are not priced twice. Then the
    child prices ahead for the cost search until it is stopped: it is the search's pricer's
    `assistant` (pricing.Pricer), taking the candidates the search will price next
    (`submit`) and answering with their prices (`collect`), so the two CPUs price at once.
    Prices depend on the kernel alone, so who prices one changes nothing.

    When the child fails, nothing is lost: an error in a strategy is raised here as it would
    be without the child; a child that dies is replaced by running the strategies here, and
    the candidates it was pricing are priced here."""

    # Candidates handed to the child and not yet answered: enough that it never waits for the
    # next one, few enough that the answers fit the connection's buffer.
    AHEAD = 2

    def __init__(self, graph: Graph, model: SolModel, projector: ProjectedPricer,
                 names: list[str], pricer: Pricer):
        self.graph, self.model, self.projector, self.names = graph, model, projector, names
        self.pricer = pricer
        self.file = tempfile.TemporaryFile()
        self.plans: dict[str, FusionPlan] | None = None
        ours, theirs = multiprocessing.Pipe()
        self.pid = os.fork()
        if self.pid == 0:
            ours.close()
            self._child(theirs)
        theirs.close()
        self.connection: Connection | None = ours
        self.ready: bool | None = None    # the rules' file is written (False: the child failed)
        self.pending: dict[int, Hashable] = {}  # request -> the kernel's structural key
        self.answers: dict[Hashable, Price] = {}
        self._requests = itertools.count()
        self.helped = 0                    # prices the child found for the cost search
        if pricer.name != "sol":  # a speed of light costs less than asking for it
            pricer.assistant = self

    # -- the child --------------------------------------------------------------------------------

    def _child(self, connection: Connection) -> None:
        code = 0
        try:
            try:
                plans = {name: _run_strategy(name, self.graph, self.model, self.projector, {})
                         for name in self.names}
                prices = {name: [self.projector.price(kernel) for kernel in plan.kernels]
                          for name, plan in plans.items()}
                result = ("ok", plans, prices)
            except BaseException as error:  # handed to the parent, which raises it
                result = ("error", error, None)
            pickle.dump(result, self.file, protocol=pickle.HIGHEST_PROTOCOL)
            self.file.flush()
            connection.send(("ready",))
            while True:
                message = connection.recv()
                if message[0] == "stop":
                    break
                _, request, kernel = message
                try:
                    price = self.pricer.price(kernel)
                except Exception:  # the parent prices it and meets the error itself
                    price = None
                connection.send(("price", request, price))
        except BaseException:
            code = 1
        finally:
            os._exit(code)

    # -- pricing ahead (the cost search's pricer calls these) ------------------------------------

    def wants_more(self) -> bool:
        """Whether the child is ready for another candidate."""
        self._receive(block=False)
        return self.ready is True and len(self.pending) < self.AHEAD

    def submit(self, key: Hashable, kernel) -> None:
        """Have the child price `kernel` (structural key `key`)."""
        if key in self.answers or key in self.pending.values() or self.connection is None:
            return
        request = next(self._requests)
        try:
            self.connection.send(("price", request, kernel))
        except OSError:
            self._lost()
            return
        self.pending[request] = key

    def answered(self, key: Hashable) -> bool:
        """Whether the child's price of that kernel is here."""
        return key in self.answers

    def has(self, key: Hashable) -> bool:
        """Whether the child was asked for that kernel's price (answered or not)."""
        return key in self.answers or key in self.pending.values()

    def pricing(self, key: Hashable) -> bool:
        """Whether the child was asked for that kernel's price and has not answered yet."""
        self._receive(block=False)
        return key in self.pending.values()

    def collect(self, key: Hashable) -> Price | None:
        """The child's price of the kernel with structural key `key`, waiting for it when the
        child is pricing it; None when it was not asked (or failed)."""
        while key not in self.answers and key in self.pending.values():
            self._receive(block=True)
        price = self.answers.pop(key, None)
        if price is not None:
            self.helped += 1
        return price

    def _receive(self, block: bool) -> None:
        """Take the child's messages: all that arrived, or with `block` at least one."""
        connection = self.connection
        try:
            while connection is not None and (block or connection.poll()):
                message = connection.recv()
                block = False
                if message[0] == "ready":
                    self.ready = True
                else:
                    _, request, price = message
                    key = self.pending.pop(request)
                    if price is not None:
                        self.answers[key] = price
        except (EOFError, OSError):
            self._lost()

    def _lost(self) -> None:
        """The child is gone: nothing more will come from it."""
        if self.connection is not None:
            self.connection.close()
        self.connection = None
        self.pending.clear()
        if self.ready is None:
            self.ready = False

    # -- the end ----------------------------------------------------------------------------------

    def join(self) -> dict[str, FusionPlan]:
        """The rule-based plans (waiting for the child the first time)."""
        if self.plans is not None:
            return self.plans
        while self.ready is None:
            self._receive(block=True)
        result = None
        if self.ready:
            self.file.seek(0)
            result = pickle.load(self.file)
        if result is None:  # the child died: make the plans here
            self.plans = {name: _run_strategy(name, self.graph, self.model, self.projector, {})
                          for name in self.names}
            return self.plans
        outcome, plans, prices = result
        if outcome == "error":
            raise plans
        for name, plan in plans.items():
            for kernel, price in zip(plan.kernels, prices[name]):
                self.projector.remember(kernel, price)
        self.plans = plans
        return plans

    def close(self) -> None:
        """Stop the child (whatever it is pricing is not needed any more)."""
        self.pricer.assistant = None
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = None
        self.file.close()


def exploration_to_dict(summary: dict, device: str, plans: dict[str, FusionPlan],
                        entries: dict[str, dict] | None = None) -> dict:
    """The `explore --json` object: {"graph", "device", "runtime", "launch": the device's
    launch figures with their sources (compiler/target/launch.py), "strategies": {name: plan}}.
    `entries`: plans' `to_dict()` made before (by name), used instead of making them again.
    """
    entries = entries or {}
    strategies = {name: entries[name] if name in entries else plan.to_dict()
                  for name, plan in plans.items()}
    baseline = plans.get("unfused")
    for name, plan in plans.items():
        if baseline is not None and plan.total_sol_us > 0:
            strategies[name]["total"]["speedup_vs_unfused"] = \
                baseline.total_sol_us / plan.total_sol_us
    runtime = next((plan.runtime for plan in plans.values()), DEFAULT_RUNTIME)
    return {"graph": summary, "device": device, "runtime": runtime,
            "launch": terms_for(device).to_dict(), "strategies": strategies}
