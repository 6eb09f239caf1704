"""Bad input the other test files do not cover, in the CLI (exit 2, one line on stderr) and
in the app (an error box, the page still usable): prompts that are not UTF-8 or are all
control characters, trees past the cap (paradec.core.tree.MAX_NODES) or nested past the stack,
ranks a head cannot give, and hand-made links and tree edits nested past the stack.
A tiny random model saved with the embedded tokenizer, tiny random heads, one thread."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from paradec.core import tree
from paradec.drafters import eagle_head, medusa_heads
from tests.test_cli import assert_one_line_error, cli
from ui.presets import CUSTOM

from helpers import APP, player

pytestmark = pytest.mark.usefixtures("one_thread")

DEEP = "[" * 100_000 + "]" * 100_000
WIDE = json.dumps([[0, r] for r in range(tree.MAX_NODES)])  # MAX_NODES + 1 nodes with the implied [0]


@pytest.fixture(scope="module")
def heads(tmp_path_factory, tiny_loaded):
    """Random heads that fit the tiny target: Medusa (4 heads) and EAGLE-1."""
    folder = tmp_path_factory.mktemp("heads")
    (folder / "medusa").mkdir()
    medusa_heads.save(medusa_heads.MedusaHeads(64, 4), folder / "medusa" / medusa_heads.OURS)
    eagle_head.save(eagle_head.EagleHead(tiny_loaded.model.config, 1), folder / "eagle", tiny_loaded.model.config, {})
    return {"medusa": f"heads={folder / 'medusa'}", "eagle": f"head={folder / 'eagle'}",
            "eagle2": f"head={folder / 'eagle'}"}


def test_parse_paths_caps_the_tree():
    assert tree.parse_paths("[[0], [0, 1]]") == [[0], [0, 1]]
    for bad, words in [(WIDE, "more than"), (json.dumps([[0] * 1000]), "ranks"), (DEEP, "JSON list"),
                       ("[[true]]", "ranks"), ("[]", "JSON list"), ("[1, 2]", "JSON list"), ("[[-1]]", "ranks")]:
        with pytest.raises(ValueError, match=words):
            tree.parse_paths(bad)


@pytest.mark.parametrize("method, value, words", [
    ("medusa", f"tree={WIDE}", ["more than 256 nodes"]),
    ("medusa", f"tree={DEEP}", ["tree"]),
    ("medusa", "tree=[[true]]", ["tree"]),
    ("eagle", f"tree={WIDE}", ["more than 256 nodes"]),
    ("eagle", f"tree={DEEP}", ["tree"]),
    ("eagle", "tree=[[100000]]", ["rank 100000", "scores only"]),
    ("eagle2", "total_tokens=100000", ["total_tokens must be between 1 and 256"]),
    ("eagle2", "top_k=nan", ["top_k", "int"]),
])
def test_trees_past_the_cap(capfd, tiny_dir, heads, method, value, words):
    args = ["--method", method, "--prompt", "hi", "--model", tiny_dir, "--set", heads[method], "--set", value]
    assert_one_line_error(*cli(capfd, *args), *words)


def test_prompt_that_is_not_utf8(capfd, tiny_dir):
    """Undecodable argv bytes reach Python as lone surrogates (what os.fsdecode gives)."""
    assert_one_line_error(*cli(capfd, "--method", "ar", "--prompt", "caf\udce9", "--model", tiny_dir), "not valid text")


@pytest.mark.parametrize("prompt", ["\x00", "\x07\x1b[31mred\x1b[0m", "\u202e\u200b", "\ufeff🙂"])
def test_control_characters_are_text(capfd, tiny_dir, prompt):
    code, out, err = cli(capfd, "--method", "pld", "--prompt", prompt, "--model", tiny_dir, "--max-new-tokens", 3,
                         "--json")
    assert code == 0, err
    assert json.loads(out)["new_tokens"] == 3


# ---------------------------------------------------------------- the app

def live_app(tiny_dir, prompt: str) -> AppTest:
    """Live on the tiny model; the caller offers it (PARADEC_MODELS), as an operator would."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["sb.source"] = "live"
    for name, value in {"model": str(tiny_dir), "max_new": 8, "preset": CUSTOM, "prompt": prompt}.items():
        at.session_state[f"sb.{name}"] = value
    return at.run()


@pytest.mark.parametrize("prompt, words", [
    ("   \n\t", "empty"), ("word " * 600, "context"),
])  # a browser sends UTF-8 only: the lone surrogates of the CLI case cannot come from the page
def test_live_run_with_a_bad_prompt_shows_an_error_and_keeps_the_page(tiny_dir, prompt, words, monkeypatch):
    monkeypatch.setenv("PARADEC_MODELS", str(tiny_dir))
    at = live_app(tiny_dir, prompt)
    at.switch_page("views/pld.py").run()
    at.button(key="pld.run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(words in e.value for e in at.error), [e.value for e in at.error]
    assert player(at, "pld")["frames"]  # the recorded trace is still replayed


@pytest.mark.parametrize("typed, words", [("[" * 5000 + "]" * 5000, "JSON list"), ("[[true]]", "ranks >= 0"),
                                          ("[[0], [-1]]", "ranks >= 0"), ("[[0], []]", "ranks >= 0")])
def test_medusa_tree_editor_refuses_a_bad_path_with_the_parsers_message(typed, words):
    """The editor reads paths with the run's own parser (paradec.core.tree): a bad one is refused, and said."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("views/medusa.py").run()
    at.text_input(key="medusa.add").input(typed).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(words in e.value for e in at.error), [e.value for e in at.error]


def test_classroom_link_with_deep_params_is_ignored():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"params": "[" * 5000 + "]" * 5000})
    at.run()
    at.switch_page("views/pld.py").run()
    assert not at.exception, [e.value for e in at.exception]
