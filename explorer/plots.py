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

# What plans.js may draw: chart name -> its title on the page.
PLAN_CHARTS = {"roofline": "Roofline", "accuracy": "Measured vs predicted"}


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
