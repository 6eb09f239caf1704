"""Every page with streamlit's AppTest: recorded traces render, the controls are there and work,
the URL keeps the step, bad imports are refused, and a live run on a tiny model works."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from paradec.stage import narrate
from paradec.traces.trace import TraceError
from paradec.tuning import presets
from paradec.words import Words
from ui import guide, sources

from helpers import APP, drawn, go_to, player, tiny_model

METHOD_PAGES = ["views/ar.py", "views/sps.py", "views/pld.py", "views/jacobi.py", "views/lookahead.py",
                "views/medusa.py", "views/early_exit.py", "views/mirror.py"]


def open_page(page: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    at.run()
    if page != "views/home.py":
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("page", ["views/home.py", "views/arena.py", "views/numerics.py", *METHOD_PAGES])
def test_page_renders_from_recorded_traces(page):
    at = open_page(page)
    assert not at.error and not at.warning and at.title


@pytest.mark.parametrize("page", METHOD_PAGES)
def test_method_page_has_the_replay_controls(page):
    at = open_page(page)
    ns = page[6:-3]
    opened = at.selectbox(key=f"{ns}.recorded").value  # the run the page's rule opened on (paradec.learn.opening)
    data, trace = player(at, ns), sources.load(sources.recorded(ns)[opened])
    assert len(data["frames"]) == len(trace.steps) and {"tree", "mask"} <= set(data["frames"][0]["figs"])
    assert data["step"] == narrate.lesson(trace) + 1  # opens on its teaching step, and says so
    note = f"Step {data['step']}** is the first step worth seeing"
    assert any(note in c.value or "Nothing is drafted" in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) >= 4  # microscope, three KPI charts (tree and mask: in the player)


def markdown_text(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def test_jacobi_page_shows_the_convergence_grid_and_its_parameters():
    at = open_page("views/jacobi.py", step="2")
    assert at.slider(key="jacobi.block").value == 8 and at.selectbox(key="jacobi.init").value == "repeat"
    text = markdown_text(at)
    assert "Consistency LLMs" in text and {"convergence", "committed"} <= set(player(at, "jacobi")["frames"][1]["figs"])
    assert "Why checking starts at the first position" in text


def test_lookahead_page_shows_window_pool_and_combined_mask_with_w_n_g_sliders():
    at = open_page("views/lookahead.py")
    tuned = presets.tuned("cpu")[0]["lookahead"]  # the widgets start on the settings the recorded runs used
    assert [at.slider(key=f"lookahead.{k}").value for k in ("window", "ngram", "candidates")] == [
        tuned["window"], tuned["ngram"], tuned["candidates"]]
    hit = next(i for i, s in enumerate(sources.load(sources.recorded("lookahead")["greedy"]).steps) if s.accepted)
    go_to(at, "lookahead", hit + 1)  # a step where a pooled n-gram won
    assert not at.exception
    titles = " ".join(p["title"] for row in player(at, "lookahead")["panels"] for p in row)
    assert "2D window" in titles and "n-gram pool" in titles and "Combined attention mask" in titles
    frame = player(at, "lookahead")["frames"][hit]
    assert "won:" in frame["story"] and {"window", "mask"} <= set(frame["figs"]) and "pool" in frame["html"]


def test_medusa_page_shows_the_heads_grid_the_node_table_and_the_tree_editor():
    at = open_page("views/medusa.py")
    hit = next(i for i, s in enumerate(sources.load(sources.recorded("medusa")["greedy"]).steps) if s.nodes)
    go_to(at, "medusa", hit + 1)
    assert not at.exception
    text = markdown_text(at)
    assert "Nodes ↔ mask rows ↔ paths" in text and "Trees compared" in text
    one_token = sources.forward_cost()["curves"]["paradec"]["median_ms"][0]
    assert f"measured, 2 threads: {one_token:.0f} / " in text  # the tree-size note quotes the recorded costs
    assert "heads" in player(at, "medusa")["frames"][hit]["figs"]  # head × top-k rank, animated
    assert len(at.dataframe) >= 2 and ":red-badge[LOSSY]" not in text  # the recorded runs use exact acceptance
    trees = at.dataframe[1].value  # recorded runs of the tree presets on one prompt, then the one shown
    assert list(trees["tree"])[:5] == ["chain4", "small8", "cpu12", "wide16", "mc_sim_7b_63"]
    assert list(trees["run"])[:5] == [f"recorded ({t})" for t in trees["tree"][:5]]
    assert trees["tree nodes"][4] == 63 and trees["τ"][4] > trees["τ"][0]  # the big tree accepts more per pass
    assert "prompt" not in trees  # one prompt for every run: no column for it (the table fits a 1024-px page)
    curve = sources.medusa_curve()["points"]  # the heads trained on shares of the prompts (learning_curve.json)
    shares = at.dataframe[2].value
    assert "More training data?" in [e.label for e in at.expander]
    assert list(shares["training prompts"]) == ["1/8", "1/4", "1/2", "all"]
    assert list(shares["head 1's top-1"]) == [p["top1_by_head"][0] for p in curve]
    tau = [p["expected_tau_shipped_tree"] for p in curve]
    assert any(f"grew by {tau[1] - tau[0]:.3f}" in c.value for c in at.caption)
    assert at.selectbox(key="medusa.preset").value == "the heads' default"
    at.selectbox(key="medusa.preset").set_value("chain4").run()
    assert at.multiselect(key="medusa.paths.chain4.").value == ["[0]", "[0, 0]", "[0, 0, 0]", "[0, 0, 0, 0]"]
    at.selectbox(key="medusa.acceptance").set_value("typical").run()
    assert not at.exception


def test_the_step_follows_the_url_and_the_player():
    at = open_page("views/sps.py", step="3")
    assert player(at, "sps")["step"] == 3
    go_to(at, "sps", 4)
    assert player(at, "sps")["step"] == 4 and at.query_params["step"] == "4"
    assert any(m.value.startswith("#### Details of step 4") for m in at.markdown)  # the details follow
    go_to(at, "sps", 10_000)  # clamped to the trace
    assert player(at, "sps")["step"] == len(player(at, "sps")["frames"]) and not at.exception


def test_a_trace_that_replaces_another_shows_its_player_first_and_its_details_once_drawn():
    at = open_page("views/sps.py")
    assert not player(at, "sps")["wait"] and _details(at)  # the page's first trace: everything at once
    at.selectbox(key="sps.recorded").set_value("sampled").run()
    assert player(at, "sps")["wait"] and not _details(at)  # the player alone, the browser's charts after it
    assert "Share: export this trace" not in [e.label for e in at.expander]
    drawn(at)
    assert not player(at, "sps")["wait"] and _details(at) and not at.exception


def _details(at) -> bool:
    return any(m.value.startswith("#### Details of step") for m in at.markdown)


def test_sampled_trace_shows_the_microscope_and_samples_it():
    at = open_page("views/sps.py", trace="sampled")
    sim = [b for b in at.button if b.label.startswith("Sample this step")]
    assert sim, "the sampled trace's first step tests a draft token"
    sim[0].click().run()
    assert not at.exception
    assert any("draws of the accept / resample rule" in m.value for m in at.markdown)


def test_arena_compares_every_method_with_ar():
    at = open_page("views/arena.py")
    text = " ".join(m.value for m in at.markdown)
    assert "identical to AR" in text and "Speedup against AR" in text
    assert any("prompt-lookup branch" in c.value for c in at.caption)  # eagle3's, with what it did in the race


def test_import_refuses_what_is_not_a_trace():
    for bad, msg in [(b"not json", "not a JSON trace"), (b"[1, 2]", "not a paradec trace"),
                     (b'{"schema": 1}', "malformed")]:
        with pytest.raises(TraceError, match=msg):
            sources.import_trace(bad)
    good = json.loads(next(iter(sources.recorded("sps").values())).read_text())
    good["steps"][0]["nodes"][0]["parent"] = 5
    with pytest.raises(TraceError, match="step 0"):
        sources.import_trace(json.dumps(good).encode())


def test_imported_trace_is_replayed_and_can_be_dropped():
    at = AppTest.from_file(APP, default_timeout=60).run()
    trace = sources.load(next(iter(sources.recorded("pld").values())))
    at.session_state[sources.IMPORTED] = {"pld": trace}
    at.switch_page("views/pld.py").run()
    assert not at.exception and at.button(key="pld.drop")
    at.button(key="pld.drop").click().run()
    assert not at.exception
    assert sources.IMPORTED not in at.session_state or not at.session_state[sources.IMPORTED]


def test_a_trace_that_replaces_another_opens_on_its_own_lesson_step():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("views/pld.py").run()
    go_to(at, "pld", 7)
    sampled = sources.load(sources.recorded("pld")["sampled"])
    at.session_state[sources.IMPORTED] = {"pld": sampled}  # what an import does
    at.run()
    assert player(at, "pld")["step"] == narrate.lesson(sampled) + 1


def live_app(**sidebar) -> AppTest:
    """The app in live mode. Sidebar values go in through session state: AppTest drops the
    sidebar's elements after a rerun under st.navigation, so they cannot be set as widgets."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["sb.source"] = "live"
    for name, value in sidebar.items():
        at.session_state[f"sb.{name}"] = value
    return at.run()


