"""The shared figure look (paradec.plots.style): legends off the title, no text under 11 px, token text in a
heatmap cell only as much as fits. The browser test (tests/ui_page_checks.js) checks the drawn result."""
import json

import plotly.graph_objects as go
import pytest

from paradec.plots import jacobi, style
from tests.test_plots import jacobi_trace

from helpers import ROOT


def test_a_legend_stands_under_the_plot_in_room_kept_for_it():
    bars = [go.Bar(x=[1], y=[1], name="a", text=["1"], textposition="outside"), go.Bar(x=[1], y=[2], name="b")]
    fig = style.layout(go.Figure(bars), "a title long enough to wrap in two lines", 240)
    assert (fig.layout.legend.yref, fig.layout.legend.y, fig.layout.legend.yanchor) == ("container", 0, "bottom")
    assert fig.layout.height == 240 + style.LEGEND_ROW
    assert "<br>" in fig.layout.title.text and fig.layout.margin.t == style.TOP + 2 * style.LINE + style.GAP
    assert fig.data[0].cliponaxis is False  # a label over the highest bar may stand in the margin
    alone = style.layout(go.Figure(go.Bar(x=[1], y=[1], name="only")), "t", 240)
    assert alone.layout.height == 240  # one trace: plotly shows no legend, so no row is kept for one


def test_a_legend_row_too_long_for_a_narrow_chart_lists_one_entry_a_row():
    names = ["accepted drafts", "target's token", "running τ"]  # wider than a third of a 1024-px page
    fig = style.layout(go.Figure([go.Bar(x=[1], y=[1], name=n) for n in names]), "t", 240)
    assert fig.layout.legend.entrywidth == style.WRAP_PX and fig.layout.legend.yref == "container"
    assert fig.layout.height == 240 + style.LEGEND_ROW + 2 * style.ENTRY  # the plot keeps its height
    plain = {"data": [{"type": "bar", "name": n} for n in names], "layout": {}}
    assert style.layout(plain, "t", 240)["layout"]["legend"]["entrywidth"] == style.WRAP_PX  # a player's figure too
    short = style.layout(go.Figure([go.Bar(x=[1], y=[1], name=n) for n in "ab"]), "t", 240)
    assert short.layout.legend.entrywidth is None  # two short names share one row


def test_a_legend_column_never_scrolls():
    fig = style.layout(go.Figure([go.Scatter(x=[1], y=[1], name=str(k)) for k in range(12)]), "t", 240, "right")
    assert fig.layout.legend.x > 1
    assert fig.layout.height >= fig.layout.margin.t + style.ENTRY * 12 + style.X_AXIS


def test_no_text_is_shrunk_under_the_minimum():
    fig = style.layout(go.Figure(go.Bar(x=[1], y=[1], text=["1"])), "t")
    assert fig.layout.uniformtext.minsize == style.MIN_TEXT == 11 and fig.layout.uniformtext.mode == "hide"


def test_a_cell_shows_what_fits_of_its_token_or_nothing():
    assert style.cell_chars(4) == 7  # wide cells: the most asked for
    assert style.cell_chars(17) == 3  # Jacobi's grid in the player at a 1024-px window
    assert style.cell_chars(17, 270) == 0  # the same grid in half the page: hover shows the tokens
    narrow = jacobi.grid_figure(jacobi_trace(), 1, width=120)
    assert not any(c for row in narrow.data[0].text for c in row)
    assert narrow.layout.xaxis.dtick == 2  # four positions in 60 px: a number every other one


def test_assign_merges_like_plotly_update():
    def fig():
        f = go.Figure(go.Scatter(x=[1], y=[1]))
        f.layout.title = dict(text="kept", font=dict(color="red"))
        f.layout.xaxis.title = "x"
        return f

    values = dict(title=dict(yref="container", font=dict(size=14)), height=300, margin=dict(l=10, t=40),
                  xaxis=dict(dtick=1, title="depth"), legend=style.LEGENDS["below"])
    slow, fast = fig(), fig()
    slow.update_layout(values)
    style.assign(fast.layout, values)
    assert fast.to_plotly_json() == slow.to_plotly_json()
    assert fast.layout.title.text == "kept" and fast.layout.title.font.color == "red"  # merged, not replaced


@pytest.mark.parametrize("name", ["eagle3-greedy", "lookahead-greedy"])
def test_a_player_figure_built_as_plain_json_is_what_plotly_would_send(name):
    """The player's figures skip plotly's objects: the JSON the browser gets is the same as through them."""
    from paradec.plots.eagle import growth_spec
    from paradec.plots.mask import mask_spec
    from paradec.plots.tree import tree_spec
    from paradec.traces.trace import Trace
    from ui.stage import fig_json

    trace = Trace.load(ROOT / "assets" / "traces" / f"{name}.json")
    for i in range(len(trace.steps)):
        specs = [tree_spec(trace, i), mask_spec(trace, i, 0 if trace.steps[i].nodes else None)]
        specs += [growth_spec(trace, i)] if name.startswith("eagle") else []
        for spec in specs:
            as_plain = json.dumps(fig_json(spec), sort_keys=True)
            assert as_plain == json.dumps(fig_json(go.Figure(spec)), sort_keys=True)


def _luminance(colour: str) -> float:
    r, g, b = (int(colour.lstrip("#")[k:k + 2], 16) / 255 for k in (0, 2, 4))
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two colours (#rrggbb)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_every_colour_the_token_stream_writes_text_in_reads_at_4_5_to_1():
    """The stream and its legend write each fate's tokens in its colour, on white and on this step's highlight."""
    import re

    from test_plots import make_trace

    from paradec.plots.style import COLORS, ORIGIN_LABELS
    from paradec.plots.tokens import stream_html

    assert contrast("#777777", "#ffffff") < 4.5 < contrast("#555555", "#ffffff")  # the check itself
    page = stream_html(make_trace(), 1)
    written = set(re.findall(r"color:(#[0-9a-fA-F]{6})", page))  # the tokens' and the legend's
    highlight = re.search(r"background:(#[0-9a-fA-F]{6})", page).group(1)
    assert written == {COLORS[o] for o in ORIGIN_LABELS}
    for colour in written:
        assert min(contrast(colour, "#ffffff"), contrast(colour, highlight)) >= 4.5, colour
