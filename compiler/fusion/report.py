"""The human-readable form of an exploration: strategies side by side, then each plan."""

from __future__ import annotations


def format_exploration(result: dict, max_kernels: int = 40) -> str:
    graph = result["graph"]
    runtime = result.get("runtime", "graph")
    other = "stream" if runtime == "graph" else "graph"
    lines = [f"graph {graph['name']}: {graph['nodes']} nodes, device {result['device']}, "
             f"kernels launched as {runtime} (--runtime)", ""]
    lines.append(f"{'strategy':10s} {'kernels':>8s} {'DRAM MB':>10s} {'SOL µs':>10s} "
                 f"{'device µs':>10s} {'launch µs':>10s} {'proj µs':>10s} "
                 f"{'as ' + other:>10s} {'vs unfused':>10s} {'explore ms':>10s}  decided by")
    for name, plan in result["strategies"].items():
        if plan.get("unavailable"):
            lines.append(f"{name:10s} {'-':>8s} {'-':>10s} {'-':>10s} {'-':>10s} {'-':>10s} "
                         f"{'-':>10s} {'-':>10s} {'-':>10s} {plan['explore_ms']:10.1f}  "
                         "not available")
            continue
        total = plan["total"]
        speedup = total.get("speedup_vs_unfused")
        decider = (f"{plan['cost_model']} model" if plan.get("cost_model")
                   else "a plan file" if name.startswith("custom") else "rules")
        other_us = ((total.get("runtimes") or {}).get(other) or {}).get("proj_us")
        lines.append(f"{name:10s} {plan['kernel_count']:8d} {total['dram_bytes'] / 1e6:10.3f} "
                     f"{total['sol_us']:10.2f} {_number(total.get('device_us'), '10.2f')} "
                     f"{_number(total.get('launch_us'), '10.2f')} "
                     f"{_number(total.get('proj_us'), '10.2f')} {_number(other_us, '10.2f')} "
                     f"{(f'{speedup:.2f}x' if speedup else '-'):>10s} {plan['explore_ms']:10.1f}"
                     f"  {decider}")
    lines.append("SOL: the speed of light of the device work; device: projected device work; "
                 f"launch: the launch terms as {runtime}; proj: device + launch.")
    lines += _learned_lines(result)
    for name, plan in result["strategies"].items():
        if plan.get("unavailable"):
            lines += ["", f"== {name}: not available: {plan['unavailable']}"]
            continue
        lines += ["", f"== {name}: {plan['kernel_count']} kernels "
                      f"({', '.join(f'{k} {n}' for k, n in sorted(plan['kinds'].items()))})"]
        lines.append(f"  {'kernel':22s} {'nodes':>5s} {'DRAM bytes':>12s} {'SOL µs':>8s} "
                     f"{'device µs':>9s} {'launch µs':>9s} {'proj µs':>8s}  {'limiter':8s} "
                     "dominant")
        for kernel in plan["kernels"][:max_kernels]:
            lines.append(f"  {kernel['name']:22s} {len(kernel['nodes']):5d} "
                         f"{kernel['dram_bytes']:12,d} {kernel['sol_us']:8.2f} "
                         f"{_number(kernel.get('device_us'), '9.2f')} "
                         f"{_number(kernel.get('launch_us'), '9.2f')} "
                         f"{_number(kernel.get('proj_us'), '8.2f')}  "
                         f"{(kernel.get('limiter') or '-'):8s} {kernel['dominant'] or ''}"
                         + (f"  (XLA: {kernel['xla_name']})" if kernel.get("xla_name") else ""))
        if len(plan["kernels"]) > max_kernels:
            lines.append(f"  ... {len(plan['kernels']) - max_kernels} more (--json lists all)")
        outliers = [k for k in plan["kernels"] if k.get("outlier_reason")]
        for kernel in outliers[:max_kernels]:
            lines.append(f"  outlier {kernel['name']}: {kernel['outlier_reason']}")
        refused = sum(1 for d in plan["decisions"] if d["action"] == "refuse")
        lines.append(f"  decisions: {len(plan['decisions']) - refused} fused, {refused} refused "
                     "(--json lists them with reasons)")
    return "\n".join(lines)


def _learned_lines(result: dict) -> list[str]:
    """The learned model's plan totals (with --learned-model), after the summary table."""
    lines = []
    for name, plan in result["strategies"].items():
        model, total = plan.get("learned_model"), plan["total"]
        if not model:
            continue
        if "error" in model:
            lines.append(f"{name:10s} learned: no prediction: {model['error']}")
            continue
        note = " (SYNTHETIC targets: not a GPU prediction)" if model["origin"] == "synthetic" \
            else ""
        lines.append(f"{name:10s} learned {_number(total.get('learned_us'), '10.2f')} µs by "
                     f"{model['label']}{note}: {total.get('learned_kernels') or 0} of "
                     f"{plan['kernel_count']} kernels predicted, the others projected"
                     + (f" ({total['learned_outside']} outside what it was trained on)"
                        if total.get("learned_outside") else ""))
    return [""] + lines if lines else []


def _number(value, fmt: str) -> str:
    width = fmt.split(".")[0]
    return format("-", f">{width}") if value is None else format(value, fmt)


def format_codegen(result: dict) -> str:
    """Per strategy, per kernel: schedule, launch, ptxas resources, emulation error."""
    lines = [f"graph {result['graph']['name']}: device {result['device']}"]
    lines += _learned_lines(result)
    for name, plan in result["strategies"].items():
        if plan.get("unavailable"):
            lines += ["", f"== {name}: not available: {plan['unavailable']}"]
            continue
        lines += ["", f"== {name}: {plan['kernel_count']} kernels"]
        lines.append(f"  {'function':28s} {'schedule':20s} {'block':>5s} {'grid':>7s} "
                     f"{'regs':>4s} {'smem':>6s} {'spill':>5s} {'proj µs':>8s} {'limiter':8s} "
                     f"{'occ':>4s} {'max err':>9s}  notes")
        for k in plan["kernels"]:
            if k["kind"] == "library":
                lines.append(f"  {k['name']:28s} {'library call':20s}")
                continue

            def show(value, fmt):
                return "-" if value is None else format(value, fmt)

            lines.append(
                f"  {(k['function'] or k['name']):28s} {(k['schedule'] or '-'):20s} "
                f"{show(k['block_size'], '5d')} {show(k['grid_size'], '7d')} "
                f"{show(k['registers'], '4d')} {show(k['shared_bytes'], '6d')} "
                f"{show(k['spill_bytes'], '5d')} {show(k.get('proj_us'), '8.2f')} "
                f"{(k.get('limiter') or '-'):8s} "
                f"{show(None if k.get('occupancy') is None else 100 * k['occupancy'], '3.0f')}% "
                f"{show(k['max_abs_error'], '9.2e')}  "
                f"{k['codegen_error'] or k.get('not_checked') or ''}"[:400])
    return "\n".join(lines)
