"""Fitting the projected model's derating constants to measured kernel times.

A record is one kernel measured on one device under one CodeGen plan: the workload the model
priced (`Workload.to_dict()`), the resources ptxas reported, and the measured time. Records are
JSON lines; the GPU runner writes them (`record(...)`), `python -m compiler calibrate FILE`
reads them:

    {"device": "h100", "kernel": "...", "plan": "<CodeGenPlan.key()>",
     "workload": {...}, "resources": {"registers": 32, "static_shared_bytes": 0,
     "spill_bytes": 0}, "measured_us": 12.5}

Measured times are of kernels timed alone, so the model's time compared with them is its device
work plus what a lone launch adds on the device (compiler/target/launch.py, `alone_us`).

`fit` minimises the mean squared error of log(projected / measured) over the four constants of
`Derating` by coordinate descent (a golden-section search per constant within its bounds,
sweeps until nothing moves), so a kernel 2x too slow and one 2x too fast weigh the same
whatever their size. The report gives the error before and after (MAPE, median APE, the
largest APE) and, for kernels measured under several plans, Kendall's tau between projected
and measured times: how well the model ranks a kernel's plans, which is what codegen uses it
for.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from compiler.cost.plan_ranking import kendall_tau
from compiler.cost.projected import Derating, ProjectedModel, Resources
from compiler.codegen.schedules import kernel_workload
from compiler.codegen.workload import Workload
from compiler.errors import InputError
from compiler.limits import decode_utf8, read_limited
from compiler.target.devices import Device
from compiler.target.launch import terms_for

# Each constant's search interval: wide enough for any sane device, narrow enough that a fit
# on few records cannot run off to a degenerate corner.
BOUNDS = {
    "dram_efficiency": (0.3, 1.0),
    "l2_efficiency": (0.2, 1.0),
    "pipe_efficiency": (0.2, 1.0),
    "latency_scale": (0.2, 5.0),
}
_GOLDEN = (math.sqrt(5) - 1) / 2


@dataclass(frozen=True)
class Record:
    device: str
    kernel: str
    plan: str
    workload: Workload
    resources: Resources
    measured_us: float

    def to_dict(self) -> dict:
        return {"device": self.device, "kernel": self.kernel, "plan": self.plan,
                "workload": self.workload.to_dict(), "resources": asdict(self.resources),
                "measured_us": self.measured_us}


def workload_from_dict(data: dict) -> Workload:
    """The fields the projected model reads (accesses are descriptive and not restored)."""
    names = {f.name for f in fields(Workload)} - {"accesses"}
    return Workload(**{k: v for k, v in data.items() if k in names})


def record_from_dict(data: dict, where: str = "record") -> Record:
    try:
        resources = Resources(**data["resources"])
        measured = float(data["measured_us"])
        workload = workload_from_dict(data["workload"])
    except KeyError as error:
        raise InputError(f"{where}: not a calibration record (no {error.args[0]!r})") from None
    except (TypeError, ValueError, AttributeError) as error:
        raise InputError(f"{where}: not a calibration record ({error})") from None
    if not measured > 0:
        raise InputError(f"{where}: measured_us must be a positive number, not {measured}")
    return Record(str(data.get("device", "")), str(data.get("kernel", "")),
                  str(data.get("plan", "")), workload, resources, measured)


def load_records(path: str | Path) -> list[Record]:
    """Records from a JSON-lines file; a bad line is an InputError naming its line number."""
    records = []
    text = decode_utf8(read_limited(path), str(path))
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}:{number}:{error.colno}: {error.msg}") from None
        records.append(record_from_dict(data, f"{path}:{number}"))
    if not records:
        raise InputError(f"{path}: no calibration records")
    return records


@dataclass(frozen=True)
class ErrorSummary:
    count: int
    mape: float            # mean absolute percentage error
    median_ape: float
    max_ape: float

    def to_dict(self) -> dict:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(self).items()}


def alone_us(model: ProjectedModel, record: Record) -> float:
    """The model's time for the record's kernel timed alone: its projected device work and
    what a lone launch adds on the device."""
    return model.project(record.workload, record.resources).projected_us + \
        terms_for(model.device).alone_us


def errors(model: ProjectedModel, records: list[Record]) -> ErrorSummary:
    apes = sorted(100.0 * abs(alone_us(model, r) - r.measured_us) / r.measured_us
                  for r in records)
    middle = len(apes) // 2
    median = apes[middle] if len(apes) % 2 else (apes[middle - 1] + apes[middle]) / 2
    return ErrorSummary(len(apes), sum(apes) / len(apes), median, apes[-1])


def ranking_quality(model: ProjectedModel, records: list[Record]) -> dict:
    """How well projected times order the plans of each kernel: Kendall's tau between
    projected and measured times per kernel with at least two measured plans, and the mean."""
    by_kernel: dict[str, list[Record]] = {}
    for r in records:
        by_kernel.setdefault(r.kernel, []).append(r)
    taus = {}
    for kernel, group in by_kernel.items():
        projected = [alone_us(model, r) for r in group]
        tau = kendall_tau(projected, [r.measured_us for r in group])
        if tau is not None:
            taus[kernel] = tau
    mean = sum(taus.values()) / len(taus) if taus else None
    return {"kernels": len(taus), "mean_tau": None if mean is None else round(mean, 4),
            "per_kernel": {k: round(v, 4) for k, v in sorted(taus.items())}}


def _loss(device: Device, derating: Derating, records: list[Record]) -> float:
    model = ProjectedModel(device, derating)
    return sum(math.log(alone_us(model, r) / r.measured_us) ** 2
               for r in records) / len(records)


def fit(device: Device, records: list[Record], start: Derating | None = None,
        sweeps: int = 8, tolerance: float = 1e-4) -> tuple[Derating, dict]:
    """The derating constants that fit `records` best, and the report
    {"before": ErrorSummary, "after": ErrorSummary, "constants": {...}, "start": {...}}."""
    others = {r.device for r in records} - {device.name, ""}
    if others:
        raise InputError(f"records of {', '.join(sorted(others))} cannot calibrate "
                         f"{device.name}")
    current = start or Derating()
    before = errors(ProjectedModel(device, current), records)
    loss = _loss(device, current, records)
    for _ in range(sweeps):
        previous = loss
        for name, (low, high) in BOUNDS.items():
            def at(value: float, name=name) -> float:
                return _loss(device, Derating(**{**asdict(current), name: value}), records)

            a, b = low, high
            c, d = b - _GOLDEN * (b - a), a + _GOLDEN * (b - a)
            fc, fd = at(c), at(d)
            while b - a > tolerance * (high - low):
                if fc <= fd:
                    b, d, fd = d, c, fc
                    c = b - _GOLDEN * (b - a)
                    fc = at(c)
                else:
                    a, c, fc = c, d, fd
                    d = a + _GOLDEN * (b - a)
                    fd = at(d)
            best = (a + b) / 2
            if at(best) < loss:
                current = Derating(**{**asdict(current), name: best})
                loss = at(best)
        if previous - loss < 1e-9:
            break
    after = errors(ProjectedModel(device, current), records)
    ranking = ranking_quality(ProjectedModel(device, current), records)
    return current, {"before": before.to_dict(), "after": after.to_dict(),
                     "ranking_after": {k: v for k, v in ranking.items() if k != "per_kernel"},
                     "constants": current.to_dict(), "start": (start or Derating()).to_dict()}


def make_record(graph, kernel, plan, device: Device, resources: Resources,
                measured_us: float, name: str | None = None) -> Record:
    """The record of `kernel` (a fusion-plan Kernel) measured under CodeGen plan `plan`.
    `name` identifies the kernel across records (plans of one kernel share it; default the
    kernel's name, which is unique within one fusion plan only)."""

    return Record(device.name, name or kernel.name, plan.key(),
                  kernel_workload(graph, kernel, plan, device), resources, measured_us)
