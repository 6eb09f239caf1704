"""What a trace must mean, beyond the JSON types paradec.trace checks: parents point backwards,
the accepted path is a path of accepted nodes, counts agree, probabilities are probabilities, the
method's own extras have the shape its page draws from, and the sizes stay where a page can draw
them (a 1,500-node step took a page 54 s and 2.6 GB). Every rule is one that some page relies on;
a file that breaks one is refused on load with a message naming the step. Standard library only."""
from __future__ import annotations

from .tree import MAX_NODES

MAX_STEPS = 2048  # paradec.run.MAX_NEW_TOKENS: every step commits at least one token
MAX_WINDOW = 256  # Lookahead's window tokens in one pass (32 columns x 7 levels at most)
MAX_TOP = 64  # (token, probability) pairs of one distribution (runs keep 10)
MAX_LIST = 4096  # entries of any other list in a step's extras (EAGLE-2's drafted candidates: 16 x 16 x 16)
MAX_PROMPT_IDS = 2**18
STATUSES = ("accepted", "rejected", "unreached")  # a drafted node's fate
ORIGINS = ("accepted", "resampled", "bonus", "target")  # how a committed token came to be (the stream's colours)
INT_PARAMS = {"k", "block", "window", "ngram", "candidates", "depth", "top_k", "total_tokens", "bets",
              "exit_layer", "ngram_max", "ngram_min"}  # pages compute with these
NEEDS = {"jacobi": ("block", "changed"), "cllm": ("block", "changed"), "lookahead": ("levels",)}


def check(trace) -> None:
    """ValueError with a one-line message when the trace breaks a rule; None when it keeps them."""
    _whole(trace)
    sampled = trace.sampling.get("temperature", 0) > 0
    for i, s in enumerate(trace.steps):
        try:
            _step(s, sampled)
            _extras(trace.method, s)
        except ValueError as e:
            raise ValueError(f"step {i}: {e}") from None


def check_text(data) -> None:
    """Every string (and key) must be text: JSON lets a lone surrogate through, which no page can send."""
    todo = [data]
    while todo:
        value = todo.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"a string holds a lone surrogate ({value[:20]!r}), not text") from None
        elif isinstance(value, dict):
            todo.extend(value)
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)


def _num(x) -> bool:
    return type(x) in (int, float)


def _ids(xs, what: str, most: int = MAX_LIST) -> None:
    if not isinstance(xs, list) or len(xs) > most or not all(type(t) is int and t >= 0 for t in xs):
        raise ValueError(f"{what} must be a list of at most {most} token ids")


def _prob(x, what: str, optional: bool = True) -> None:
    if (x is None and optional) or (_num(x) and 0 <= x <= 1):
        return
    raise ValueError(f"{what} must be a probability between 0 and 1, got {x!r}")


def _tops(pairs, what: str) -> None:
    if pairs is None:
        return
    if not isinstance(pairs, list) or len(pairs) > MAX_TOP:
        raise ValueError(f"{what} must be a list of at most {MAX_TOP} [token, probability] pairs")
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2 and type(pair[0]) is int and pair[0] >= 0):
            raise ValueError(f"{what} must hold [token, probability] pairs, got {str(pair)[:40]}")
        _prob(pair[1], what, optional=False)


def _whole(trace) -> None:
    if len(trace.steps) > MAX_STEPS:
        raise ValueError(f"{len(trace.steps)} steps, more than a page replays ({MAX_STEPS})")
    if not trace.prompt_ids:
        raise ValueError("the prompt has no token ids")
    _ids(trace.prompt_ids, "prompt_ids", MAX_PROMPT_IDS)
    if trace.max_new_tokens < 0 or trace.wall_s < 0:
        raise ValueError("max_new_tokens and wall_s must not be negative")
    types = {"temperature": _num, "top_p": _num, "top_k": lambda v: type(v) is int, "seed": lambda v: type(v) is int}
    for name, ok in types.items():
        if name in trace.sampling and not ok(trace.sampling[name]):
            raise ValueError(f"sampling {name} must be a number, got {trace.sampling[name]!r}")
    if trace.sampling.get("temperature", 0) < 0:
        raise ValueError("sampling temperature must not be negative")
    for name, value in trace.params.items():
        if name in INT_PARAMS and type(value) is not int:
            raise ValueError(f"parameter {name} must be an integer, got {value!r}")
    for key, text in trace.token_text.items():
        if not (key.isascii() and key.isdigit() and isinstance(text, str)):
            raise ValueError(f"token_text maps token ids (digits) to text, got {key[:20]!r}: {str(text)[:20]!r}")


