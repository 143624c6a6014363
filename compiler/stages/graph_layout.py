"""Where the fusion view draws each node: a layered layout of one plan, in two levels.

    layout = plan_layout(view)      # view: graph_view.fusion_graph's object

Model Explorer lays out a big graph one namespace at a time; here the kernels are the
namespaces.
- **The plan level** has one vertex per kernel and one per node that no kernel computes
  (parameters, constants read from memory, tuples), and an edge wherever a value flows between
  two of them.
- **Inside each kernel** are its ops: those it owns and those it recomputes.

Each level is laid out the same way, top-down, by the classic steps of Sugiyama, Tagawa and
Toda ("Methods for visual understanding of hierarchical system structures", IEEE SMC 1981):
1. Layers: the longest path from a source, so every edge goes down at least one layer. A
   source (a parameter, a constant) sits just above its first reader, not at the top.
2. Order within each layer: barycentre sweeps. Down, then up, each layer's vertices are sorted
   by the mean position of their neighbours in the layers next to them. This cuts crossings.
3. x positions: each vertex goes under the mean of its parents, and no closer than one unit to
   its left neighbour. Chains come out straight.

Only edges of at most SPAN layers steer steps 2 and 3. A training step's backward pass reads
forward values thousands of layers up; those edges are still drawn.

The result keeps only layers and x positions. The browser turns them into pixels with each
box's size, so expanding or collapsing a kernel needs no new layout (static/explorer/
fusion_view.js).

Why not a library's layout. Each was tried on the 48-layer benchmark step (16,647 nodes; 8,679
plan-level vertices under `xla`):
- python-igraph 1.0's Sugiyama, given the layers, crashed the process (a segmentation fault,
  not every time) on a 176-op kernel of that step. A crash would take a web worker with it.
  Left to find the layers itself, igraph took 41 s.
- grandalf (pure Python) computes its own layers. With the backward pass's long edges it needs
  millions of dummy vertices.
- graphviz's dot took 372 s on the 12-layer step's kernel graph.

Steps 1-3 here take about a second on the 48-layer step.

The object (`layout` in `GET /api/v1/runs/<id>/graph`, docs/api.md):

    {"top": [{"id": kernel name or node id, "kernel": bool, "layer": int, "x": float}, ...],
     "inner": {kernel name: {"width": float, "layers": int,
                             "nodes": {node id: [x, layer], ...}}, ...},
     "layers": the plan level's layer count}
"""

from __future__ import annotations

# Barycentre sweeps per level (down, up, down, up): more barely change the drawings of the
# benchmark steps and cost time linearly.
SWEEPS = 4
# The longest edge, in layers, that steers the order and positions (module docstring).
SPAN = 4


def plan_layout(view: dict) -> dict:
    """The two-level layout (module docstring) of a fusion view object."""
    computes: dict[str, list[str]] = {k["name"]: [] for k in view["kernels"]}
    for node in view["nodes"]:
        if node["kernel"] is not None:
            computes[node["kernel"]].append(node["id"])
        for kernel in node["also_in"]:
            computes[kernel].append(node["id"])
    inside = {kernel: set(names) for kernel, names in computes.items()}
    # The plan-level vertex of each node: its kernel, or itself where no kernel computes it.
    # A node only recomputed has no vertex: every reader computes it again.
    vertex = {node["id"]: node["kernel"] or (None if node["also_in"] else node["id"])
              for node in view["nodes"]}

    top_ids = [k["name"] for k in view["kernels"]] + [
        n["id"] for n in view["nodes"] if n["kernel"] is None and not n["also_in"]]
    computed_by = {n["id"]: ([n["kernel"]] if n["kernel"] else []) + n["also_in"]
                   for n in view["nodes"]}
    readers: dict[str, set[str]] = {name: set() for name in top_ids}
    inner_edges: dict[str, list[tuple[str, str]]] = {kernel: [] for kernel in computes}
    for source, target in view["edges"]:
        for kernel in computed_by[target]:
            if source in inside[kernel]:
                inner_edges[kernel].append((source, target))
            elif vertex[source] is not None:
                readers[vertex[source]].add(kernel)
        if not computed_by[target] and vertex[source] is not None:
            readers[vertex[source]].add(target)       # into a tuple, say
    top_edges = [(source, target) for source, targets in readers.items()
                 for target in targets if target != source]
    top = _layered(top_ids, top_edges)
    inner = {}
    for kernel, names in computes.items():
        positions = _layered(names, inner_edges[kernel])
        inner[kernel] = {"width": max((x for x, _ in positions.values()), default=0) + 1,
                         "layers": max((layer for _, layer in positions.values()),
                                       default=0) + 1,
                         "nodes": {name: [x, layer] for name, (x, layer) in positions.items()}}
    kernels = set(computes)
    return {"top": [{"id": name, "kernel": name in kernels, "layer": top[name][1],
                     "x": top[name][0]} for name in top_ids],
            "inner": inner, "layers": max((layer for _, layer in top.values()), default=0) + 1}


