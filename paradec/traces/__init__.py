"""Traces on disk: the recorded runs the app replays, checked as hostile input. Standard library only."""
