"""Presenter mode (ui.presenter): a link with ?present=1 opens every method page on three lines of what to
notice, with the intro, the step's details and the long comparisons folded, and charts in larger text."""
import json

import pytest
from test_app import METHOD_PAGES, open_page

from ui import presenter

PAGES = [*METHOD_PAGES, "views/eagle.py"]


def popovers(at) -> list[str]:
    return [p.proto.popover.label for p in at.get("popover")]


@pytest.mark.parametrize("page", PAGES)
def test_a_presenter_link_leads_with_what_to_notice_and_folds_the_rest(page):
    at = open_page(page, present="1")
    assert at.session_state[presenter.KEY] and at.query_params[presenter.FLAG] == "1"
    notice = [i.value for i in at.info if i.value.startswith("**What to notice**")]
    assert len(notice) == 1 and notice[0].count("\n- ") == 3, notice
    assert "About this method" in popovers(at)  # the intro, behind a button in the row of buttons
    assert any(e.label.startswith("This step's details") for e in at.expander)


@pytest.mark.parametrize("page", ["views/sps.py", "views/eagle.py"])
def test_normal_mode_shows_the_intro_and_details_unfolded(page):
    at = open_page(page)
    assert not at.session_state[presenter.KEY]
    assert not any(i.value.startswith("**What to notice**") for i in at.info)
    assert "About this method" not in popovers(at)
    assert not any(e.label.startswith("This step's details") for e in at.expander)


def test_presenter_charts_use_larger_text():
    def fonts(at):
        return {json.loads(c.proto.spec)["layout"]["font"]["size"] for c in at.get("plotly_chart")}

    assert fonts(open_page("views/sps.py", present="1")) == {presenter.CHART_FONT}
    assert presenter.CHART_FONT not in fonts(open_page("views/sps.py"))
