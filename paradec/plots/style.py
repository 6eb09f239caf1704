"""Colours and the honesty labels shared by every figure."""
from __future__ import annotations

# One colour per token fate; the token stream, the tree and the legends all use these.
COLORS = {
    "accepted": "#2ca02c",  # accepted draft
    "rejected": "#d62728",  # rejected draft
    "resampled": "#ff7f0e",  # drawn from the residual after a rejection
    "bonus": "#1f77b4",  # the target's extra token after a fully accepted path
    "target": "#6b6b6b",  # plain target token (nothing drafted, or greedy mismatch)
    "unreached": "#c9c9c9",  # drafted but never tested: an earlier node was rejected
    "pending": "#444444",
}
ORIGIN_LABELS = {
    "accepted": "accepted draft",
    "rejected": "rejected draft",
    "resampled": "resampled",
    "bonus": "bonus",
    "target": "plain target",
}
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


# Where a figure's legend goes (layout's `legend`). top: one row right under the title. right: a column right
# of the plot, for a full-width figure with many entries (a row under the title wraps upwards over the title
# when it does not fit). below: under the x axis's title, where wrapping grows it into room kept for it, for
# a figure in a third of a 1024-px page.
LEGENDS = {"top": dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0),
           "right": dict(orientation="v", yanchor="top", y=1.0, xanchor="left", x=1.02),
           "below": dict(orientation="h", yref="container", yanchor="bottom", y=0, xanchor="left", x=0)}


def layout(fig, title: str | None = None, height: int = 300, legend: str = "top"):
    """The compact look every figure shares (fits a 1280x720 projector): long titles in two lines, log axes
    labelled by decade (plotly's in-between labels are 9 px). The TEMPLATE is left to whoever shows the
    figure: copying it into each figure took two thirds of drawing a player frame. legend: see LEGENDS."""
    title = wrap(title, 26)
    two = bool(title and "<br>" in title)  # plotly puts a second line ABOVE a top-anchored title: move it down
    below = legend == "below"  # 60 px more at the bottom for it, 30 fewer at the top where no legend row is
    fig.update_layout(
        title=dict(text=title, y=0.98 - (18 / height if two else 0), yanchor="top", x=0.01, font=dict(size=14)),
        height=height + (60 if below else 0), font=dict(size=12), legend=LEGENDS[legend],
        margin=dict(l=10, r=10, t=(62 if title else 30) + (18 if two else 0) - (30 if below else 0),
                    b=70 if below else 10),
    )
    for axis in ("xaxis", "yaxis"):
        ax = fig.layout[axis]
        if ax.title.text:
            ax.title.text = wrap(ax.title.text, 24)
        if ax.type == "log" and ax.dtick is None:
            ax.dtick = 1
    return fig


def label_room(fig, right: list[str], left: list[str] = (), px_per_char: int = 7):
    """Room in the margins for the text labels drawn right of the last markers and left of the first:
    the x range is in data units, so at a narrow width a long token's label would run off the chart."""
    room = {side: 10 + px_per_char * max(map(len, labels), default=0) for side, labels in (("r", right), ("l", left))}
    fig.update_layout(margin_r=room["r"], margin_l=room["l"])
    fig.update_traces(cliponaxis=False, selector=dict(mode="markers+text"))
    return fig
