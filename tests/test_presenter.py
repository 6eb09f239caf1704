"""Presenter mode (ui.presenter): a link with ?present=1 opens every method page with its step's details and the
long comparisons folded, and charts in larger text. Presenting or not, the intro is behind the row's About button
(the first screen is the player and its drawing) and three lines of what to notice follow the player."""
import json

import pytest
from test_app import METHOD_PAGES, open_page

from ui import presenter

PAGES = [*METHOD_PAGES, "views/eagle.py"]


def popovers(at) -> list[str]:
    return [p.proto.popover.label for p in at.get("popover")]


def notices(at) -> list[str]:
    return [i.value for i in at.info if i.value.startswith("**What to notice**")]


@pytest.mark.parametrize("page", PAGES)
def test_a_presenter_link_folds_the_details_and_says_what_to_notice(page):
    at = open_page(page, present="1")
    assert at.session_state[presenter.KEY] and at.query_params[presenter.FLAG] == "1"
    assert len(notices(at)) == 1 and notices(at)[0].count("\n- ") == 3, notices(at)
    assert "About" in popovers(at)  # the intro, behind a button in the row of buttons
    assert any(e.label.startswith("This step's details") for e in at.expander)


@pytest.mark.parametrize("page", ["views/sps.py", "views/eagle.py"])
def test_normal_mode_says_what_to_notice_too_and_leaves_the_details_unfolded(page):
    at = open_page(page)
    assert not at.session_state[presenter.KEY]
    assert len(notices(at)) == 1 and "About" in popovers(at)  # every student: the gist, and the intro a click away
    assert not any(e.label.startswith("This step's details") for e in at.expander)


def test_presenter_charts_use_larger_text():
    def fonts(at):
        return {json.loads(c.proto.spec)["layout"]["font"]["size"] for c in at.get("plotly_chart")}

    assert fonts(open_page("views/sps.py", present="1")) == {presenter.CHART_FONT}
    assert presenter.CHART_FONT not in fonts(open_page("views/sps.py"))