def _step(s, sampled: bool) -> None:
    if len(s.nodes) > MAX_NODES:
        raise ValueError(f"{len(s.nodes)} draft nodes, more than a page draws ({MAX_NODES})")
    for j, n in enumerate(s.nodes):
        _node(s.nodes, j, n, sampled)
    _path(s)
    _ids(s.tokens, "tokens")
    if not 1 <= len(s.tokens) <= len(s.accepted) + 1 or len(s.origins) != len(s.tokens):
        raise ValueError("a step commits its accepted drafts, then at most one token, each with an origin")
    for k, (token, origin) in enumerate(zip(s.tokens, s.origins)):
        if (origin == "accepted") != (k < len(s.accepted)) or origin not in ORIGINS:
            raise ValueError(f"origin {origin!r} of committed token {k} does not fit {len(s.accepted)} accepted nodes")
        if k < len(s.accepted) and token != s.nodes[s.accepted[k]].token:
            raise ValueError(f"committed token {k} is not the accepted node's token")
    _tops(s.last_p_top, "last_p_top")
    _tops(s.residual_top, "residual_top")
    counts = (s.index, s.context_len, s.target_forwards, s.draft_forwards, s.verified)
    if min(counts) < 0 or min(s.draft_ms, s.verify_ms, s.start_ms) < 0:
        raise ValueError("counts and times must not be negative")


def _node(nodes, j: int, n, sampled: bool) -> None:
    if not -1 <= n.parent < j:
        raise ValueError(f"node {j} has parent {n.parent}: parents come before their children")
    if n.depth != (1 if n.parent < 0 else nodes[n.parent].depth + 1):
        raise ValueError(f"node {j} has depth {n.depth}, its parent's depth + 1 is expected")
    if n.token < 0:
        raise ValueError(f"node {j} has token id {n.token}")
    if n.status not in STATUSES:
        raise ValueError(f"node {j} has status {n.status!r} (one of {', '.join(STATUSES)})")
    for name in ("accept_prob", "u"):
        _prob(getattr(n, name), f"node {j}'s {name}")
    if (n.accept_prob is None) != (n.u is None):
        raise ValueError(f"node {j} has one of accept_prob and u without the other")
    drawn = n.status != "unreached" and n.accept_prob is not None  # tested by rejection sampling: p/q was used
    _prob(n.p, f"node {j}'s p", optional=not drawn)
    _prob(n.q, f"node {j}'s q", optional=not drawn)
    _tops(n.p_top, f"node {j}'s p_top")
    _tops(n.q_top, f"node {j}'s q_top")


def _path(s) -> None:
    """The accepted path: node indices in range, root first, each the child of the one before."""
    if any(type(a) is not int or not 0 <= a < len(s.nodes) for a in s.accepted):
        raise ValueError("an accepted node index is out of range")
    if any(s.nodes[a].parent != (s.accepted[k - 1] if k else -1) for k, a in enumerate(s.accepted)):
        raise ValueError("the accepted nodes are not a path from the root")
    if sorted(s.accepted) != [j for j, n in enumerate(s.nodes) if n.status == "accepted"]:
        raise ValueError("the accepted path and the nodes marked accepted differ")


