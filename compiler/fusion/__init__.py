"""Fusion strategies: each cuts a Graph into kernels and returns a FusionPlan
(compiler/kernels/plan.py).

`explore(graph, device, strategies)` runs the chosen strategies and times each; the registry
`STRATEGIES` maps a strategy's name to its function `(graph, model) -> FusionPlan`.
"""
