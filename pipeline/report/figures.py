"""The report's figures, drawn by matplotlib (Agg, no display) and returned as PNG bytes.

Each function takes small, already-aggregated frames; none computes a measure.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import polars as pl

from pipeline.io.write import GENERATOR

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDTH, HEIGHT, DPI = 7.5, 3.6, 110
WIN, LOSS, TIE = "#1b7837", "#b2182b", "#999999"
# lines told apart by more than colour ("X" is kept for the trend's regression gate failures)
MARKERS = ("o", "s", "^", "D", "v", "P", "h", "*")
LINE_STYLES = ("-", "--", "-.", ":")


def _subplots(width: float = WIDTH, height: float = HEIGHT) -> tuple[Figure, Axes]:
    """A new figure and its axes. matplotlib is imported here, when a figure is drawn: its
    import is a second that an evaluation, and every test worker's collection, need not pay."""
    import matplotlib

    matplotlib.use("Agg")  # no display, no GUI toolkit: the same figures on a server and in CI
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    # the Software chunk marks the file as ours, so that a rerun may replace it (and nothing else)
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": GENERATOR})
    import matplotlib.pyplot as plt  # imported by _subplots, which made the figure

    plt.close(figure)
    return buffer.getvalue()


def software(png: bytes) -> str:
    """The ``Software`` text chunk of a PNG, or "" (chunks are read up to the image data)."""
    position = 8
    while position + 8 <= len(png):
        length = int.from_bytes(png[position : position + 4], "big")
        kind = png[position + 4 : position + 8]
        if kind in (b"IDAT", b"IEND"):
            break
        if kind == b"tEXt":
            key, _, value = png[position + 8 : position + 8 + length].partition(b"\0")
            if key == b"Software":
                return value.decode("latin-1")
        position += 12 + length
    return ""


def ndcg_by_cutoff(curves: Mapping[str, pl.DataFrame], measure: str = "NDCG") -> bytes:
    """Mean ``measure`` per cutoff, one line per system. Each frame: ``label, ndcg`` in order.

    Systems are told apart by marker and line style as well as colour, and each line is named
    once, at its right end, the names spread apart so that close lines do not print over each
    other (naming every point did, for systems within a few hundredths)."""
    from matplotlib.colors import to_hex

    figure, axes = _subplots()
    ends: list[tuple[object, float, str, str]] = []  # where each line ends, its name and colour
    for index, (name, curve) in enumerate(curves.items()):
        labels, values = curve["label"].to_list(), curve["ndcg"].to_list()
        (line,) = axes.plot(
            labels,
            values,
            marker=MARKERS[index % len(MARKERS)],
            linestyle=LINE_STYLES[index % len(LINE_STYLES)],
            label=name,
        )
        last = max((x for x, y in enumerate(values) if _finite(y)), default=None)
        if last is not None:
            ends.append((labels[last], float(values[last]), name, to_hex(line.get_color())))
    axes.set_xlabel("cutoff k ('all' = whole ranking)")
    axes.set_ylabel(f"mean {measure}@k")
    axes.set_ylim(0, 1)
    axes.grid(alpha=0.3)
    # below the plot: inside it, the legend covered the lines' ends (each line is named there too)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=min(len(curves), 4), fontsize=8)
    axes.set_title(f"{measure}@k by k")
    _name_line_ends(figure, axes, ends)
    return _png(figure)


def _name_line_ends(figure: Figure, axes: Axes, ends: list[tuple[object, float, str, str]]) -> None:
    """Name each line ending at ``(x, y)`` once, in a column right of the plot, the names spread
    at least a line of text apart (:func:`_spread`) and tied to their lines' last points by a
    thin line: every line named, not by its colour alone."""
    figure.tight_layout()  # the axes' final size, in which a line of text is measured
    bottom, top = axes.get_ylim()
    points_per_unit = axes.get_window_extent().height / figure.dpi * 72 / (top - bottom)
    line_of_text = 8.5 / points_per_unit
    for (x, y, name, colour), placed in zip(ends, _spread([y for _, y, _, _ in ends], line_of_text, top), strict=True):
        axes.annotate(
            name,
            (x, y),
            xytext=(1.02, placed),  # a column just right of the plot
            textcoords=("axes fraction", "data"),
            fontsize=7,
            color=colour,
            va="center",
            annotation_clip=False,
            arrowprops={
                "arrowstyle": "-",
                "color": colour,
                "linewidth": 0.6,
                "linestyle": ":",
                "shrinkA": 0,
                "shrinkB": 3,
            },
        )


def _finite(value: object) -> bool:
    """Whether a line has a point at ``value``: not None, NaN or infinite (none is drawn, none named)."""
    return isinstance(value, (int, float)) and math.isfinite(value)


