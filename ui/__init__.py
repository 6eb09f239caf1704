"""The app's helpers: shared sidebar, trace sources, the step player and the replay panels.
Only the live-run path imports torch (lazily), so recorded traces replay without it."""
