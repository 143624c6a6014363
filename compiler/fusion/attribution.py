"""Why one plan of a graph is faster than another, by cause.

Two plans cut the same graph into kernels differently. Their kernels are grouped into
*regions*: the smallest sets of kernels of A and of B that compute the same nodes (a kernel of
A and one of B sharing an owned node are in one region, and so on transitively). A region is
one of:
- "same": one kernel on each side, owning the same nodes;
- "merged": several kernels of A became one of B; "split": one of A became several of B;
- "regrouped": several on each side, cut differently;
- "only in A" / "only in B": kernels whose nodes the other plan does not compute (plans of
  different graphs, or nodes one plan folded away).

Each kernel's projected time is split into causes: its launch term (under the runtime asked
for, compiler/target/launch.py), its grid barriers, and its busy time, charged to what bounds it
(the projected breakdown's limiter): DRAM, L2 and on-chip traffic (L2, load/store issue,
shuffles), the compute pipes (FP32, integer, MUFU, FP64, conversions, tensor cores) or latency
(no unit busy enough: waiting on memory round trips and dependent arithmetic). A region's
causes are the sums over its kernels, and the difference B - A per cause says what the
regrouping changed: the differences add up to the change of the region's time, and the
regions' to the change of the plan's. A negative difference is time B saves.

The functions read plans as `explore --json` and the run pages hold them (a strategy's dict
with its kernels), so the command line and the web app explain with the same numbers. Plans
made before kernels carried their device work and launch terms separately (no "device_us")
cannot be explained: `explain` returns None for them.
"""

from __future__ import annotations

from collections import defaultdict

CAUSES = ("launch", "dram", "on-chip", "compute", "barriers", "latency")
CAUSE_LABELS = {"launch": "launches", "dram": "DRAM", "on-chip": "L2 and on-chip",
                "compute": "compute pipes", "barriers": "grid barriers", "latency": "latency"}
# The projected breakdown's limiters (projected.py, and a library kernel's tensor pipes) by cause.
_ON_CHIP = ("l2", "lsu", "shfl")
_LATENCY = ("latency",)


def cause_of(limiter: str | None) -> str:
    """The cause a kernel's busy time is charged to, from its device limiter."""
    if limiter == "dram":
        return "dram"
    if limiter in _ON_CHIP:
        return "on-chip"
    if limiter in _LATENCY or limiter is None:
        return "latency"
    return "compute"


def kernel_causes(kernel: dict, runtime: str) -> dict[str, float] | None:
    """A kernel's projected time under `runtime`, split by cause (module docstring); None
    when the kernel has no projection."""
    device_us, launch = kernel.get("device_us"), kernel.get("launch")
    if device_us is None or not launch:
        return None
    breakdown = kernel.get("projected") or {}
    barriers = breakdown.get("grid_sync_us") or 0.0
    causes = dict.fromkeys(CAUSES, 0.0)
    causes["launch"] = launch[runtime]
    causes["barriers"] = barriers
    causes[cause_of(breakdown.get("limiter") or kernel.get("device_limiter"))] += \
        max(0.0, device_us - barriers)
    return causes


def regions(kernels_a: list[dict], kernels_b: list[dict]) -> list[tuple[list[int], list[int]]]:
    """The regions of two plans (module docstring): (indices of A's kernels, of B's), in the
    order of their first kernel of A (then of B)."""
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(item):
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    def union(x, y):
        root_x, root_y = find(x), find(y)
        if root_x != root_y:
            parent[max(root_x, root_y)] = min(root_x, root_y)

    owner: dict[str, tuple[str, int]] = {}
    for side, kernels in (("a", kernels_a), ("b", kernels_b)):
        for index, kernel in enumerate(kernels):
            item = (side, index)
            parent[item] = item
            for node in kernel["nodes"]:
                other = owner.get(node)
                if other is None:
                    owner[node] = item
                elif other[0] != side:
                    union(other, item)
    members: dict[tuple[str, int], tuple[list[int], list[int]]] = defaultdict(
        lambda: ([], []))
    for item in parent:
        side, index = item
        members[find(item)][0 if side == "a" else 1].append(index)
    return sorted(((sorted(a), sorted(b)) for a, b in members.values()),
                  key=lambda pair: (not pair[0], pair[0][:1], pair[1][:1]))