def _extras(method: str, s) -> None:
    e = s.extras
    for key in NEEDS.get(method, ()):
        if key not in e:
            raise ValueError(f"a {method} step needs extras {key!r}")
    for key, value in e.items():
        if isinstance(value, list) and len(value) > MAX_LIST:
            raise ValueError(f"extras {key!r} has {len(value)} entries, more than {MAX_LIST}")
        rule = EXTRAS.get(key)
        if rule and not rule(value, s):
            raise ValueError(f"extras {key!r} does not have the shape its page draws from")
    if method == "medusa" and s.nodes and "rank" not in e:
        raise ValueError("a medusa step with nodes needs extras 'rank'")
    if "hit" in e and "wait_ms" not in e:
        raise ValueError("extras 'hit' comes with 'wait_ms'")
    if "levels" in e:
        _window(s)


def _window(s) -> None:
    """Lookahead: the window's cells, their positions and attention rows agree, and every row
    sees only the pass's own tokens."""
    e = s.extras
    cells = sum(len(level) for level in e["levels"]) - 1  # levels[0][0] is the pending token itself
    pos, sees = e.get("window_pos", []), e.get("window_sees", [])
    if cells > MAX_WINDOW or len(pos) != cells or len(sees) != cells:
        raise ValueError(f"the window has {cells} cells (at most {MAX_WINDOW}), each with a position and a mask row")
    rows = 1 + len(s.nodes) + cells
    if any(not 0 <= k < rows for row in sees for k in row):
        raise ValueError("a window row sees a token outside the verify pass")


def _ints(v, least: int = 0) -> bool:
    return isinstance(v, list) and all(type(x) is int and x >= least for x in v)


def _nums(v) -> bool:
    return isinstance(v, list) and all(_num(x) for x in v)


def _candidate(c, j: int) -> bool:
    """EAGLE's drafted candidate: [token, parent, depth, log-score, rank, expanded, kept]."""
    return (isinstance(c, list) and len(c) == 7 and all(type(x) is int for x in c[:3] + c[4:5])
            and -1 <= c[1] < j and c[2] >= 1 and _num(c[3]) and c[3] <= 0 and all(type(x) is bool for x in c[5:]))


EXTRAS = {  # key -> does the value have the shape the pages draw from (given the step)
    "block": lambda v, s: _ints(v) and 0 < len(v) <= MAX_NODES,
    "changed": lambda v, s: isinstance(v, list) and all(type(x) is bool for x in v)
    and len(v) == len(s.extras.get("block", [])),
    "levels": lambda v, s: isinstance(v, list) and bool(v) and all(_ints(lv) for lv in v) and bool(v[0]),
    "window_pos": lambda v, s: _ints(v),
    "window_sees": lambda v, s: isinstance(v, list) and all(_ints(row) for row in v),
    "added": lambda v, s: isinstance(v, list) and all(_ints(g) and len(g) >= 2 for g in v),
    "candidates": lambda v, s: isinstance(v, list) and all(_ints(c) for c in v),
    "rank": lambda v, s: _ints(v) and len(v) == len(s.nodes),
    "head_p": lambda v, s: _nums(v),
    "head_top": lambda v, s: isinstance(v, list) and all(isinstance(row, list) for row in v)
    and all(_tops(row, "head_top") is None for row in v),
    "drafted": lambda v, s: isinstance(v, list) and all(_candidate(c, j) for j, c in enumerate(v))
    and sum(c[6] for c in v) == len(s.nodes),
    "draft_q": lambda v, s: _nums(v), "chance": lambda v, s: _nums(v),
    "draft_length": lambda v, s: type(v) is int and v >= 0, "k": lambda v, s: type(v) is int and v >= 0,
    "acceptance": lambda v, s: isinstance(v, str),
    "hit": lambda v, s: type(v) is bool, "wait_ms": lambda v, s: _num(v) and v >= 0,
    "prefetch": lambda v, s: _nums(v) and len(v) == 2,
    "ngram": lambda v, s: _ints(v), "outcome": lambda v, s: _ints(v),
}
