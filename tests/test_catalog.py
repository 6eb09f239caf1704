"""Each method is described once (paradec.catalog) and everything reads that description: the drafters'
arguments and their checks, the parsing of --set and of requests, the device profile's sizes, and every
parameter control on the app's pages (its label, range or choices and default)."""
import inspect

import pytest
from streamlit.testing.v1 import AppTest

from paradec import catalog, methods
from paradec.tuning import presets
from paradec.tuning.presets import DeviceInfo

from helpers import APP

MODEL_ARGS = {"self", "draft_model", "target_model"}
PAGES = {"sps": "sps", "pld": "pld", "jacobi": "jacobi", "lookahead": "lookahead", "medusa": "medusa",
         "eagle": "eagle", "early_exit": "early_exit", "mirror": "mirror"}


@pytest.mark.parametrize("name", catalog.METHODS)
def test_every_drafter_argument_is_described_and_its_default_written_only_there(name):
    sig = inspect.signature(methods.check_method(name).__init__).parameters
    args = {n: p for n, p in sig.items() if n not in MODEL_ARGS}
    assert list(args) == list(catalog.method(name).defaults())
    assert all(p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in args.values())
    desc = catalog.method(name)
    assert ("draft_model" in sig) == (desc.needs == "draft") and ("target_model" in sig) == desc.reads_target


@pytest.mark.parametrize("name", [n for n, m in catalog.METHODS.items() if m.params])
def test_a_value_outside_the_description_is_refused_by_the_parser(name):
    p = next(p for p in catalog.method(name).params if p.low is not None or p.choices)
    bad = p.high + 1 if p.low is not None else "nonsense"
    with pytest.raises(methods.InputError, match=p.name):
        methods.parse_params(name, {p.name: bad})


def test_the_parser_types_and_checks_from_the_description():
    assert methods.parse_params("pld", ["k=5", "ngram_max=4"])["k"] == 5
    with pytest.raises(methods.InputError, match="k must be between 1 and 64, got 65"):
        methods.parse_params("pld", ["k=65"])
    with pytest.raises(methods.InputError, match=r"its parameters: k, ngram_max, ngram_min"):
        methods.parse_params("pld", ["window=3"])
    with pytest.raises(methods.InputError, match="init must be one of repeat, pad, random"):
        methods.parse_params("jacobi", {"init": "zeros"})


@pytest.mark.parametrize("info", [DeviceInfo("cpu", "CPU", 0, processors=2),
                                  DeviceInfo("cuda", "H100", 80 * 2**30, (9, 0), 132)])
def test_the_device_sizes_only_what_the_description_marks_and_within_its_range(info):
    profile = presets.device_profile(info)
    for name, desc in catalog.METHODS.items():
        for key, value in profile.params(name).items():
            p = desc.param(key)
            assert p.sized or key in profile.tuned.get(name, {}), f"{name}.{key}"  # a tune run may set any
            p.check(value)


# A page each (a second or two): the fast tier checks two, a chain's and a tree's; the slow tier the rest.
@pytest.mark.parametrize("method", [pytest.param(m, marks=[] if m in ("sps", "medusa") else [pytest.mark.slow])
                                    for m in PAGES])
def test_every_page_control_is_the_description(method):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(f"views/{PAGES[method]}.py").run()
    assert not at.exception
    desc, seen = catalog.method("eagle3" if method == "eagle" else method), []
    for kind in ("slider", "selectbox", "toggle"):
        for w in at.get(kind):
            _, _, name = (w.key or "").partition(".")
            if not w.key or not w.key.startswith(f"{desc.name}.") or name not in desc.defaults():
                continue
            p, seen = desc.param(name), seen + [name]
            if name == "tree":  # presets of a free-form value: the label and help are the description's
                continue
            assert w.label == (p.label or p.name) and w.help == p.help, w.key
            if kind == "slider" and name != "exit_layer":  # exit_layer: the target's own layer count caps it
                assert (w.min, w.max) == (p.low, p.high), w.key
            if kind == "selectbox" and name != "adapter":
                assert tuple(w.options) == tuple(map(str, p.choices)), w.key
    assert seen, f"no control of {desc.name} found on its page"


def test_the_command_lines_help_lists_every_method_and_parameter(capsys):
    from paradec import cli

    with pytest.raises(SystemExit):
        cli.parser().parse_args(["run", "--help"])
    out = capsys.readouterr().out
    for name, desc in catalog.METHODS.items():
        assert f"  {name}: {desc.summary}" in out
        assert all(f"    {p.name}={p.default!r} (" in out for p in desc.params)
    assert "k=8 (1..64): tokens copied at most" in out


def test_the_draft_length_rules_are_the_described_ones():
    from paradec.drafters import draft_length

    assert draft_length.SCHEDULES == catalog.RULES and draft_length.MAX_K == catalog.MAX_K
