"""A method page: explanation, the method's parameters, the trace source, the replay and sharing. A method's page
file calls method_page with its own text and widgets; a method without one gets generic_page, from its description."""
from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

from paradec import catalog
from paradec.learn import opening
from paradec.stage import narrate
from paradec.traces.trace import Trace, TraceError

from . import classroom, live, presenter, sources, vote
from .controls import controls
from .i18n import _, labelled, words
from .presets import DEFAULT_DRAFT
from .replay import NO_EXTRA, Panels, replay
from .share import share
from .sidebar import current
from .sidebar import recorded as recorded_note
from .stage import Extra

BAR_AFTER_S = 3.0  # a live run's progress bar appears after this many seconds (a shorter run draws none: at 2 s
# it appeared during a slower CPU's AR baseline and slowed that by a tenth)
PROGRESS_S = 1.0  # seconds between two redraws of that bar


def method_page(method: str, title: str, intro: str, how: str, params: Callable[[], dict],
                draft: Callable[[], str | None] = lambda: None,
                analytic_k: Callable[[Trace], int | None] = lambda t: None,
                panels: Panels | None = None, extra: Extra | Callable[[Trace], Extra] = NO_EXTRA,
                more: str = "", notice: tuple[str, ...] = ()):
    """panels(trace, i): the method's own panels (e.g. Jacobi's iteration table), drawn under the player at
    its step; extra: the method's own panels the player animates (e.g. Jacobi's convergence grid).
    title "": the page drew its own (e.g. with a version selector under it). more: the numbers behind the
    intro, in an expander (the intro stays one short paragraph). notice: three lines of what to notice,
    which lead the page in presenter mode (ui.presenter)."""
    if title:
        st.title(title)
    # A fragment: a live run (its button), a new parameter or an import redraws this method's part of the page,
    # not the panels a view adds under it (they do not depend on it); the browser draws less, and sooner.
    st.fragment(lambda: _method(method, intro, how, params, draft, analytic_k, panels, extra, more, notice))()


def _method(method: str, intro: str, how: str, params: Callable[[], dict], draft: Callable[[], str | None],
            analytic_k: Callable[[Trace], int | None], panels: Panels | None,
            extra: Extra | Callable[[Trace], Extra], more: str, notice: tuple[str, ...]) -> None:
    classroom.apply_params(method)  # a classroom link's parameters, before their widgets
    classroom.note()
    # One row that wraps on a narrow screen: each button as wide as its label, never cut. The intro is behind
    # its first button: the first screen is the player and the step's drawing (a 1024x768 projector shows both);
    # what to notice follows the player, for every student.
    row = st.container(horizontal=True, vertical_alignment="center", gap="small")
    _intro(row.popover(_("About"), icon=":material/info:", help=_("About this method")), intro, more)
    with row.popover(_("How it works"), icon=":material/school:"):
        st.markdown(how)
    with row.popover(_("Parameters"), icon=":material/tune:"):
        values, draft_spec = classroom.guarded(method, lambda: (params(), draft()))
    if presenter.on():
        with row.popover(_("Class vote"), icon=":material/how_to_vote:"):
            vote.panel()
    meta = st.container(horizontal=True, vertical_alignment="center", gap="small")  # a trace of one's own, and
    with meta.popover(_("Import"), icon=":material/upload_file:", help=_("Import a trace (JSON)")):  # the one shown
        import_box(method)
    trace, run_key = _source(method, values, draft_spec, row)
    if trace is None:
        return
    meta.caption(narrate.describe(trace, words(), short=True), help=narrate.describe(trace, words()))
    versus = st.empty()  # a live run's speed-up over AR (decoded beside it, or now if it left the cache)
    # The player plays in the browser; when it stops, only the replay reruns (a fragment).
    extra = extra(trace) if callable(extra) else extra  # e.g. titles that name the trace's parameters
    st.fragment(lambda: _body(trace, method, analytic_k(trace), panels, values, extra, notice))()
    if run_key is not None and method != "ar":
        _versus_ar(run_key, trace, versus)


