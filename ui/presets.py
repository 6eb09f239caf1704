"""Prompt presets for the sidebar; the recorded traces use the same prompts. A preset's name is its key (the
sidebar shows it in the visitor's language); the prompts are the model's input and stay as they are."""
from __future__ import annotations

from .i18n import N_

PRESETS = {
    N_("Explain (free text)"): "Explain in three sentences why the sky is blue.",  # not taught
    N_("Haiku (creative)"): "Write a haiku about the sea at night.",  # not taught
    N_("Fix the spelling (copies the prompt)"): (
        "Fix the spelling in this text and write it out again: "  # not taught
        "The quick brwn fox jumpd over the lazy dog. Then the dog woke up and chasd the fox acros the green feild."
    ),
    N_("Code edit (copies the prompt)"): (
        "Rename the variable x to total in this Python code and show the result:\n"  # not taught
        "def add(items):\n    x = 0\n    for item in items:\n        x = x + item\n    return x"
    ),
}
CUSTOM = N_("Custom prompt…")

# sps drafts with the draft model distilled from the embedded target (assets/drafters/sps-smollm2);
# the recorded traces use it too. self:N (the target's own first N layers) stays available as an
# untrained contrast.
DEFAULT_DRAFT = "trained"
