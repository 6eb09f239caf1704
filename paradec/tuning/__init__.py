"""Tuned presets: the device presets, the files they are kept in, and the search that tunes them."""
