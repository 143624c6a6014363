"""Reading back the bars of explorer/charts.py's inline SVG charts, for the view tests."""
import re
from html import unescape

_BAR = re.compile(r'<rect class="chart__bar"([^>]*)>')
_ATTRIBUTE = re.compile(r'([\w-]+)="([^"]*)"')


def bars(html: str) -> list[dict]:
    """Every bar in `html`, in order: {"series" (None for a chart of one series), "category",
    "value", "fill", "x", "y", "width", "height"}."""
    found = []
    for match in _BAR.finditer(str(html)):
        attributes = {name: unescape(value) for name, value in _ATTRIBUTE.findall(match[1])}
        found.append({"series": attributes.get("data-series"),
                      "category": attributes["data-category"],
                      "value": float(attributes["data-value"]), "fill": attributes["fill"],
                      **{key: float(attributes[key]) for key in ("x", "y", "width", "height")}})
    return found


def chart(html: str, key: str) -> str:
    """The markup of the chart whose box has data-chart="key"."""
    text = str(html)
    start = text.index(f'data-chart="{key}"')
    return text[start:text.index("</svg>", start)]
