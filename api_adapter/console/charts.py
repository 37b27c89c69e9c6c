"""Charts drawn on the server as inline SVG: no script draws them, so the page's
Content-Security-Policy needs no exception and the chart works without JavaScript."""

from __future__ import annotations

from decimal import Decimal
from html import escape

WIDTH = 640
HEIGHT = 200
PAD = 30


def line_chart(points: list[tuple[str, Decimal]], label: str) -> str:
    """An SVG line of `points` (time text, value) in their order, its lowest and highest
    values and first and last times written on it; an empty chart says so."""
    title = escape(label)
    head = (
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}"'
        f' role="img" aria-label="{title}" data-testid="price-chart">'
    )
    if not points:
        return head + f'<text x="{PAD}" y="{HEIGHT // 2}">no prices yet</text></svg>'
    values = [v for _, v in points]
    low, high = min(values), max(values)
    span = (high - low) or Decimal(1)
    width, height = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    step = width / max(len(points) - 1, 1)
    coords = " ".join(
        f"{PAD + i * step:.1f},{PAD + float((high - v) / span) * height:.1f}"
        for i, v in enumerate(values)
    )
    return (
        head
        + f'<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="{coords}"/>'
        + f'<text x="2" y="{PAD - 8}" font-size="11">{escape(str(high))}</text>'
        + f'<text x="2" y="{HEIGHT - 8}" font-size="11">{escape(str(low))}</text>'
        + f'<text x="{PAD}" y="{HEIGHT - 2}" font-size="10">{escape(points[0][0])}</text>'
        + f'<text x="{WIDTH - PAD}" y="{HEIGHT - 2}" font-size="10" text-anchor="end">'
        + f"{escape(points[-1][0])}</text></svg>"
    )
