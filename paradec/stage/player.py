"""The step player's own words (paradec/web/player.js keeps the English as its default): its buttons, their keys,
the step line; {i} and {n} are the step and the number of steps, filled in in the browser."""
from __future__ import annotations

from ..words import Words
from . import learn


def labels(tr: Words) -> dict[str, str]:
    """Every word the player shows, its questions' included, in tr's language."""
    return {"first": tr("« First"), "first_title": tr("first step (Home)"),
            "back": tr("‹ Back"), "back_title": tr("previous step (←)"),
            "play": tr("▶ Play"), "pause": tr("❚❚ Pause"), "play_title": tr("play / pause (Space)"),
            "next": tr("Next ›"), "next_title": tr("next step (→)"),
            "last": tr("Last »"), "last_title": tr("last step (End)"),
            "speed": tr("steps/s"), "scrubber": tr("step (← → Home End)"), "step": tr("Step {i} of {n}"),
            "playing": tr("Playing: the panels below the player catch up with step {i} when you pause."),
            "loading": tr("Loading step {i}…"), **learn.labels(tr)}
