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

# What a panel's numbers are: timed in this run, derived from the trace, or analytic.
MEASURED, FROM_RUN, MODEL = "MEASURED", "FROM RUN", "MODEL"


def layout(fig, title: str | None = None, height: int = 300):
    """The compact look every figure shares (fits a 1280x720 projector)."""
    # Title on top, the legend in one row right under it: nothing overlaps the axes in a narrow column.
    fig.update_layout(
        title=dict(text=title, y=0.98, yanchor="top", x=0.01, font=dict(size=14)), height=height,
        margin=dict(l=10, r=10, t=(62 if title else 30), b=10), template="plotly_white", font=dict(size=12),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0),
    )
    return fig
