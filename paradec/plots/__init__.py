"""Pure figure builders: a Trace (or one of its steps) in, a plotly figure or HTML out.

No torch and no streamlit here, so the app can draw recorded traces anywhere and the
figures can be tested and exported on their own."""