def _intro(where, intro: str, more: str) -> None:
    with where:
        st.markdown(intro)
        if more:
            with st.expander(_("The numbers behind this page, on this machine")):
                st.markdown(more)


def _body(trace: Trace, ns: str, k: int | None, panels: Panels | None, params: dict, extra: Extra,
          notice: tuple[str, ...]) -> None:
    try:
        replay(trace, ns, k, panels, extra, notice, shared=lambda figs: share(trace, figs, ns, params))
    except Exception as e:  # a trace the loader took that a panel still cannot draw: an error box, the page stays
        st.error(_("This trace cannot be drawn here ({error}: {message}). Drop it, or open a trace recorded by "
                   "paradec.").format(error=type(e).__name__, message=str(e).strip()[:200] or _("no message")))
        return  # the details and the sharing box (under the player) follow once the browser has drawn the player


def _source(method: str, params: dict, draft_spec: str | None, where) -> tuple[Trace | None, live.Key | None]:
    """The trace to replay: an imported file, a live run, or a recorded file (in that order), and the live
    run's key (None for a file)."""
    imported = sources.imported(method)
    if imported is not None:
        if not where.button(_("Showing your imported trace: drop it"), key=f"{method}.drop", icon=":material/close:"):
            return imported, None
        sources.drop_imported(method)
    if current().live:
        found = _live(method, params, draft_spec, where)
        if found is not None:
            return found
    return _recorded(method, where), None


def _recorded(method: str, where) -> Trace | None:
    files = sources.recorded(method)
    if not files:
        st.warning(_("No recorded trace for {method!r} in assets/traces: run `make traces`, or switch to "
                     "live.").format(method=method))
        return None
    names = list(files)
    wanted = st.query_params.get("trace")
    called = labelled(narrate.TRACE_NAMES)  # a run's name, in the reader's language (a file's own stays as it is)
    shown = {name: _("run: {name}").format(name=called(name)) for name in names}
    pick = where.selectbox(_("Recorded run"), names, index=names.index(wanted if wanted in names else _opens(method)),
                           key=f"{method}.recorded", format_func=shown.get, label_visibility="collapsed", width=140,
                           help=_("The runs recorded for this method; the page opens on one that shows it at work."))
    st.query_params["trace"] = pick
    trace = sources.load(files[pick])
    recorded_note(trace)
    return trace


def _opens(method: str) -> str:
    """The recorded run a page opens on: the first its method's description prefers with a step its rule finds."""
    m = catalog.METHODS[method]
    found = opening.run(m.opening, m.opens_on, {name: sources.load(path).steps
                                                for name, path in sources.recorded(method).items()})
    return found[0] if found else next(iter(sources.recorded(method)))


def _live(method: str, params: dict, draft_spec: str | None, where) -> tuple[Trace, live.Key] | None:
    s = current()
    try:
        key = live.key(s, method, params, draft_spec)
    except live.errors() as e:
        st.error(str(e))
        return None
    trace, failed = live.cached(key), st.session_state.pop(f"{method}.failed", None)
    if trace is None:
        where.button(_("Run live on these settings"), type="primary", key=f"{method}.run",
                     icon=":material/play_circle:", on_click=_run, args=(method, key))
    if failed:
        st.error(failed)
        return None
    if trace is None:
        st.info(_("Live mode: press **Run live** to decode with the sidebar and parameter settings. "
                  "Until then, the recorded trace:"))
        return None
    return trace, key


def _run(method: str, key: live.Key) -> None:
    """The button's callback: the run and its AR baseline decode before the page reruns, so that the browser has
    nothing to draw meanwhile (it drew the rerun's first elements on the cores the decode ran on, a quarter
    slower). Its progress bar stands at the top of the page while it lasts; the rerun finds the traces cached."""
    try:
        _with_bar(key, _("decoding, then AR on the same settings"), beside=_ar(key))
    except live.errors() as e:
        st.session_state[f"{method}.failed"] = str(e)


def _ar(key: live.Key) -> live.Key | None:
    """The AR run a live run is timed against: the same model, prompt and sampling."""
    return None if key.method == "ar" else key._replace(method="ar", params="{}", draft=None)


