"""Interactive charts: plotly.js figures built on the server with the `plotly` package.

Each function returns a figure as plotly.js takes it ({"data": [...], "layout": {...}}), or
{"empty": why} when there is nothing to draw; the plan views serve them as JSON
(explorer/views.py `plan_plot`, cached with the run's results) and static/explorer/plots.js
draws them with plotly.js's basic bundle, loaded only when a chart is opened. Every point that
stands for a kernel carries its kernel page's address in `customdata`, which a click follows,
and a hover card names it with its figures.

Charts that gain from hovering, zooming and clicking are drawn here; small fixed charts (the
comparison bars, sparklines, a kernel's own roofline) stay server-drawn SVG (explorer/charts.py).
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.target.devices import Device
from explorer.presenters import roofline

# Colours shared with the SVG charts (explorer/charts.py): one per model.
COLOURS = {"projected": "#3b6fd8", "measured": "#1f9e89", "learned": "#c2561b",
           "sol": "#6b7280", "roof": "#1d2330"}
FONT = {"family": "system-ui, sans-serif", "size": 12}
GRID = "#e5e7eb"

# What plots.js may draw of a plan: chart name -> its title on the page (the first opens first).
PLAN_CHARTS = {"timeline": "Timeline", "roofline": "Roofline",
               "accuracy": "Measured vs predicted"}
CRITICAL = "#d97706"
LINK_NAMES = {"nvlink": "NVLink", "ib": "InfiniBand"}
COMMUNICATION = {"step_end": "#9333ea", "when_ready": "#db2777"}


def _figure(traces: list, layout: dict) -> dict:
    """The plotly.js JSON of a figure (plotly's own validation of every property on the way)."""
    import plotly.graph_objects as go   # 0.3 s to import: only when a chart is built

    axis = {"gridcolor": GRID, "zeroline": False, "linecolor": GRID, "automargin": True}
    layout = {"font": FONT, "margin": {"l": 70, "r": 20, "t": 40, "b": 60},
              "hovermode": "closest", "template": "none", "paper_bgcolor": "white",
              "plot_bgcolor": "white", "legend": {"orientation": "h", "y": -0.2}, **layout}
    for name in ("xaxis", "yaxis"):
        layout[name] = {**axis, **layout.get(name, {})}
    return go.Figure(traces, layout).to_plotly_json()


def _scatter(**fields):
    import plotly.graph_objects as go

    return go.Scatter(**fields)


def timeline(document: dict) -> dict:
    """A plan's timeline (explorer/timelines.py `timeline_document`): one lane per model with
    its kernels in launch order (those on the critical path in another colour), a lane of the
    moments the graph's outputs are ready, and with a data-parallel set-up, a lane of gradient
    all-reduce buckets for each way of releasing outputs; the title says the totals and the
    communication each leaves exposed."""
    from compiler.stages.dp import RELEASE_LABELS

    plan = document["timeline"]
    if plan.get("unavailable"):
        return {"empty": f"No timeline: {plan['unavailable']}."}
    kernels, models = plan["kernels"], plan["models"]
    traces = []
    for model in models:
        critical = set(plan["critical_path"].get(model, {}).get("kernels", ()))
        traces.append(_bars(
            f"kernels ({model})", model,
            [(k["start_us"][model], k["end_us"][model]) for k in kernels],
            [COLOURS[model] if k["name"] not in critical else CRITICAL for k in kernels],
            [k["url"] for k in kernels],
            [f"{_kernel_card(k)}<br>{model}: {k['start_us'][model]:,.2f} to "
             f"{k['end_us'][model]:,.2f} µs (launch {k['launch_us'][model]:,.2f} µs)"
             + ("<br>on the critical path" if k["name"] in critical else "")
             for k in kernels]))
    lanes = list(models)
    model = models[0]
    outputs = plan["outputs"]
    if outputs:
        urls = {k["name"]: k["url"] for k in kernels}
        lanes.append("outputs ready")
        traces.append(_scatter(
            x=[o["ready_us"][model] for o in outputs], y=["outputs ready"] * len(outputs),
            mode="markers", name=f"output ready ({model})",
            marker={"symbol": "diamond", "size": 9, "color": COLOURS["roof"]},
            customdata=[urls.get(o["kernel"]) for o in outputs],
            text=[_output_card(o, model) for o in outputs],
            hovertemplate="%{text}<extra></extra>"))
    title = [f"{model}: {plan['total_us'][model]:,.2f} µs under "
             f"{'CUDA graph' if plan['runtime'] == 'graph' else 'stream'} launches"]
    path = plan["critical_path"].get(model)
    if path:
        title.append(f"critical path {path['us']:,.2f} µs over {len(path['kernels'])} kernels")
    dp = document.get("dp")
    if dp and dp["training"]:
        setup = dp["setup"]
        for release, figures in dp["releases"].items():
            lane = f"all-reduce, {release.replace('_', ' ')}"
            lanes.append(lane)
            buckets = figures["buckets"]
            traces.append(_bars(
                RELEASE_LABELS[release], lane,
                [(b["start_us"], b["end_us"]) for b in buckets],
                [COMMUNICATION[release]] * len(buckets), [None] * len(buckets),
                [f"bucket {i}: {b['bytes'] / 2**20:,.2f} MiB, {b['gradients']} gradients"
                 f"<br>ready {b['ready_us']:,.2f} µs (after {b['kernel']}), all-reduce "
                 f"{b['start_us']:,.2f} to {b['end_us']:,.2f} µs" for i, b in
                 enumerate(buckets)]))
        both = ("step_end", "when_ready")
        exposed = " / ".join(f"{dp['releases'][r]['exposed_us']:,.1f}" for r in both)
        steps = " / ".join(f"{dp['releases'][r]['step_us']:,.1f}" for r in both)
        link = LINK_NAMES.get(setup["link"]["name"], setup["link"]["name"])
        title.append(f"{setup['world']} GPUs on {link}: exposed "
                     f"communication {exposed} µs, step {steps} µs (released at step end / "
                     f"when ready)")
        held = list(dict.fromkeys(row["kernel"] for row in dp["held_back"]))
        if held:
            title.append("the first buckets wait on " + ", ".join(held))
    elif dp:
        title.append(f"no data-parallel overlap: {dp['reason']}")
    return _figure(traces, {
        "title": {"text": "<br>".join(title), "font": {"size": 13}},
        "barmode": "overlay", "bargap": 0.35,
        "xaxis": {"title": {"text": "µs from the step's start"}, "rangemode": "tozero"},
        "yaxis": {"type": "category", "categoryorder": "array",
                  "categoryarray": list(reversed(lanes)), "fixedrange": True},
        "height": 100 + 18 * len(title) + 48 * len(lanes),
        "margin": {"l": 150, "r": 20, "t": 30 + 18 * len(title), "b": 60},
        "showlegend": False})


def _bars(name: str, lane: str, spans: list[tuple[float, float]], colours: list[str],
          urls: list, texts: list[str]):
    """Horizontal bars from start to end on one lane, as a Gantt chart draws tasks."""
    import plotly.graph_objects as go

    return go.Bar(name=name, orientation="h", y=[lane] * len(spans),
                  base=[start for start, _ in spans],
                  x=[max(end - start, 0.0) for start, end in spans],
                  marker={"color": colours, "line": {"width": 0}}, customdata=urls,
                  text=texts, textposition="none", hovertemplate="%{text}<extra></extra>")


def _output_card(output: dict, model: str) -> str:
    from html import escape

    written = f"written by {escape(output['kernel'])}" if output["kernel"] else "an input"
    size = "" if output.get("bytes") is None else f", {output['bytes'] / 2**20:,.2f} MiB"
    return (f"output {escape(output['name'])}{size}<br>ready at "
            f"{output['ready_us'][model]:,.2f} µs ({written})")


def plan_roofline(result: dict, device: Device, kernel_url: Callable[[str], str]) -> dict:
    """Every kernel of a plan on the device's FP32 roofline (FLOP per DRAM byte against
    achieved GFLOP/s), projected and, where measured, measured; the roof from DRAM bandwidth
    to the compute peak. Kernels without flops or DRAM traffic (pure data movement, library
    calls) have no place on it and are counted in the title."""
    points = [(kernel, point) for kernel in result["kernels"]
              if (point := roofline(kernel, device)) is not None]
    if not points:
        return {"empty": "No kernel of this plan both computes and moves DRAM bytes: a "
                         "roofline has nothing to place."}
    intensities = [point["intensity"] for _, point in points]
    ridge = points[0][1]["ridge"]
    low, high = min(intensities + [ridge]) / 10, max(intensities + [ridge]) * 10
    xs = [low * (high / low) ** (step / 80) for step in range(81)]
    roof = [min(device.peak_fp32_flops, x * device.dram_bytes_per_s) / 1e9 for x in xs]
    traces = [_scatter(x=xs, y=roof, mode="lines", name="roof (DRAM, FP32)",
                       line={"color": COLOURS["roof"], "width": 1.5}, hoverinfo="skip")]
    for key, label in (("projected_flops", "projected"), ("measured_flops", "measured")):
        shown = [(kernel, point) for kernel, point in points if point[key]]
        if not shown:
            continue
        traces.append(_scatter(
            x=[point["intensity"] for _, point in shown],
            y=[point[key] / 1e9 for _, point in shown],
            mode="markers", name=label,
            marker={"color": COLOURS[label], "size": 8, "opacity": 0.8},
            customdata=[kernel_url(kernel["name"]) for kernel, _ in shown],
            text=[_kernel_card(kernel) for kernel, _ in shown],
            hovertemplate="%{text}<br>%{x:.3g} flop/byte, %{y:.4g} GFLOP/s"
                          f" ({label})<extra></extra>"))
    left_out = len(result["kernels"]) - len(points)
    title = f"Roofline: {len(points)} kernels" + (
        f" ({left_out} without flops or DRAM traffic left out)" if left_out else "")
    return _figure(traces, {
        "title": {"text": title, "font": {"size": 14}},
        "xaxis": {"type": "log", "title": {"text": "arithmetic intensity (flop / DRAM byte)"}},
        "yaxis": {"type": "log", "title": {"text": "GFLOP/s"}}, "height": 420})


def accuracy(result: dict, kernel_url: Callable[[str], str]) -> dict:
    """Each measured kernel's device work measured (x) against each model's prediction of it
    (y), one series per model, on log axes with the line where they agree: a point above it is
    a kernel the model thought slower than it ran."""
    measured = [kernel for kernel in result["kernels"]
                if _device(kernel, "measured_device_us", "measured_us")]
    if not measured:
        return {"empty": "Not measured: a GPU worker has not timed this plan's kernels yet, so "
                         "there is nothing to hold the predictions against."}
    traces = []
    models = (("projected", "device_us", "proj_us"), ("learned", "learned_device_us",
                                                     "learned_us"), ("sol", "sol_us", "sol_us"))
    everything = []
    for label, key, fallback in models:
        pairs = [(kernel, _device(kernel, "measured_device_us", "measured_us"),
                  _device(kernel, key, fallback)) for kernel in measured]
        pairs = [(kernel, x, y) for kernel, x, y in pairs if y]
        if not pairs:
            continue
        everything += [value for _, x, y in pairs for value in (x, y)]
        traces.append(_scatter(
            x=[x for _, x, _ in pairs], y=[y for _, _, y in pairs], mode="markers",
            name="SOL" if label == "sol" else label,
            marker={"color": COLOURS[label], "size": 8, "opacity": 0.8},
            customdata=[kernel_url(kernel["name"]) for kernel, _, _ in pairs],
            text=[f"{_kernel_card(kernel)}<br>{label} {y / x:.2f}x the measured"
                  for kernel, x, y in pairs],
            hovertemplate="%{text}<br>measured %{x:.3g} µs, predicted %{y:.3g} µs"
                          "<extra></extra>"))
    low, high = min(everything) / 1.5, max(everything) * 1.5
    traces.insert(0, _scatter(x=[low, high], y=[low, high], mode="lines", name="prediction = "
                              "measurement", line={"color": COLOURS["roof"], "dash": "dot",
                                                   "width": 1}, hoverinfo="skip"))
    return _figure(traces, {
        "title": {"text": f"Device work of {len(measured)} measured kernels: predicted against "
                          f"measured", "font": {"size": 14}},
        "xaxis": {"type": "log", "title": {"text": "measured (µs)"}},
        "yaxis": {"type": "log", "title": {"text": "predicted (µs)"}}, "height": 420})


def tuning_curve(result: dict) -> dict:
    """The autotuner's search: the gain of the best plan found over the best start against the
    plans scored (a step each time a better plan turned up; hover for the time it took)."""
    history = result.get("history") or []
    if not history:
        return {"empty": "The tuning recorded no search history."}
    start = history[0][2]
    evaluations = max(result.get("evaluations") or 0, history[-1][0])
    xs = [entry[0] for entry in history] + [evaluations]
    seconds = [entry[1] for entry in history] + [result.get("seconds") or history[-1][1]]
    gains = [start - entry[2] for entry in history] + [start - history[-1][2]]
    trace = _scatter(x=xs, y=gains, mode="lines+markers", line={"shape": "hv",
                                                                 "color": COLOURS["projected"]},
                     name="gain", customdata=seconds,
                     hovertemplate="%{x} plans scored, %{customdata:.2f} s: "
                                   "%{y:.3f} µs below the best start<extra></extra>")
    return _figure([trace], {
        "title": {"text": f"Gain over the best start ({result.get('model')} model)",
                  "font": {"size": 14}},
        "xaxis": {"title": {"text": "plans scored"}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "µs below the best start"}, "rangemode": "tozero"},
        "showlegend": False, "height": 320})


def _device(kernel: dict, key: str, fallback: str) -> float | None:
    """A kernel's device work under one model: its `key`, or in an artifact compiled before
    device work and launches were apart, its `fallback` total."""
    return kernel.get(key) if kernel.get("device_us") is not None else kernel.get(fallback)


def _kernel_card(kernel: dict) -> str:
    """A kernel's hover card: name, kind, limiter and size, lines split by <br>. plotly.js
    reads tags in text as markup (escaped here), and styles <b> or <i> through a style
    attribute, which the Content-Security-Policy refuses: plain text only."""
    from html import escape

    return (f"{escape(kernel['name'])} ({escape(kernel['kind'])}, "
            f"{len(kernel.get('nodes', ()))} ops)<br>limiter "
            f"{escape(str(kernel.get('device_limiter') or kernel.get('limiter') or '–'))}")