def _layered(names: list[str], edges: list[tuple[str, str]]) -> dict[str, tuple[float, int]]:
    """name -> (x, layer) for one level (module docstring, steps 1-3)."""
    if not names:
        return {}
    index = {name: i for i, name in enumerate(names)}
    pairs = sorted({(index[a], index[b]) for a, b in edges if a != b})
    layer = _layers(len(names), pairs)
    above: list[list[int]] = [[] for _ in names]
    below: list[list[int]] = [[] for _ in names]
    for a, b in pairs:
        if layer[b] - layer[a] <= SPAN:
            below[a].append(b)
            above[b].append(a)
    rows: list[list[int]] = [[] for _ in range(max(layer) + 1)]
    for i in range(len(names)):          # graph order: a topological first guess
        rows[layer[i]].append(i)
    position = [0.0] * len(names)
    for row in rows:
        for rank, i in enumerate(row):
            position[i] = rank
    for sweep in range(SWEEPS):
        downward = sweep % 2 == 0
        for row in (rows[1:] if downward else reversed(rows[:-1])):
            neighbours = above if downward else below
            keyed = []
            for rank, i in enumerate(row):
                near = neighbours[i]
                keyed.append((sum(position[j] for j in near) / len(near) if near else rank,
                              rank, i))
            keyed.sort()
            row[:] = [i for _, _, i in keyed]
            for rank, i in enumerate(row):
                position[i] = rank
    x = [0.0] * len(names)
    for row in rows:
        right = -1.0
        for i in row:
            parents = above[i]
            wanted = sum(x[j] for j in parents) / len(parents) if parents else right + 1
            x[i] = max(wanted, right + 1)
            right = x[i]
    return {name: (round(x[i], 3), layer[i]) for i, name in enumerate(names)}


def _layers(count: int, pairs: list[tuple[int, int]]) -> list[int]:
    """Longest-path layers (Kahn's order), sources moved down to just above their first
    reader, empty layers closed up. ValueError on a cycle."""
    successors: list[list[int]] = [[] for _ in range(count)]
    pending = [0] * count
    for a, b in pairs:
        successors[a].append(b)
        pending[b] += 1
    sources = [waiting == 0 for waiting in pending]
    layer = [0] * count
    ready = [i for i in range(count) if pending[i] == 0]
    for i in ready:                       # grows while it is walked
        for j in successors[i]:
            layer[j] = max(layer[j], layer[i] + 1)
            pending[j] -= 1
            if pending[j] == 0:
                ready.append(j)
    if len(ready) != count:
        raise ValueError("the plan's kernels form a cycle: no layered layout exists")
    for i in range(count):
        if sources[i] and successors[i]:
            layer[i] = min(layer[j] for j in successors[i]) - 1
    used = {value: rank for rank, value in enumerate(sorted(set(layer)))}
    return [used[value] for value in layer]
