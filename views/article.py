import streamlit as st

from paradec import claims
from ui import article
from ui.i18n import _

st.title(_("The article, checked"))
st.markdown(_("The article this app teaches makes claims a learner can test here. Each box gives the claim in "
              "other words, what paradec measured for it on the recording machine (figures read from the shipped "
              "runs in `assets/`, with the run they come from), a verdict, and the view that shows it. Where a "
              "claim depends on the machine or the model's size, the box says which, and what would change it."))
checks = claims.check_all(article.ASSETS)
counts = {v: sum(c.verdict == v for c in checks) for v in article.VERDICT}
st.caption(" · ".join(f"{_(article.VERDICT[v][0])}: {n}" for v, n in counts.items()))
for check in checks:
    article.show(check)