def test_live_run_with_a_bad_model_shows_an_error_and_keeps_the_page(monkeypatch):
    monkeypatch.setenv("PARADEC_MODELS", "/nonexistent/model/dir")  # offered by the operator, yet missing
    at = live_app(model="/nonexistent/model/dir")
    at.switch_page("views/ar.py").run()
    at.button(key="ar.run").click().run()
    assert not at.exception
    assert any("cannot load model" in e.value for e in at.error)
    assert player(at, "ar")["frames"]  # the recorded trace is still replayed


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory, tokenizer):
    out = tmp_path_factory.mktemp("tiny")
    tiny_model(vocab_size=len(tokenizer)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


@pytest.mark.slow
def test_live_run_on_a_tiny_model(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("PARADEC_MODELS", tiny_model_dir)
    at = live_app(model=tiny_model_dir, max_new=16)
    at.switch_page("views/pld.py").run()
    at.button(key="pld.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    assert any(Path(tiny_model_dir).name in c.value for c in at.caption)  # the replay shows the live trace
    assert player(at, "pld")["frames"]
    # AR's baseline was decoded in the same turn, before the page drew, and the page gives the speed-up
    assert any("x AR** on this prompt" in i.value and "identical tokens" in i.value for i in at.info)


def test_home_links_every_page_and_every_page_says_what_comes_next():
    files = {f"views/{f.name}" for f in (Path(APP).parent / "views").glob("*.py")}
    files.remove(f"views/{guide.VOTE}.py")  # a class vote's students' page: opened from the presenter's link only
    assert {guide.pages()[url].file for url in guide.order()} == files  # the guided path reaches every page
    at = open_page("views/home.py")
    links = {x.proto.page for x in at.get("page_link")}  # by url path
    assert links >= set(guide.order()) - {""}
    # each page's "Next:" link is drawn by app.py after the page (AppTest drops it): the browser test sees it


def test_recorded_numerics_part_where_the_runs_say():
    data = json.loads((Path(APP).parent / "assets" / "numerics.json").read_text())
    assert any(r["parts_at"] is not None for r in data["runs"])
    for r in data["runs"]:
        a, b, k = r["tokens"]["float32"], r["tokens"]["bfloat16"], r["parts_at"]
        if k is None:
            assert a == b
            continue
        assert a[:k] == b[:k] and (k == min(len(a), len(b)) or a[k] != b[k])
        for dtype, toks in r["tokens"].items():  # each run wrote its own most likely token there (ties: either)
            top = dict(map(tuple, r["top_at_part"].get(dtype, [])))
            assert not top or top.get(toks[k]) == max(top.values())


def test_no_pages_folder_beside_the_app():
    # Streamlit serves the files of a pages/ folder beside the main script as pages of their own until
    # app.py has run once: on a fresh server a deep link (/eagle) ran the page without app.py's sidebar.
    assert not (Path(APP).parent / "pages").exists()


def test_a_prompt_lookup_step_says_where_it_copied_from():
    trace = sources.load(sources.recorded("pld")["greedy"])
    i = next(i for i, s in enumerate(trace.steps) if s.nodes and s.record.match_at is not None)
    told = narrate.step_story(trace, i, Words())
    assert f"found earlier at token {trace.steps[i].record.match_at} of the context" in told


def test_the_first_steps_story_says_its_pass_carries_the_prompt():
    trace = sources.load(sources.recorded("sps")["greedy"])
    assert f"also carried the prompt's {len(trace.prompt_ids)} tokens" in narrate.step_story(trace, 0, Words())
    assert "prompt" not in narrate.step_story(trace, 1, Words())


def test_sps_opens_on_a_step_that_shows_speculation_at_work():
    """Several tokens drafted, at least one accepted and one rejected: the rule sps's description names."""
    at = open_page("views/sps.py")
    run = at.selectbox(key="sps.recorded").value
    step = sources.load(sources.recorded("sps")[run]).steps[player(at, "sps")["step"] - 1]
    assert len(step.nodes) >= 2 and step.accepted and any(n.status == "rejected" for n in step.nodes)
    assert "run: sampled" in at.selectbox(key="sps.recorded").options  # the microscope's run, one choice away