def region_kind(count_a: int, count_b: int, same_nodes: bool) -> str:
    if not count_b:
        return "only in A"
    if not count_a:
        return "only in B"
    if count_a == 1 and count_b == 1:
        return "same" if same_nodes else "regrouped"
    if count_b == 1:
        return "merged"
    if count_a == 1:
        return "split"
    return "regrouped"


def explain(plan_a: dict, plan_b: dict, runtime: str) -> dict | None:
    """Why plan B's projected time differs from plan A's under `runtime` (module docstring):
    {"runtime", "a_us", "b_us", "delta_us", "causes": [{"cause", "label", "a_us", "b_us",
    "delta_us"}] largest change first, "regions": [{"kind", "a", "b" (kernel names), "nodes",
    "a_us", "b_us", "delta_us", "dram_delta_bytes", "causes": {cause: delta}, "top": the
    cause that changed most}] largest change first}. None when a plan's kernels carry no
    device work and launch terms (compiled before they did) or have no projection."""
    kernels_a, kernels_b = plan_a["kernels"], plan_b["kernels"]
    causes_a = [kernel_causes(k, runtime) for k in kernels_a]
    causes_b = [kernel_causes(k, runtime) for k in kernels_b]
    if None in causes_a or None in causes_b:
        return None
    rows = []
    for members_a, members_b in regions(kernels_a, kernels_b):
        summed_a = _summed(causes_a[i] for i in members_a)
        summed_b = _summed(causes_b[j] for j in members_b)
        deltas = {cause: summed_b[cause] - summed_a[cause] for cause in CAUSES}
        nodes_a = {n for i in members_a for n in kernels_a[i]["nodes"]}
        nodes_b = {n for j in members_b for n in kernels_b[j]["nodes"]}
        a_us, b_us = sum(summed_a.values()), sum(summed_b.values())
        rows.append({
            "kind": region_kind(len(members_a), len(members_b), nodes_a == nodes_b),
            "a": [kernels_a[i]["name"] for i in members_a],
            "b": [kernels_b[j]["name"] for j in members_b],
            "nodes": len(nodes_a | nodes_b), "a_us": a_us, "b_us": b_us,
            "delta_us": b_us - a_us,
            "dram_delta_bytes": sum(kernels_b[j].get("dram_bytes") or 0 for j in members_b)
            - sum(kernels_a[i].get("dram_bytes") or 0 for i in members_a),
            "causes": deltas,
            "top": max(CAUSES, key=lambda cause: abs(deltas[cause]))})
    rows.sort(key=lambda row: -abs(row["delta_us"]))
    total_a, total_b = _summed(causes_a), _summed(causes_b)
    causes = sorted(({"cause": cause, "label": CAUSE_LABELS[cause], "a_us": total_a[cause],
                      "b_us": total_b[cause], "delta_us": total_b[cause] - total_a[cause]}
                     for cause in CAUSES), key=lambda row: -abs(row["delta_us"]))
    a_us, b_us = sum(total_a.values()), sum(total_b.values())
    return {"runtime": runtime, "a_us": a_us, "b_us": b_us, "delta_us": b_us - a_us,
            "causes": causes, "regions": rows}


def _summed(parts) -> dict[str, float]:
    total = dict.fromkeys(CAUSES, 0.0)
    for part in parts:
        for cause, value in part.items():
            total[cause] += value
    return total


def summary_text(explanation: dict, name_a: str, name_b: str, limit: int = 3) -> str:
    """One sentence a person reads first: "cost is 228.1 µs faster than xla-gpu as a CUDA
    graph: launches 34.5 µs, DRAM 180.2 µs, latency -2.0 µs (and 3 more causes)"."""
    delta = explanation["delta_us"]
    if abs(delta) < 1e-9:
        return f"{name_b} and {name_a} take the same projected time"
    faster, slower = (name_b, name_a) if delta < 0 else (name_a, name_b)
    moved = [row for row in explanation["causes"] if abs(row["delta_us"]) >= 1e-9]
    parts = [f"{row['label']} {_signed(-row['delta_us'] if delta < 0 else row['delta_us'])}"
             for row in moved[:limit]]
    more = len(moved) - limit
    tail = f" (and {more} more cause{'s' if more > 1 else ''})" if more > 0 else ""
    return (f"{faster} is {abs(delta):,.1f} µs faster than {slower}: "
            f"{', '.join(parts)}{tail}")


def _signed(value: float) -> str:
    return f"{value:,.1f} µs" if value >= 0 else f"−{-value:,.1f} µs"
