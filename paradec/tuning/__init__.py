"""The devices' presets (which target, draft and sizes a device gets), the files tuned presets are kept in, and
the presets' memory model."""
