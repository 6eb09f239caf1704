"""Adding a method touches one drafter file and its description: the toy bigram method
(tests/toy_bigram.py) runs through the parser, the registry, the decode loop, a recorded trace and the
CLI's help without a line changed anywhere else."""
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
