"""A class vote (presenter mode): the presenter opens a class, the page shows its code as a link and a QR code,
students open it on a laptop or a phone (views/vote.py) and answer the question the presenter's player asks at its
step. The presenter's screen counts the answers and their spread before the reveal; only the presenter, who holds
the room's token in this browser session, can reveal (in the player) or move on (the player's step). The rooms
live in this server's memory (ui.vote_store, one store per process), never in a file."""
from __future__ import annotations

import secrets
from urllib.parse import urlencode, urlsplit

import segno
import streamlit as st

from paradec import catalog
from paradec.learn import questions
from paradec.traces.trace import Trace

from . import predict
from .i18n import N_, _, lang
from .vote_store import Refused, Rooms, Unknown, normal

ROOM = "vote.room"  # session state: (code, token) of the class this presenter opened
VOTER = "vote.voter"  # session state: this student's random name in the rooms
NOTE = "vote.note"
POLL_S = 2  # seconds between two looks at a room (the presenter's count, a student's question)
LETTERS = "ABCDEFGHIJKLMNOP"
REFUSALS = {  # the store's reasons (ui.vote_store), as the visitor reads them
    "unknown": N_("No open class has the code {code}: check it, or ask for a new link (a class closes three hours "
                  "after its last use)."),
    "moved-on": N_("The presenter has moved on: here is the new question."),
    "closed": N_("The answer is out: votes are closed."),
    "full": N_("This class is full."),
    "too-many-rooms": N_("Too many classes are open on this server: try again later."),
    "not-presenter": N_("Only the presenter who opened this class can do that."),
    "too-large": N_("This question is too large for a class vote."),
    "bad-voter": N_("Your browser's name in the class is not valid: reload the page."),
    "bad-choice": N_("That is not one of the choices."),
}


@st.cache_resource(show_spinner=False)
def rooms() -> Rooms:
    """This server's rooms (memory only)."""
    return Rooms()


def mine() -> tuple[str, str] | None:
    return st.session_state.get(ROOM)


def refusal(e: Refused, code: str = "") -> str:
    known = REFUSALS[str(e)]
    return _(known).format(code=code)


def _open() -> None:
    try:
        st.session_state[ROOM] = rooms().open()
    except Refused as e:
        st.session_state[NOTE] = refusal(e)
        return
    predict.switch_on()


def _close() -> None:
    code, token = st.session_state.pop(ROOM)
    try:
        rooms().close(code, token)
    except Refused:
        pass  # expired meanwhile


def student_url(code: str) -> str:
    parts = urlsplit(st.context.url or "http://localhost:8501/")
    query = {"room": code, **({"lang": lang()} if lang() != "en" else {})}
    return f"{parts.scheme}://{parts.netloc}/vote?{urlencode(query)}"


def panel() -> None:
    """The presenter's class box (a popover of the method page): open, then its code, link and QR code."""
    if NOTE in st.session_state:
        st.error(st.session_state.pop(NOTE))
    room = mine()
    if room is None:
        st.markdown(_("Students answer the player's questions from their own laptop or phone; you see how many "
                      "answered, and how, before you reveal."))
        st.button(_("Open a class"), on_click=_open, key="vote.open", icon=":material/how_to_vote:", type="primary")
        return
    url = student_url(room[0])
    st.markdown(_("**Class code: {code}**. Students scan the code or open the link:").format(code=room[0]))
    st.html(f"<div class='pd-qr' data-code='{room[0]}'>{segno.make(url, error='m').svg_inline(scale=4)}</div>")
    st.code(url, language=None, wrap_lines=True)
    st.button(_("Close the class"), on_click=_close, key="vote.close", icon=":material/close:")


def player_data(ns: str) -> dict:
    """What the player needs for predict mode: the page its scores count on, and whether a class votes."""
    method = catalog.METHODS.get(ns)
    return {"page": method.page if method else ns, "vote": mine() is not None}


