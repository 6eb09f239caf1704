"""The static replay site: `python -m paradec export-site --out DIR` writes every method page of the app, the roofline,
the arena, the benchmark and the glossary, in English and French, as files a browser opens with no server (file://
included): the same recorded traces, the same frames (paradec.stage) and the same step player (paradec/web) as the
app, and plotly.js from the plotly package. What it lacks is live decoding; every page says so."""