def _with_bar(key: live.Key, doing: str, beside: live.Key | None = None) -> Trace:
    """live.run(key) under a progress bar that appears after BAR_AFTER_S and is redrawn at most once a second
    after: each redraw is a message the browser draws, on the cores a live run decodes on when both share a
    machine (a redraw every 20 % slowed a two-second run by a third; the bar's first drawing alone took 0.09 s
    of the browser's CPU time in a 1.1-s run), so a shorter run draws none, and makes no element either (its
    placeholder alone halved the browser's work at the click). A run that waits for its turn says so at once."""
    where, last = [], [time.perf_counter() + BAR_AFTER_S - PROGRESS_S]

    def progress(f: float, text: str | None = None) -> None:
        if text or time.perf_counter() >= last[0] + PROGRESS_S:
            last[0] = time.perf_counter()
            if not where:  # made at the first redraw, over the page (ui/style.py): the page below stays put
                where.append(st.container(key=f"pd-progress-{time.perf_counter_ns()}").empty())
            where[0].progress(f, text=text or f"{doing}… {f:.0%}")

    trace = live.run(key, progress, beside)
    if where:
        where[0].empty()
    return trace


def _versus_ar(key: live.Key, trace: Trace, where) -> None:
    """The live run's speed-up over AR on the same model, prompt and sampling, decoded in this process."""
    try:
        with where.container():
            ar = _with_bar(_ar(key), _("timing AR on the same settings"))
    except live.errors() as e:
        where.error(_("No AR baseline: {error}").format(error=e))
        return
    same = (_("identical tokens") if ar.token_ids == trace.token_ids
            else _("different tokens (sampling, or bfloat16 ties)"))
    where.info(_("**{speedup:.2f}x AR** on this prompt and these settings: {rate:.1f} against {ar_rate:.1f} tokens/s, "
                 "τ {tau:.2f}, {same}. Both decoded in this process, one after the other (MEASURED; one prompt: the "
                 "Benchmark page has many).").format(
        speedup=trace.speedup_over(ar), rate=trace.new_tokens / max(trace.wall_s, 1e-9),
        ar_rate=ar.new_tokens / max(ar.wall_s, 1e-9), tau=trace.tau, same=same), icon=":material/speed:")


def generic_page(method: str) -> None:
    """The page of a method without a page file of its own (views/<page>.py): its description's summary, what it
    needs, every parameter's control, and the same player, replay and live runs as every method page."""
    m = catalog.METHODS[method]
    intro = _("**{title}** ({family}): {summary}.").format(title=_(m.title), family=_(m.family),
                                                             summary=_(m.summary))
    how = _("Lossless: {lossless}. Its steps follow the one loop every method shares: propose, verify in one "
            "target forward, accept, commit.").format(lossless=_(m.lossless))
    names = [p.name for p in m.params]
    method_page(method, _(m.title), intro, how, lambda: controls(method, names) if names else {},
                draft=lambda: DEFAULT_DRAFT if m.needs == "draft" else None)


def import_box(method: str) -> None:
    up = st.file_uploader(_("Import a trace (JSON)"), type=["json"], key=f"{method}.upload")
    if up is None:
        return
    parsed = f"{method}.upload.parsed"  # the uploader keeps its file across reruns: parse it once
    if st.session_state.get(parsed, (None,))[0] != up.file_id:
        try:
            st.session_state[parsed] = (up.file_id, *sources.import_trace(up.getvalue()))
        except TraceError as e:
            st.session_state[parsed] = (up.file_id, None, _("Not imported: {error}").format(error=e))
    __, trace, note = st.session_state[parsed]
    if trace is None:
        st.error(note)
        return
    if note:
        st.info(note)
    sources.keep_imported(trace)
    if sources.page_of(trace.method) != method:
        described = catalog.METHODS.get(trace.method)
        page = _(described.title) if described else trace.method
        st.warning(_("This is a {method!r} trace: the {page} page replays it.").format(method=trace.method, page=page))
