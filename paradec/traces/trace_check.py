"""What a trace must mean, beyond the JSON types paradec.traces.trace checks: parents point backwards,
the accepted path is a path of accepted nodes, counts agree, probabilities are probabilities, the
method's own record has the shape its page draws from (each record class checks its own:
paradec.core.records), and the sizes stay where a page can draw them (a 1,500-node step took a page 54 s
and 2.6 GB). Every rule is one that some page relies on; a file that breaks one is refused on load
with a message naming the step. Standard library only."""
from __future__ import annotations

from ..core.limits import MAX_LIST, number, prob, tops
from ..core.tree import MAX_NODES

MAX_STEPS = 2048  # paradec.run.MAX_NEW_TOKENS: every step commits at least one token
MAX_PROMPT_IDS = 2**18
STATUSES = ("accepted", "rejected", "unreached")  # a drafted node's fate
ORIGINS = ("accepted", "resampled", "bonus", "target")  # how a committed token came to be (the stream's colours)
# What one page draws of a trace (the whole of it, however the player is scrubbed): the player precomputes a tree,
# a mask and the token stream so far for every step, so a page's cost grows with the mask cells (rows of the verify
# pass squared, about 8 us of CPU and 0.6 KB each) and with the committed tokens times the steps. Measured on the
# sps page: 80 steps of a 256-node chain took 111 s and 4 GB; at these limits the worst trace takes under 5 s and
# 1 GB. A longer trace is cut to its first steps within both (ui.sources.import_trace says so).
MAX_MASK_CELLS = 400_000  # summed over the steps: six 256-node steps, or 34 of Medusa's 63-node tree (137k)
MAX_TOKENS = MAX_STEPS + MAX_NODES  # committed tokens: a run stops within one step of MAX_STEPS new tokens
INT_PARAMS = {"k", "block", "window", "ngram", "candidates", "depth", "top_k", "total_tokens", "bets",
              "exit_layer", "ngram_max", "ngram_min"}  # pages compute with these


def check(trace) -> None:
    """ValueError with a one-line message when the trace breaks a rule; None when it keeps them."""
    _whole(trace)
    sampled = trace.sampling.get("temperature", 0) > 0
    for i, s in enumerate(trace.steps):
        try:
            _step(s, sampled)
            if s.record is not None:
                s.record.check(s)
        except ValueError as e:
            raise ValueError(f"step {i}: {e}") from None


def mask_cells(s) -> int:
    """The cells of a step's attention mask as drawn: a row per verified token (the pending one, each node, each
    window token of Lookahead) by a column per token and the context band."""
    rows = 1 + len(s.nodes) + len(getattr(s.record, "window_pos", ()))
    return rows * (rows + 1)


def drawable(trace) -> int:
    """How many of the trace's first steps a page draws within MAX_MASK_CELLS and MAX_TOKENS (at least one: a
    step the rules above let through is far within both)."""
    cells = tokens = 0
    for i, s in enumerate(trace.steps):
        cells, tokens = cells + mask_cells(s), tokens + len(s.tokens)
        if i and (cells > MAX_MASK_CELLS or tokens > MAX_TOKENS):
            return i
    return len(trace.steps)


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


def _ids(xs, what: str, most: int = MAX_LIST) -> None:
    if not isinstance(xs, list) or len(xs) > most or not all(type(t) is int and t >= 0 for t in xs):
        raise ValueError(f"{what} must be a list of at most {most} token ids")


def _whole(trace) -> None:
    if len(trace.steps) > MAX_STEPS:
        raise ValueError(f"{len(trace.steps)} steps, more than a page replays ({MAX_STEPS})")
    if not trace.prompt_ids:
        raise ValueError("the prompt has no token ids")
    _ids(trace.prompt_ids, "prompt_ids", MAX_PROMPT_IDS)
    if trace.max_new_tokens < 0 or trace.wall_s < 0:
        raise ValueError("max_new_tokens and wall_s must not be negative")
    integer = lambda v: type(v) is int  # noqa: E731
    types = {"temperature": number, "top_p": number, "top_k": integer, "seed": integer}
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
    tops(s.last_p_top, "last_p_top")
    tops(s.residual_top, "residual_top")
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
        prob(getattr(n, name), f"node {j}'s {name}")
    if (n.accept_prob is None) != (n.u is None):
        raise ValueError(f"node {j} has one of accept_prob and u without the other")
    drawn = n.status != "unreached" and n.accept_prob is not None  # tested by rejection sampling: p/q was used
    prob(n.p, f"node {j}'s p", optional=not drawn)
    prob(n.q, f"node {j}'s q", optional=not drawn)
    tops(n.p_top, f"node {j}'s p_top")
    tops(n.q_top, f"node {j}'s q_top")


def _path(s) -> None:
    """The accepted path: node indices in range, root first, each the child of the one before."""
    if any(type(a) is not int or not 0 <= a < len(s.nodes) for a in s.accepted):
        raise ValueError("an accepted node index is out of range")
    if any(s.nodes[a].parent != (s.accepted[k - 1] if k else -1) for k, a in enumerate(s.accepted)):
        raise ValueError("the accepted nodes are not a path from the root")
    if sorted(s.accepted) != [j for j, n in enumerate(s.nodes) if n.status == "accepted"]:
        raise ValueError("the accepted path and the nodes marked accepted differ")
