"""Adding a method touches one drafter file and its description: the toy bigram method
(tests/toy_bigram.py) runs through the parser, the registry, the decode loop, a recorded trace and the
CLI's help, and is listed by the service, the app (a page, Home's map, the arena), the GPU presets' memory table
and the tuner, without a line changed anywhere else."""
import pytest
from toy_bigram import DESCRIPTION

from paradec import catalog, methods
from paradec.run import run


@pytest.fixture
def bigram(monkeypatch):
    monkeypatch.setitem(catalog.METHODS, "bigram", DESCRIPTION)


def test_a_new_method_runs_everywhere_from_its_description(bigram, tiny_loaded, capsys):
    assert methods.parse_params("bigram", ["k=5"]) == {"k": 5}
    with pytest.raises(methods.InputError, match="k must be between 1 and 8"):
        methods.parse_params("bigram", ["k=9"])
    prompt = "one two three one two three one two"
    ar = run(tiny_loaded, "ar", prompt, max_new_tokens=12)
    got = run(tiny_loaded, "bigram", prompt, {"k": 4}, max_new_tokens=12)
    assert got.token_ids == ar.token_ids and got.method == "bigram" and got.params == {"k": 4}
    assert any(s.nodes for s in got.steps)  # it drafted

    from paradec import cli

    with pytest.raises(SystemExit):
        cli.parser().parse_args(["run", "--help"])
    assert "  bigram: the token that followed the pending token last time, chained" in capsys.readouterr().out


def test_a_new_method_is_in_every_listing(bigram, tiny_loaded):
    """Its description alone puts it in the service's schema and its list of methods, the app's navigation and
    Home's map, the arena, the GPU presets' memory table, the tuner's grid and the command line."""
    from fastapi.testclient import TestClient

    from paradec.serving import serve
    from paradec.tuner import tune_search
    from paradec.tuning import memory_model
    from ui import arena, guide

    app = serve.create_app(serve.Service({tiny_loaded.name: tiny_loaded}))
    with TestClient(app) as client:
        assert "bigram" in [m["name"] for m in client.get("/methods").json()]
        schema = client.get("/openapi.json").json()["paths"]["/run"]["post"]["requestBody"]["content"]
        assert "bigram" in schema["application/json"]["schema"]["properties"]["method"]["enum"]
    assert guide.pages()["bigram"] == guide.Entry(None, "bigram", ":material/science:", "bigram")  # the generic page
    assert "bigram" in guide.order() and "bigram" in arena.methods()
    assert {row["method"] for row in memory_model.table()} >= {"bigram"}
    assert tune_search.tunable()[-1] == "bigram" and tune_search.space("bigram") == {"k": (2, 4, 8)}


def test_a_new_method_gets_a_page_from_its_description(bigram):
    """No page file of its own: the generic page draws its summary and its parameters' controls."""
    from streamlit.testing.v1 import AppTest
    from streamlit.util import calc_hash

    from helpers import APP

    at = AppTest.from_file(APP, default_timeout=60).run()
    at._page_hash = calc_hash("bigram")  # a page drawn by a function: AppTest switches pages by file only
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "bigram" and at.slider(key="bigram.k").value == 3
    assert any("the token that followed" in m.value for m in at.markdown)
