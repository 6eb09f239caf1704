"""What the app asks a learner, computed from the recorded runs: predict questions at a step (questions.py), the
Roofline page's questions (roofline.py) and the exercises a method page ends with (exercises.py, with their
checker). Everything is plain JSON: each text is [English template, values], translated and filled where it is
shown (the app, or a static page), so that the browser needs no Python. No streamlit, no torch."""
from __future__ import annotations

Text = list  # [template, {name: value}]: English, marked N_ for the French catalogue (scripts/messages.py)


def N_(text: str) -> str:
    """Marks an English template for the catalogue; the app translates it where it is shown."""
    return text


def say(template: str, **values) -> Text:
    return [template, values]