def publish(trace: Trace, i: int) -> None:
    """The question the presenter's player stands on (step i, 0-based), for the room; a step without one tells
    the students to wait."""
    room = mine()
    if room is None:
        return
    qid = f"{trace.method}:{id(trace)}:{i}"
    try:
        rooms().publish(*room, {"id": qid, "question": questions.ask(trace, i), "step": i + 1})
    except Unknown:
        st.session_state.pop(ROOM, None)  # expired: the presenter opens another
    except Refused as e:
        st.warning(refusal(e))


def reveal(step: int) -> None:
    room = mine()
    if room is not None:
        try:
            rooms().reveal(*room)
        except Refused:
            st.session_state.pop(ROOM, None)


def tally() -> None:
    """Under the presenter's player: the class's code, how many answered and how (polled)."""
    if mine() is not None:
        st.fragment(_tally, run_every=POLL_S)()


def _tally() -> None:
    code = mine()[0] if mine() else None
    try:
        view = rooms().view(code) if code else None
    except Unknown:
        view = None
    if view is None:
        st.session_state.pop(ROOM, None)
        return
    if view["question"] is None:
        line = _("**Class {code}** · no question at this step: move on to one.").format(code=code)
    else:
        spread = " · ".join(f"{LETTERS[k]} {'▮' * n or '▯'} {n}" for k, n in enumerate(view["counts"]))
        line = _("**Class {code}** · {n} answered · {spread}").format(code=code, n=view["total"], spread=spread)
    st.markdown(f"<div class='pd-tally' data-total='{view['total']}' data-code='{code}'>\n\n{line}\n\n</div>",
                unsafe_allow_html=True)


def _text(t: list) -> str:
    template, values = t
    return _(template).format(**values)


def voter() -> str:
    return st.session_state.setdefault(VOTER, secrets.token_hex(8))


def student() -> None:
    """A student's page: the room's code (from the link, or typed), then the current question to answer."""
    code = normal(st.query_params.get("room", ""))
    typed = st.text_input(_("Class code"), value=code, max_chars=10, key="vote.code")
    code = normal(typed)
    if not code:
        st.info(_("Type the code your teacher shows, or open their link."))
        return
    st.query_params["room"] = code
    try:
        rooms().view(code)
    except Unknown as e:
        st.error(refusal(e, code))
        return
    st.fragment(_room, run_every=POLL_S)(code)


def _vote(code: str, choice: int, qid: str) -> None:
    try:
        rooms().vote(code, voter(), choice, qid)
    except Refused as e:
        st.session_state[NOTE] = refusal(e, code)


def _room(code: str) -> None:
    try:
        view = rooms().view(code, voter())
    except Unknown as e:
        st.error(refusal(e, code))
        return
    if NOTE in st.session_state:
        st.warning(st.session_state.pop(NOTE))
    q = view["question"]
    if q is None:
        st.info(_("Waiting for the presenter's next question…"))
        return
    st.markdown(_text(q["text"]))
    for k, c in enumerate(q["choices"]):
        label = f"{LETTERS[k]}. {_text(c)}"
        if view["revealed"]:
            mark = " ✓" if k == q["answer"] else (" ←" if k == view["mine"] else "")
            st.markdown(("**" + label + mark + "**") if k == q["answer"] else label + mark)
        else:
            st.button(label, key=f"vote.{view['id']}.{k}", on_click=_vote, args=(code, k, view["id"]),
                      type="primary" if k == view["mine"] else "secondary", use_container_width=True)
    if view["revealed"]:
        right = view["mine"] == q["answer"]
        verdict = (_("You answered right.") if right else _("Your answer was not this one.")
                   if view["mine"] is not None else _("You did not answer."))
        st.success(verdict + " " + _text(q["why"])) if right else st.info(verdict + " " + _text(q["why"]))
    elif view["mine"] is not None:
        st.caption(_("Your answer: {letter}. You may change it until the reveal.").format(letter=LETTERS[view["mine"]]))
