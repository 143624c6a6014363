"""The pages' charts, drawn on the server as inline SVG: the run page's totals per strategy,
the compare page's largest deltas, and the kernel page's pipe utilisation, occupancy curves
and roofline.

The pages used to load Plotly (a 4.6 MB script, 1.1 MB with brotli) for these, and compiling
it was most of a page's time on a 2-core machine (a kernel page took 3-5 s on a first visit).
These charts need none of it: each bar is a <rect> and each marker a <circle> carrying its
value (`data-value`, `data-x`, `data-y`) and a <title> the browser shows on hover.

Geometry is in SVG user units; the <svg> scales to its container's width (viewBox), except
where a page keeps it at its own size (the compare page's delta chart: its labels are then the
page's text size however wide the window is).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

WIDTH = 480
FONT = 'font-family="system-ui, sans-serif"'
AXIS_COLOUR = "#687087"
GRID_COLOUR = "#e6e9ef"


@dataclass(frozen=True)
class Series:
    """One set of bars: a value per category (None: no bar), its legend label and colour."""
    label: str
    values: list[float | None]
    colour: str


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """Tick values from 0 to at least `high`, at a step of 1, 2 or 5 times a power of ten,
    about `count` of them."""
    if high <= 0:
        return [0.0, 1.0]
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < high - 1e-9 * step:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def tick_label(value: float) -> str:
    if abs(value) >= 1e6 or (value and abs(value) < 1e-3):
        return f"{value:.0e}".replace("e+0", "e").replace("e-0", "e-")
    if abs(value) >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


def _text(x: float, y: float, text: str, anchor: str = "middle", size: int = 11,
          colour: str = AXIS_COLOUR, extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
            f'fill="{colour}" {FONT}{extra}>{escape(text)}</text>')


def grouped_bars(title: str, categories: list[str], series: list[Series], unit: str,
                 line: tuple[str, float] | None = None, height: int = 300) -> SafeString:
    """Vertical bars, one group per category and one bar per series in it, from zero; `line`:
    (label, value) drawn as a dashed line across the groups (a baseline)."""
    series = [s for s in series if any(v is not None for v in s.values)]
    values = [v for s in series for v in s.values if v is not None]
    if line is not None:
        values.append(line[1])
    ticks = nice_ticks(max(values, default=0.0))
    top = ticks[-1]
    left, right, upper, lower = 56, 12, 34, 58
    plot_w, plot_h = WIDTH - left - right, height - upper - lower

    def y(value: float) -> float:
        return upper + plot_h * (1 - value / top)

    parts = [_text(WIDTH / 2, 20, title, size=14, colour="#1d2330")]
    for tick in ticks:
        parts.append(f'<line x1="{left}" x2="{WIDTH - right}" y1="{y(tick):.1f}" '
                     f'y2="{y(tick):.1f}" stroke="{GRID_COLOUR}"/>')
        parts.append(_text(left - 6, y(tick) + 4, tick_label(tick), anchor="end"))
    parts.append(_text(14, upper + plot_h / 2, f"total time ({unit})",
                       extra=f' transform="rotate(-90 14 {upper + plot_h / 2:.1f})"'))
    group_w = plot_w / max(1, len(categories))
    bar_w = min(28.0, group_w * 0.8 / max(1, len(series)))
    for c, category in enumerate(categories):
        start = left + c * group_w + (group_w - bar_w * len(series)) / 2
        for k, s in enumerate(series):
            value = s.values[c]
            if value is None:
                continue
            x = start + k * bar_w
            parts.append(
                f'<rect class="chart__bar" x="{x:.1f}" y="{y(value):.1f}" '
                f'width="{bar_w - 1:.1f}" height="{max(0.0, y(0) - y(value)):.1f}" '
                f'fill="{s.colour}" data-series="{escape(s.label)}" '
                f'data-category="{escape(category)}" data-value="{value!r}">'
                f'<title>{escape(category)}: {value:,.2f} {unit} ({escape(s.label)})</title>'
                f'</rect>')
        parts.append(_text(left + (c + 0.5) * group_w, y(0) + 16, category, colour="#1d2330"))
    if line is not None:
        label, value = line
        parts.append(f'<line class="chart__line" x1="{left}" x2="{WIDTH - right}" '
                     f'y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="#444" '
                     f'stroke-dasharray="6 4" data-value="{value!r}">'
                     f'<title>{escape(label)}: {value:,.2f} {unit}</title></line>')
    parts.append(f'<line x1="{left}" x2="{WIDTH - right}" y1="{y(0):.1f}" y2="{y(0):.1f}" '
                 f'stroke="{AXIS_COLOUR}"/>')
    legend = [(s.label, s.colour, False) for s in series]
    if line is not None:
        legend.append((line[0], "#444", True))
    parts.append(_legend(legend, height - 16))
    return _svg(title, height, parts)


def horizontal_bars(title: str, labels: list[str], values: list[float], colours: list[str],
                    axis: str, unit: str, high: float | None = None,
                    hover: list[str] | None = None, value_labels: bool = False,
                    left: int = 190, width: int = WIDTH) -> SafeString:
    """One bar per label, from zero to its value (negative values to the left), top to
    bottom in the given order. `high`: the axis's end (else the largest value's nice tick);
    `hover`: each bar's tooltip; `value_labels`: the value written after each bar; `left`:
    the labels' room, `width`: the chart's (SVG units: CSS pixels where the page shows the
    chart at its own width)."""
    row, upper, lower, right = 22, 34, 44, 40 if value_labels else 16
    height = upper + row * len(labels) + lower
    low = min(0.0, min(values, default=0.0))
    high = max(0.0, max(values, default=0.0)) if high is None else high
    ticks_up = nice_ticks(high) if high > 0 else [0.0]
    ticks_down = [-t for t in nice_ticks(-low)] if low < 0 else [0.0]
    ticks = sorted(set(ticks_down + ticks_up))
    first, last = ticks[0], ticks[-1]
    plot_w = width - left - right

    def x(value: float) -> float:
        return left + plot_w * (value - first) / ((last - first) or 1)

    parts = [_text(width / 2, 20, title, size=14, colour="#1d2330")]
    for tick in ticks:
        parts.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{upper}" '
                     f'y2="{height - lower:.1f}" stroke="{GRID_COLOUR}"/>')
        parts.append(_text(x(tick), height - lower + 14, tick_label(tick)))
    for k, (label, value, colour) in enumerate(zip(labels, values, colours)):
        top = upper + k * row + 3
        start, end = sorted((x(0), x(value)))
        parts.append(
            f'<rect class="chart__bar" x="{start:.1f}" y="{top:.1f}" '
            f'width="{max(0.5, end - start):.1f}" height="{row - 6}" fill="{colour}" '
            f'data-category="{escape(label)}" data-value="{value!r}">'
            f'<title>{escape(hover[k] if hover else f"{label}: {value:+,.2f} {unit}")}'
            f'</title></rect>')
        # About 6 units a character at size 11.
        parts.append(_text(left - 6, top + row / 2 + 4, _clip(label, (left - 10) // 6),
                           anchor="end", colour="#1d2330"))
        if value_labels:
            parts.append(_text(end + 4, top + row / 2 + 4, f"{value:.1f} {unit}",
                               anchor="start"))
    parts.append(f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{upper}" '
                 f'y2="{height - lower:.1f}" stroke="{AXIS_COLOUR}"/>')
    parts.append(_text(left + plot_w / 2, height - 10, axis))
    return _svg(title, height, parts, width)


@dataclass(frozen=True)
class Line:
    """A curve: y per x (None: a gap), drawn as steps (the value holds until the next x) or
    straight segments, dashed or not."""
    label: str
    xs: list[float]
    ys: list[float | None]
    colour: str
    steps: bool = False


@dataclass(frozen=True)
class Point:
    """A marker at (x, y) with its legend label."""
    label: str
    x: float
    y: float
    colour: str


def line_chart(title: str, lines: list[Line], points: list[Point], x_axis: str, y_axis: str,
               log: bool = False, y_range: tuple[float, float] | None = None,
               height: int = 260) -> SafeString:
    """Curves and markers on linear axes from zero (or, with `log`, both axes in powers of
    ten); `y_range` fixes the y axis (occupancy: 0 to 105 %)."""
    xs = [x for line in lines for x in line.xs] + [p.x for p in points]
    ys = [y for line in lines for y in line.ys if y is not None] + [p.y for p in points]
    left, right, upper, lower = 60, 14, 30, 44 + (16 if len(points) > 1 else 0)
    plot_w, plot_h = WIDTH - left - right, height - upper - lower
    if log:
        x_ticks = _decades(min(xs), max(xs))
        y_ticks = _decades(min(ys), max(ys))
        scale_x, scale_y = math.log10, math.log10
    else:
        x_ticks = nice_ticks(max(xs, default=1.0))
        y_ticks = nice_ticks(max(ys, default=1.0))
        scale_x = scale_y = float
    x0, x1 = scale_x(x_ticks[0]), scale_x(x_ticks[-1])
    y0, y1 = (y_range if y_range else (y_ticks[0], y_ticks[-1]))
    y0, y1 = scale_y(y0), scale_y(y1)
    if y_range:
        y_ticks = [t for t in nice_ticks(y_range[1]) if t <= y_range[1]]

    def px(x: float) -> float:
        return left + plot_w * (scale_x(x) - x0) / ((x1 - x0) or 1)

    def py(y: float) -> float:
        return upper + plot_h * (1 - (scale_y(y) - y0) / ((y1 - y0) or 1))

    parts = [_text(WIDTH / 2, 18, title, size=13, colour="#1d2330")]
    for tick in y_ticks:
        parts.append(f'<line x1="{left}" x2="{WIDTH - right}" y1="{py(tick):.1f}" '
                     f'y2="{py(tick):.1f}" stroke="{GRID_COLOUR}"/>')
        parts.append(_text(left - 6, py(tick) + 4, tick_label(tick), anchor="end"))
    for tick in x_ticks:
        parts.append(_text(px(tick), upper + plot_h + 15, tick_label(tick)))
    parts.append(_text(left + plot_w / 2, upper + plot_h + 32, x_axis))
    parts.append(_text(14, upper + plot_h / 2, y_axis,
                       extra=f' transform="rotate(-90 14 {upper + plot_h / 2:.1f})"'))
    parts.append(f'<rect x="{left}" y="{upper}" width="{plot_w}" height="{plot_h}" '
                 f'fill="none" stroke="{AXIS_COLOUR}"/>')
    for line in lines:
        for run in _segments(line):
            path = []
            for k, (x, y) in enumerate(run):
                if k and line.steps:
                    path.append(f"{px(x):.1f},{py(run[k - 1][1]):.1f}")
                path.append(f"{px(x):.1f},{py(y):.1f}")
            parts.append(f'<polyline class="chart__line" points="{" ".join(path)}" '
                         f'fill="none" stroke="{line.colour}" stroke-width="1.8">'
                         f'<title>{escape(line.label)}</title></polyline>')
    for point in points:
        parts.append(f'<circle class="chart__point" cx="{px(point.x):.1f}" '
                     f'cy="{py(point.y):.1f}" r="5.5" fill="{point.colour}" '
                     f'data-label="{escape(point.label)}" data-x="{point.x!r}" '
                     f'data-y="{point.y!r}"><title>{escape(point.label)}: '
                     f'{point.x:,.4g}, {point.y:,.4g}</title></circle>')
    if len(points) > 1:
        parts.append(_legend([(p.label, p.colour, False) for p in points], height - 6))
    return _svg(title, height, parts)


def _segments(line: Line) -> list[list[tuple[float, float]]]:
    """The line's runs of points between its gaps (None values)."""
    runs, current = [], []
    for x, y in zip(line.xs, line.ys):
        if y is None:
            if current:
                runs.append(current)
            current = []
        else:
            current.append((x, y))
    if current:
        runs.append(current)
    return runs