def _spread(values: list[float], gap: float, top: float = 1.0) -> list[float]:
    """``values`` moved apart to at least ``gap`` from each other and no higher than ``top``,
    each as little as the others allow, in their own order (names keep their lines' order)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    placed = [values[i] for i in order]
    for i in range(1, len(placed)):  # up, from the lowest
        placed[i] = max(placed[i], placed[i - 1] + gap)
    if placed:  # then down, from the top, only where the stack went over it
        placed[-1] = min(placed[-1], top)
        for i in range(len(placed) - 2, -1, -1):
            placed[i] = min(placed[i], placed[i + 1] - gap)
    result = [0.0] * len(values)
    for rank, i in enumerate(order):
        result[i] = placed[rank]
    return result


def distribution(values: Mapping[str, pl.Series], cutoff: str, measure: str = "NDCG") -> bytes:
    """Histogram of per-query ``measure`` per system, in bins of 0.05 over [0, 1]."""
    figure, axes = _subplots()
    bins = [i / 20 for i in range(21)]
    for name, series in values.items():
        axes.hist(series.to_list(), bins=bins, histtype="step", linewidth=1.8, label=f"{name} (n={series.len()})")
    axes.set_xlabel(f"per-query {measure}@{cutoff}")
    axes.set_ylabel("queries")
    axes.grid(alpha=0.3)
    axes.legend()
    axes.set_title(f"Distribution of per-query {measure}@{cutoff}")
    return _png(figure)


def differences(deltas: pl.DataFrame, baseline: str, candidate: str, cutoff: str, measure: str = "NDCG") -> bytes:
    """Per-query ``candidate - baseline``, sorted, one bar per query: where the change comes from."""
    figure, axes = _subplots()
    values = deltas["delta"].to_list()
    colors = [WIN if v > 1e-12 else LOSS if v < -1e-12 else TIE for v in values]
    axes.bar(range(len(values)), values, color=colors, width=1.0)
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_xlabel("queries, sorted by difference")
    axes.set_ylabel(f"{measure}@{cutoff}: {candidate} − {baseline}")
    axes.set_xlim(-0.5, max(len(values), 1) - 0.5)
    axes.grid(alpha=0.3, axis="y")
    axes.set_title(f"Per-query difference, {candidate} vs {baseline} (green: {candidate} better)")
    return _png(figure)


def group_bars(table: pl.DataFrame, group: str, value: str, series: str, title: str, ylabel: str) -> bytes:
    """Grouped bars: one group of bars per ``group`` value, one bar per ``series`` value; with
    ``ci_low``/``ci_high`` columns, error bars show the interval."""
    figure, axes = _subplots()
    groups = table[group].unique(maintain_order=True).to_list()
    names = table[series].unique(maintain_order=True).to_list()
    width = 0.8 / max(len(names), 1)
    for index, name in enumerate(names):
        part = table.filter(pl.col(series) == name)
        heights = [part.filter(pl.col(group) == g)[value].to_list() for g in groups]
        positions = [i + (index - (len(names) - 1) / 2) * width for i in range(len(groups))]
        tops = [h[0] if h and h[0] is not None else 0.0 for h in heights]
        errors = None
        if {"ci_low", "ci_high"} <= set(part.columns):
            lows = [(part.filter(pl.col(group) == g)["ci_low"].to_list() or [None])[0] for g in groups]
            highs = [(part.filter(pl.col(group) == g)["ci_high"].to_list() or [None])[0] for g in groups]
            errors = [
                [t - (lo if lo is not None else t) for t, lo in zip(tops, lows, strict=True)],
                [(hi if hi is not None else t) - t for t, hi in zip(tops, highs, strict=True)],
            ]
        axes.bar(positions, tops, width=width, label=str(name), yerr=errors, capsize=3)
        for position, top in zip(positions, tops, strict=True):  # each bar names its series, not by colour alone
            axes.annotate(
                str(name),
                (position, 0),  # from the bar's foot along the bar, clear of the whiskers at its end
                textcoords="offset points",
                xytext=(-8, 4 if top >= 0 else -4),  # beside the whisker, which stands at the centre
                ha="center",
                va="bottom" if top >= 0 else "top",
                rotation=90,
                fontsize=8,
            )
    axes.set_xticks(range(len(groups)), [str(g) for g in groups])
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_ylabel(ylabel)
    axes.grid(alpha=0.3, axis="y")
    axes.legend()
    axes.set_title(title)
    return _png(figure)


def trend(
    lines: Mapping[str, list[tuple[object, float]]],
    marks: list[tuple[object, float, str]],
    cutoff: str,
    key: str,
    measure: str = "NDCG",
) -> bytes:
    """Mean ``measure``@k by partition value, one line per system (solid) and per group of a system
    (dashed, named ``system (group)``), each line named at its last point; ``marks``
    (x, y, text) are gate failures, drawn as red crosses. Dates (``datetime.date`` values) go on
    a time axis with one tick per day (or per few days over long spans)."""
    import datetime

    import matplotlib.dates as mdates
    from matplotlib.colors import to_hex

    figure, axes = _subplots(WIDTH + 3.0, HEIGHT + 0.8)
    ends: list[tuple[object, float, str, str]] = []
    for index, (label, points) in enumerate(lines.items()):
        xs = [x for x, _ in points]
        ys = [y for _, y in points]
        style = "--" if label.endswith(")") and " (" in label else "-"
        marker = MARKERS[index % len(MARKERS)]
        (line,) = axes.plot(xs, ys, marker=marker, linestyle=style, label=label)  # type: ignore[arg-type]
        named = [point for point in points if _finite(point[1])]  # a line ends at its last value
        if named:
            ends.append((*named[-1], label, to_hex(line.get_color())))
    for x, y, text in marks:
        axes.plot([x], [y], marker="X", markersize=11, color=LOSS, linestyle="none")  # type: ignore[arg-type]
        axes.annotate(text, (x, y), textcoords="offset points", xytext=(6, -12), fontsize=7, color=LOSS)
    if marks:
        axes.plot([], [], marker="X", color=LOSS, linestyle="none", label="regression gate failed")
    days = sorted({x for points in lines.values() for x, _ in points if isinstance(x, datetime.date)})
    if days:
        span = (days[-1] - days[0]).days
        axes.xaxis.set_major_locator(mdates.DayLocator(interval=max(1, span // 12)))
        axes.xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d"))
        figure.autofmt_xdate()
    axes.margins(x=0.04)
    axes.set_xlabel(key)
    axes.set_ylabel(f"mean {measure}@{cutoff}")
    axes.grid(alpha=0.3)
    # below the plot: the column right of it names the lines
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=4, frameon=False)
    axes.set_title(f"{measure}@{cutoff} by {key}")
    _name_line_ends(figure, axes, ends)
    return _png(figure)
