"""The step player and the exercises as they run in a browser: JavaScript and CSS with no Python behind them. The
app loads them as Streamlit components (ui/player.py, ui/quiz.py) and the static replay site as plain files, so
both shells animate the same frames the same way."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
PLAYER_JS = ("learn.js", "player_stage.js", "player.js")  # one module, in this order
PLAYER_CSS = ("player.css", "learn.css")
QUIZ_JS = ("learn.js", "quiz.js")
QUIZ_CSS = ("learn.css",)
SITE_CSS = ("player.css", "learn.css", "site.css")  # the static site's one style sheet (its script: paradec.site)


def text(names: tuple[str, ...]) -> str:
    """The files, read and joined: one script or one style sheet."""
    return "\n".join((HERE / name).read_text(encoding="utf-8") for name in names)
