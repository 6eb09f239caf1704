"""Sliding-window models (Mistral; Qwen2, Gemma-2/3 with windowed and full layers mixed): a tree or
Lookahead verify pass hands the model a 4D mask, which replaces the model's own sliding-window mask,
so the tree mask must apply the window itself. On tiny random models with sliding_window=4 and
prompts longer than the window, every method's greedy tokens equal AR's."""
import pytest
import torch
from transformers import MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM

from paradec import catalog, methods
from paradec.core import targets, verify
from paradec.core.drafter import Drafter
from paradec.core.engine import decode
from paradec.core.sampling import Sampler
from paradec.drafters import eagle_head, medusa_heads

pytestmark = pytest.mark.usefixtures("one_thread")

V, H, WINDOW = 96, 64, 4
SHAPE = dict(vocab_size=V, hidden_size=H, intermediate_size=2 * H, num_hidden_layers=3, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False)


def _build(kind: str, seed: int, window: int | None = WINDOW):
    if kind == "mistral":  # every layer slides
        cls, cfg = MistralForCausalLM, MistralConfig(**SHAPE, sliding_window=window)
    else:  # layer 0 full, layers 1-2 slide: the model takes one mask per layer type
        cls, cfg = Qwen2ForCausalLM, Qwen2Config(**SHAPE, use_sliding_window=window is not None,
                                                   sliding_window=window, max_window_layers=1)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = cls(cfg).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(8.0)  # peakier: drafts are sometimes right, so paths get accepted
    return model


PROMPTS = [[(7 * i + 3) % V for i in range(13)], [5, 9, 11, 5, 9, 11, 5, 9, 11, 20, 21, 22, 5, 9]]
N = 24


def _tokens(model, drafter, prompt):
    return [t for s in decode(model, drafter, prompt, N, Sampler(), None) for t in s.tokens]


def _drafter(method, target, draft, folder):
    def heads():
        h = medusa_heads.MedusaHeads(H, 4, 1, 0, None)
        medusa_heads.save(h, folder / medusa_heads.OURS)
        return str(folder)

    def head(version):
        path = folder / f"eagle{version}"
        h = eagle_head.EagleHead(target.config, version, torch.arange(V) if version == 3 else None)
        eagle_head.save(h, path, target.config, {"test": True})
        return str(path)

    params = {  # built on demand: only this method's heads are written
        "sps": lambda: {"k": 3}, "pld": lambda: {"k": 4}, "jacobi": lambda: {"block": 4},
        "cllm": lambda: {"block": 4, "adapter": "unused"},  # its deltas only change the weights it runs on
        "lookahead": lambda: {"window": 3, "ngram": 3, "candidates": 3},
        "medusa": lambda: {"heads": heads(), "tree": ""}, "eagle": lambda: {"head": head(1), "tree": "cpu10"},
        "eagle2": lambda: {"head": head(1)}, "eagle3": lambda: {"head": head(3)},
        "early_exit": lambda: {"k": 3, "exit_layer": 1, "adapter": "none"},
        "mirror": lambda: {"k": 3, "parallel": False},
    }[method]()
    return methods.make_drafter(method, methods.parse_params(method, params), draft, target)


@pytest.fixture(scope="module", params=["mistral", "qwen2-mixed"])
def pair(request):
    return _build(request.param, 0), _build(request.param, 1)


def test_the_window_changes_what_ar_writes(pair):
    """Else the tests below could not tell a windowed mask from a full one."""
    target = pair[0]
    full = _build("mistral" if target.config.model_type == "mistral" else "qwen2", 0, window=None)
    assert any(_tokens(target, Drafter(), p) != _tokens(full, Drafter(), p) for p in PROMPTS)


@pytest.mark.parametrize("method", [m for m in catalog.METHODS if m != "ar"])
def test_every_method_equals_ar_past_the_window(pair, method, tmp_path):
    target, draft = pair
    for prompt in PROMPTS:
        got = _tokens(target, _drafter(method, target, draft, tmp_path), prompt)
        assert got == _tokens(target, Drafter(), prompt), (method, prompt)


def test_the_tree_mask_slides_by_position():
    """A two-sibling tree after 6 cached tokens, window 4: each node (position 7) sees positions 4..7
    of its own branch: the cached 4 and 5, the pending token (6) and itself, never its sibling."""
    pos = torch.tensor([6, 7, 7])
    seen = targets.slide(verify.allowed_mask([-1, -1], cached=6, uncached=1), pos, WINDOW).int().tolist()
    assert seen == [[0, 0, 0, 1, 1, 1, 1, 0, 0],
                    [0, 0, 0, 0, 1, 1, 1, 1, 0],
                    [0, 0, 0, 0, 1, 1, 1, 0, 1]]


def test_a_model_with_mixed_layers_gets_one_mask_per_kind():
    target = targets.HFTarget(_build("qwen2", 0))
    allowed = verify.allowed_mask([-1, -1], cached=6, uncached=1)
    masks = target._masks(allowed, positions=torch.tensor([6, 7, 7]))
    assert set(masks) == {"full_attention", "sliding_attention"}
    assert (masks["full_attention"] == 0).sum() > (masks["sliding_attention"] == 0).sum()