def _decades(low: float, high: float) -> list[float]:
    """Powers of ten from below `low` to above `high`."""
    first = math.floor(math.log10(max(low, 1e-300)))
    last = math.ceil(math.log10(max(high, 1e-300)))
    return [10.0 ** k for k in range(first, max(last, first + 1) + 1)]


def _clip(text: str, length: int) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


def _legend(items: list[tuple[str, str, bool]], y: float) -> str:
    """Swatches and labels in a row, centred."""
    widths = [26 + 6.5 * len(label) for label, _, _ in items]
    x = (WIDTH - sum(widths)) / 2
    parts = []
    for (label, colour, dashed), width in zip(items, widths):
        if dashed:
            parts.append(f'<line x1="{x:.1f}" x2="{x + 14:.1f}" y1="{y - 4:.1f}" '
                         f'y2="{y - 4:.1f}" stroke="{colour}" stroke-dasharray="4 3" '
                         f'stroke-width="2"/>')
        else:
            parts.append(f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="12" height="12" '
                         f'fill="{colour}"/>')
        parts.append(_text(x + 18, y, label, anchor="start", colour="#1d2330"))
        x += width
    return f'<g class="chart__legend">{"".join(parts)}</g>'


def _svg(title: str, height: int, parts: list[str], width: int = WIDTH) -> SafeString:
    # Its own size in CSS pixels too, for a page that shows it unscaled (`.chart` stretches it
    # to its container's width unless a page's CSS says otherwise).
    return mark_safe(
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" '
        f'aria-label="{escape(title)}" preserveAspectRatio="xMidYMid meet">'
        + "".join(parts) + "</svg>")
