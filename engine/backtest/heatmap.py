"""A sweep's heatmap: one metric over two parameters, a self-contained bokeh page (its
scripts inline, no network). With more parameters swept, a cell shows the best value over
the others; a cell whose runs all failed or have no value is grey."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def heatmap_html(
    rows: Sequence[Any], x: str, y: str, metric: str, *, maximize: bool = True, title: str = ""
) -> str:
    """The page: `metric` (a row's attribute, Decimal text or a number) over parameters
    `x` and `y` of `rows` (each with `params`)."""
    from bokeh.embed import file_html
    from bokeh.models import ColumnDataSource, FactorRange, HoverTool, LinearColorMapper
    from bokeh.models.annotations import ColorBar
    from bokeh.palettes import Viridis256
    from bokeh.plotting import figure
    from bokeh.resources import INLINE

    cells: dict[tuple[Any, Any], Decimal | None] = {}
    for row in rows:
        key = (row.params[x], row.params[y])
        raw = getattr(row, metric)
        value = None if raw is None or row.error else Decimal(str(raw))
        best = cells.get(key)
        if key not in cells or (
            value is not None and (best is None or (value > best if maximize else value < best))
        ):
            cells[key] = value
    xs = sorted({k[0] for k in cells})
    ys = sorted({k[1] for k in cells})
    shown = [v for v in cells.values() if v is not None]
    low = float(min(shown)) if shown else 0.0
    high = float(max(shown)) if shown else 1.0
    # bokeh draws floats: the colour and the hover figure only, the table keeps the text
    source = ColumnDataSource(
        {
            "x": [_text(k[0]) for k in cells],
            "y": [_text(k[1]) for k in cells],
            "value": [float(v) if v is not None else float("nan") for v in cells.values()],
            "label": ["-" if v is None else format(v, "f") for v in cells.values()],
        }
    )
    mapper = LinearColorMapper(
        palette=Viridis256 if maximize else tuple(reversed(Viridis256)),
        low=low,
        high=high if high > low else low + 1,
        nan_color="#cccccc",
    )
    fig = figure(
        title=title or f"{metric} by {x} and {y}",
        x_range=FactorRange(factors=[_text(v) for v in xs]),
        y_range=FactorRange(factors=[_text(v) for v in ys]),
        x_axis_label=x,
        y_axis_label=y,
        width=max(400, min(1200, 60 * len(xs) + 160)),
        height=max(300, min(900, 40 * len(ys) + 120)),
        tools="pan,wheel_zoom,box_zoom,reset,save",
        toolbar_location="above",
    )
    fig.rect(
        "x",
        "y",
        width=1,
        height=1,
        source=source,
        fill_color={"field": "value", "transform": mapper},
        line_color=None,
    )
    if len(cells) <= 400:
        fig.text(
            "x",
            "y",
            text="label",
            source=source,
            text_align="center",
            text_baseline="middle",
            text_font_size="9pt",
        )
    fig.add_tools(HoverTool(tooltips=[(x, "@x"), (y, "@y"), (metric, "@label")]))
    fig.add_layout(ColorBar(color_mapper=mapper, title=metric), "right")
    fig.grid.grid_line_color = None
    return file_html(fig, INLINE, title or f"sandex sweep: {metric}")


__all__ = ["heatmap_html"]
