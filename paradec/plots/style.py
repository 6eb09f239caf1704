"""Colours and the honesty labels shared by every figure."""
from __future__ import annotations

from plotly.basedatatypes import BasePlotlyType

# One colour per token fate; the token stream, the tree and the legends all use these. As text they keep a
# contrast of at least 4.5:1 on white and on the stream's highlight (#fff3bf), and no fate is told by its colour
# alone: the stream marks each with a line (MARKS), the tree with a symbol (paradec.plots.tree).
COLORS = {
    "accepted": "#117733",  # accepted draft
    "rejected": "#b2182b",  # rejected draft
    "resampled": "#9c4a00",  # drawn from the residual after a rejection
    "bonus": "#005a9c",  # the target's extra token after a fully accepted path
    "target": "#555555",  # plain target token (nothing drafted, or greedy mismatch)
    "unreached": "#c9c9c9",  # drafted but never tested: an earlier node was rejected
    "pending": "#444444",
    "drafted": "#8c9cb5",  # proposed, not yet verified (predict mode hides the outcome until the learner answers)
}


def N_(text: str) -> str:
    """Marks a figure's text for the app's French catalogue (scripts/messages.py extracts it; paradec.stage.figure_text
    translates it where the figure is shown): the figures themselves stay English."""
    return text


ORIGIN_LABELS = {
    "accepted": N_("accepted draft"),
    "rejected": N_("rejected draft"),
    "resampled": N_("resampled"),
    "bonus": N_("bonus"),
    "target": N_("plain target"),
}
# How the token stream marks each fate besides its colour (CSS text-decoration).
MARKS = {"accepted": "underline solid", "rejected": "line-through", "resampled": "underline wavy",
         "bonus": "underline double", "target": "none"}
P_COLOR, Q_COLOR, RESIDUAL_COLOR = "#1f77b4", "#ff7f0e", "#9467bd"
TEMPLATE = "plotly_white"  # plotly's look for every figure, applied where it is shown (see layout)

# What a panel's numbers are: timed in this run, derived from the trace, or analytic.
MEASURED, FROM_RUN, MODEL = "MEASURED", "FROM RUN", "MODEL"


def wrap(text: str | None, width: int) -> str | None:
    """Break a long title in two at the space nearest its middle: a chart in a third of a 1024-px screen
    is about 220 px wide, and plotly cuts what does not fit."""
    if not text or len(text) <= width or "<br>" in text or " " not in text:
        return text
    mid = len(text) // 2
    cut = min((k for k, c in enumerate(text) if c == " "), key=lambda k: abs(k - mid))
    return text[:cut] + "<br>" + text[cut + 1 :]


# Where a figure's legend goes (layout's `legend`). below: rows at the foot of the figure, under the x axis's
# title, in room plotly reserves for them (container coordinates): a row that wraps in a narrow column shrinks
# the plot instead of running over the title or the axes, as a row under the title did; entries in trace order.
# A row that may not fit is a column instead (see _below): plotly wraps a row by its plot area's width, which
# its margins change as they are laid out, and clipped an entry placed by one width to another's box.
# right: a column right of the plot, for a figure a whole row wide with many entries.
LEGENDS = {"below": dict(orientation="h", xref="container", yref="container", yanchor="bottom", y=0,
                         xanchor="left", x=0, traceorder="normal"),
           "right": dict(orientation="v", yanchor="top", y=1.0, xanchor="left", x=1.02)}
LEGEND_ROW = 30  # px a legend below adds to the figure's height, so that its plot keeps the height asked for
# px of an entry in a legend column, and of the x axis under the plot: plotly scrolls a column taller than the
# plot, so a figure is made tall enough for all of its entries
ENTRY, X_AXIS = 22, 80
# px: the narrowest plot area a legend row must fit (a chart in a third of a 1024-px page, less its y axis), and
# what an entry takes besides its text (plotly's symbol and the gap after it)
ROW_PX, ENTRY_PX = 130, 45
WRAP_PX = 2000  # px: an entry wider than any plot, so that each is a row of its own at every width
LINE, TOP, GAP = 18, 6, 20  # px: a 14-px title line, the room above the title, and under it for bar labels
MIN_TEXT = 11  # px: the smallest text a figure may draw; plotly hides a bar's label rather than shrink it more
STAGE_PX = 560  # px the player's stage gives a figure of a whole row at a 1024-px window
CHAR_PX = 7  # px a cell needs per character of MIN_TEXT text (a wide one: ↵, m, <)


def layout(fig, title: str | None = None, height: int = 300, legend: str = "below"):
    """The compact look every figure shares (fits a 1280x720 projector): long titles in two lines, log axes
    labelled by decade (plotly's in-between labels are 9 px), no text under MIN_TEXT, a bar's label above
    its bar free to stand in the margin. The TEMPLATE is left to whoever shows the figure: copying it into
    each figure took two thirds of drawing a player frame. legend: see LEGENDS.
    fig: a go.Figure, or a figure as plain JSON ({"data": [...], "layout": {...}}), which the player's
    figures are: built as dicts, they skip plotly's validation, six times the cost of the figure itself."""
    plain = isinstance(fig, dict)
    data, lay = (fig["data"], fig["layout"]) if plain else _read(fig)
    patch = _compact(data, lay, title, height, legend)
    if plain:
        merge(fig["layout"], patch)
    else:
        assign(fig.layout, patch)
    traces = fig["data"] if plain else fig.data
    for k, t in enumerate(data):
        if t.get("type") == "bar" and t.get("textposition") == "outside":
            traces[k]["cliponaxis"] = False
    return fig


