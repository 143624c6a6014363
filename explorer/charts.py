"""Small charts drawn on the server as inline SVG: the run page's totals per strategy and the
compare page's largest deltas.

These pages used to load Plotly (a 4.6 MB script, 1.1 MB with brotli) for one bar chart each,
and compiling it was most of a page's time on a 2-core machine. A bar chart needs none of it:
each bar is a <rect> carrying its value (`data-value`) and a <title> the browser shows on
hover. The kernel page's curves and roofline still use Plotly.

Geometry is in SVG user units; the <svg> scales to its container's width (viewBox).
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
    if value >= 1000:
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
                    axis: str, unit: str) -> SafeString:
    """One bar per label, from zero to its value (negative values to the left), top to
    bottom in the given order."""
    row, upper, lower, left, right = 22, 34, 44, 190, 16
    height = upper + row * len(labels) + lower
    low = min(0.0, min(values, default=0.0))
    high = max(0.0, max(values, default=0.0))
    ticks_up = nice_ticks(high) if high > 0 else [0.0]
    ticks_down = [-t for t in nice_ticks(-low)] if low < 0 else [0.0]
    ticks = sorted(set(ticks_down + ticks_up))
    first, last = ticks[0], ticks[-1]
    plot_w = WIDTH - left - right

    def x(value: float) -> float:
        return left + plot_w * (value - first) / ((last - first) or 1)

    parts = [_text(WIDTH / 2, 20, title, size=14, colour="#1d2330")]
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
            f'<title>{escape(label)}: {value:+,.2f} {unit}</title></rect>')
        parts.append(_text(left - 6, top + row / 2, _clip(label, 30), anchor="end",
                           colour="#1d2330"))
    parts.append(f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{upper}" '
                 f'y2="{height - lower:.1f}" stroke="{AXIS_COLOUR}"/>')
    parts.append(_text(left + plot_w / 2, height - 10, axis))
    return _svg(title, height, parts)


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


def _svg(title: str, height: int, parts: list[str]) -> SafeString:
    return mark_safe(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(title)}" preserveAspectRatio="xMidYMid meet">'
        + "".join(parts) + "</svg>")
