import streamlit as st

from ui import glossary
from ui.i18n import _

st.title(_("Glossary: the article's words"))
st.markdown(_("Every technical term of the article this app teaches (a French glossary article on parallel "
              "decoding), in English and French, what it means in one line, and the view that shows it. "
              "Switch the language in the sidebar; the terms stay in both."))
if "glossary.search" not in st.session_state:  # a question's link to a term opens the glossary on it
    st.session_state["glossary.search"] = st.query_params.get("term", "")[:60]
search = st.text_input(_("Find a term"), key="glossary.search", placeholder=_("e.g. brouillon, tree, τ"))
if not glossary.show(search):
    st.info(_("No term matches. Try a shorter word."))