def _read(fig) -> tuple[list[dict], dict]:
    """What layout() reads of a go.Figure, as plain JSON would hold it, without to_plotly_json's deep copy of
    every trace's arrays."""
    data = [{"type": t.type, "showlegend": t.showlegend, "textposition": getattr(t, "textposition", None),
             "name": t.name} for t in fig.data]
    axes = {name: {"title": {"text": fig.layout[name].title.text}, "type": fig.layout[name].type,
                   "dtick": fig.layout[name].dtick} for name in ("xaxis", "yaxis")}
    return data, {"showlegend": fig.layout.showlegend, **axes}


def _compact(data: list[dict], lay: dict, title: str | None, height: int, legend: str) -> dict:
    """What layout() sets, as a patch of the figure's layout."""
    title = wrap(title, 26)
    lines = title.count("<br>") + 1 if title else 1
    entries = _legend_entries(data, lay)
    top = TOP + LINE * lines + GAP if title else 30
    total = max(height, top + ENTRY * len(entries) + X_AXIS)
    where = LEGENDS[legend]
    if legend == "below" and entries:
        where, rows = _below(entries)
        total = height + LEGEND_ROW + ENTRY * (rows - 1)
    # plotly puts a second line ABOVE a top-anchored title: move it down by one line
    title_y = 1 - (TOP + LINE * (lines - 1)) / total
    patch = dict(title=dict(text=title, yref="container", y=title_y, yanchor="top", x=0.01, font=dict(size=14)),
                 height=total, font=dict(size=12), legend=where,
                 uniformtext=dict(minsize=MIN_TEXT, mode="hide"), margin=dict(l=10, r=10, t=top, b=10))
    for name in ("xaxis", "yaxis"):
        axis, own = lay.get(name, {}), {}
        if axis.get("title", {}).get("text"):
            own["title"] = dict(text=wrap(axis["title"]["text"], 24))
        if axis.get("type") == "log" and axis.get("dtick") is None:
            own["dtick"] = 1
        if own:
            patch[name] = own
    return patch


def merge(target: dict, values: dict) -> dict:
    """assign() for a figure as plain JSON: values merged into target, nested dicts into nested dicts; None
    unsets, as in plotly."""
    for name, value in values.items():
        if value is None:
            target.pop(name, None)
        elif isinstance(value, dict):
            if not isinstance(target.get(name), dict):
                target[name] = {}
            merge(target[name], value)
        else:
            target[name] = value
    return target


def assign(obj, values: dict):
    """obj.update(values) (a figure's layout, an axis), merging into the properties already set, by plain
    item assignment: plotly's update() goes through its batch machinery, 16 times slower, and a player
    builds a tree and a mask for every step of a trace while the user waits."""
    for name, value in values.items():
        child = obj[name]
        if isinstance(value, dict) and isinstance(child, BasePlotlyType) and child.to_plotly_json():
            assign(child, value)  # set already: merge into it
        else:
            obj[name] = value
    return obj


def cell_chars(columns: int, width: int = STAGE_PX, most: int = 7) -> int:
    """How many characters of a token a heatmap cell shows when `columns` cells share a figure `width` px
    wide (its axis labels and margins take about 60): at most `most`, and 0 under two (hover shows it)."""
    chars = min(most, int(((width - 60) / columns - 6) // CHAR_PX))
    return chars if chars >= 2 else 0


def _legend_entries(data: list[dict], lay: dict) -> list[str]:
    """The names plotly's legend will list: none when it shows no legend (one trace, by default)."""
    shown = [d for d in data if d.get("showlegend") or (d.get("showlegend") is None and d.get("type") != "heatmap")]
    if lay.get("showlegend") is False or (lay.get("showlegend") is None and len(shown) < 2
                                          and not any(d.get("showlegend") for d in shown)):
        return []
    return [str(d.get("name") or "") for d in shown]


def _below(names: list[str]) -> tuple[dict, int]:
    """A legend under the plot and its number of rows: one row when it fits the narrowest plot, else a column,
    whose entries' places do not depend on the chart's width."""
    if sum(ENTRY_PX + CHAR_PX * len(n) for n in names) <= ROW_PX:
        return LEGENDS["below"], 1
    return {**LEGENDS["below"], "entrywidth": WRAP_PX}, len(names)


def label_room(fig: dict, right: list[str], left: list[str] = (), px_per_char: int = 7) -> dict:
    """Room in the margins for the text labels drawn right of the last markers and left of the first:
    the x range is in data units, so at a narrow width a long token's label would run off the chart.
    fig: a figure as plain JSON."""
    room = {side: 10 + px_per_char * max(map(len, labels), default=0) for side, labels in (("r", right), ("l", left))}
    merge(fig["layout"], dict(margin=dict(r=room["r"], l=room["l"])))
    for labelled in fig["data"]:
        if labelled.get("mode") == "markers+text":
            labelled["cliponaxis"] = False
    return fig
