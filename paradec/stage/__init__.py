"""What a page shows of a trace, in the words of a given language, for any shell: the step player's frames (the story,
the token stream and the figures of every step: frames.py), the steps told in words (narrate.py), the figures' words
translated (figure_text.py), the questions and exercises worded (learn.py), the glossary (terms.py) and each method
page's own animated panels (extras.py). The app (ui/) hands it the visitor's language, the static site
(paradec.site) each language in turn: both show the same frames. No streamlit."""
