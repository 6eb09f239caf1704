"""French, whole: every figure the player draws for every recorded run, built in French, has no English left in its
title, axis titles, legend entries, annotations or ticks (a text counts as English when the catalogue translates it
otherwise, itself or the template it was made from); the badges and the token stream's legend are French too."""
import json
import re
from pathlib import Path

import pytest

from paradec import catalog
from paradec.site.method import link
from paradec.stage import figure_text
from paradec.stage.extras import for_page
from paradec.stage.frames import Shell, frames
from paradec.traces.trace import Trace
from paradec.words import Words, catalogue

ROOT = Path(__file__).resolve().parents[1]
TRACES = sorted(p for p in (ROOT / "assets" / "traces").glob("*-*.json")
                if p.stem.split("-")[0] in catalog.METHODS)


def texts(fig: dict) -> list[str]:
    lay = fig.get("layout", {})
    out = [lay.get("title", {}).get("text"), lay.get("legend", {}).get("title", {}).get("text")]
    for key, axis in lay.items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            out += [axis.get("title", {}).get("text"), *(axis.get("ticktext") or [])]
    out += [a.get("text") for a in lay.get("annotations", [])] + [t.get("name") for t in fig.get("data", [])]
    return [t for t in out if isinstance(t, str) and t.strip()]


def english(text: str) -> bool:
    """Still the English of a catalogue entry (or of one of its templates) that French says otherwise."""
    french = catalogue("fr")
    plain = re.sub(r"<[^>]+>", " ", text.replace("<br>", " ")).strip()
    if french.get(plain, plain) != plain:
        return True
    return any(pattern.match(plain) and not template.startswith(plain[:3])
               for pattern, template in figure_text._templates("fr"))


def test_the_check_finds_english():
    assert english("draft vs verify time") and english("rerank: 8 of 20 kept (confidence ≥ 0.05)")
    assert not english("temps : brouillon / vérification") and not english("P ·the")


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.stem)
def test_a_french_player_draws_no_english_figure_text(path):
    trace = Trace.load(path)
    page = catalog.METHODS[trace.method].page
    shell = Shell(Words("fr"), link("fr"), True, for_page(page, trace))
    shown = frames(trace, range(0, len(trace.steps), 3), shell)  # a third of the steps: every kind of figure
    left = {t for f in shown for fig in (f.get("figs") or {}).values() if fig for t in texts(fig) if english(t)}
    assert not left, sorted(left)[:5]
    stream = json.dumps([f["html"].get("stream", "") for f in shown], ensure_ascii=False)
    assert "accepted draft" not in stream and "brouillon accepté" in stream
