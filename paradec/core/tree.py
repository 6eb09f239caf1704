"""Draft trees as parent lists, in plain Python (the UI draws from the same functions).

A draft is a list of nodes; parents[i] is the index of node i's parent, or -1 when the
node hangs off the pending token (the last committed token, which the verify pass
feeds first). A chain is the tree parents = [-1, 0, 1, ...].
"""
from __future__ import annotations

import json


def depths(parents: list[int]) -> list[int]:
    """Depth of each node: 1 for children of the pending token. Parents come before children."""
    out: list[int] = []
    for i, par in enumerate(parents):
        if par >= i:
            raise ValueError(f"node {i} has parent {par}: parents must come before their children")
        out.append(1 if par < 0 else out[par] + 1)
    return out


def children(parents: list[int]) -> dict[int, list[int]]:
    """Node index -> its children in draft order; key -1 is the pending token."""
    kids: dict[int, list[int]] = {-1: []}
    for i, par in enumerate(parents):
        kids.setdefault(i, [])
        kids[par].append(i)
    return kids


def ancestors(parents: list[int], i: int) -> list[int]:
    """Root-first path of node indices that ends at node i."""
    path = []
    while i >= 0:
        path.append(i)
        i = parents[i]
    return path[::-1]


def graft(tokens: list[int], parents: list[int], chain: list[int]) -> tuple[list[int], list[int], list[int]]:
    """Merge a chain of tokens into a tree from the pending token down: it follows the tree's nodes while their
    tokens agree and the rest hangs off the last one met, after the tree's nodes (parents stay before
    children). -> (tokens, parents, the chain's node indices, root first)."""
    tokens, parents, kids, path = list(tokens), list(parents), children(parents), []
    for token in chain:
        parent = path[-1] if path else -1
        at = next((c for c in kids.get(parent, []) if tokens[c] == token), None)
        if at is None:  # off the tree: a new node (it has no children, so the chain's rest is new too)
            tokens.append(token)
            parents.append(parent)
            at = len(tokens) - 1
        path.append(at)
    return tokens, parents, path


def chain_parents(n: int) -> list[int]:
    """A chain as a tree: node i hangs off node i - 1, the first off the pending token."""
    return list(range(-1, n - 1))


def is_chain(parents: list[int]) -> bool:
    return all(par == i - 1 for i, par in enumerate(parents))


def is_path(parents: list[int], path: list[int]) -> bool:
    """Whether path is a root-first path of the tree (what an accepted path must be)."""
    return all(parents[n] == (path[k - 1] if k else -1) for k, n in enumerate(path))


def mask_rows(parents: list[int], window_sees: list[list[int]] = ()) -> list[list[bool]]:
    """The draft block of the attention mask: row i may attend to column k. Row 0 is the
    pending token, row j+1 node j, then the window tokens (Lookahead), each seeing the
    block indices it lists. Every row also sees the whole committed context."""
    n = len(parents) + 1 + len(window_sees)
    rows = [[False] * n for _ in range(n)]
    rows[0][0] = True
    for i in range(len(parents)):
        rows[i + 1][0] = True
        for a in ancestors(parents, i):
            rows[i + 1][a + 1] = True
    for w, sees in enumerate(window_sees):
        for k in sees:
            rows[len(parents) + 1 + w][k] = True
    return rows


# The one cap on a draft tree given by the user (Medusa's and EAGLE-1's JSON trees, EAGLE-2's
# total_tokens): every node is a row of the verify pass and of its attention mask, and
# Medusa's largest tree for 7B GPUs has 63 nodes.
MAX_NODES = 256


def tree_spec(spec: str, presets: dict[str, list[list[int]]]) -> list[list[int]]:
    """A preset's name or JSON rank paths -> the paths; ValueError with a one-line message."""
    if spec in presets:
        return presets[spec]
    try:
        return parse_paths(spec)
    except ValueError as e:
        raise ValueError(f"tree must be one of {', '.join(presets)} or JSON rank paths ({e})") from None


def parse_paths(spec: str) -> list[list[int]]:
    """A tree typed as JSON rank paths ("[[0], [0, 0], [1]]") -> the paths; ValueError with a
    one-line message for anything else, a tree over MAX_NODES nodes included."""
    try:
        paths = json.loads(spec)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested past the stack
        paths = None
    if not isinstance(paths, list) or not paths or not all(isinstance(p, list) for p in paths):
        raise ValueError("a tree is a JSON list of rank paths like [[0], [0, 0], [1]]")
    paths_to_tree(paths)
    return paths


def paths_to_tree(paths: list[list[int]]) -> tuple[list[tuple[int, ...]], list[int]]:
    """A Medusa tree given as paths (`medusa_choices`: each path lists a top-k rank per head,
    e.g. [0, 1] = head 1's top token, then head 2's second) -> (node paths, parents).

    Prefixes are implied ([0, 1] brings [0]); nodes come in Medusa's order, shorter paths
    first, then by rank, so parents come before children."""
    nodes: set[tuple[int, ...]] = set()
    for path in paths:
        if not path or len(path) > MAX_NODES or any(type(r) is not int or r < 0 for r in path):  # true is not 1
            raise ValueError(f"a tree path is a non-empty list of ranks >= 0, got {str(path)[:40]}")
        nodes.update(tuple(path[:d]) for d in range(1, len(path) + 1))
        if len(nodes) > MAX_NODES:
            raise ValueError(f"the tree has more than {MAX_NODES} nodes")
    order = sorted(nodes, key=lambda p: (len(p), p))
    index = {p: i for i, p in enumerate(order)}
    return order, [index[p[:-1]] if len(p) > 1 else -1 for p in order]


# Preset Medusa trees (medusa_choices). On a 2-core CPU a verify pass costs about one token's pass up to a few
# tokens and grows after that (on a Zen 3: 1.0x / 1.05x / 1.4x for 4 / 8 / 16 tokens, assets/traces/forward_cost.json),
# so the CPU presets stay at a dozen nodes or fewer; mc_sim_7b_63 is Medusa's own 63-node tree for GPUs.
MEDUSA_TREES = {
    "chain4": [[0], [0, 0], [0, 0, 0], [0, 0, 0, 0]],
    "small8": [[0], [1], [0, 0], [1, 0], [0, 1], [0, 0, 0], [0, 0, 0, 0], [2]],
    "cpu12": [[0], [1], [2], [0, 0], [1, 0], [0, 1], [2, 0], [0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 0, 0], [0, 0, 1]],
    "wide16": [[0], [1], [2], [3], [0, 0], [1, 0], [0, 1], [2, 0], [0, 2], [1, 1], [0, 0, 0], [1, 0, 0],
               [0, 1, 0], [0, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]],
    "mc_sim_7b_63": [[0], [0, 0], [1], [0, 1], [2], [0, 0, 0], [1, 0], [0, 2], [3], [0, 3], [4], [0, 4], [2, 0],
                     [0, 5], [0, 0, 1], [5], [0, 6], [6], [0, 7], [0, 1, 0], [1, 1], [7], [0, 8], [0, 0, 2], [3, 0],
                     [0, 9], [8], [9], [1, 0, 0], [0, 2, 0], [1, 2], [0, 0, 3], [4, 0], [2, 1], [0, 0, 4], [0, 0, 5],
                     [0, 0, 0, 0], [0, 1, 1], [0, 0, 6], [0, 3, 0], [5, 0], [1, 3], [0, 0, 7], [0, 0, 8], [0, 0, 9],
                     [6, 0], [0, 4, 0], [1, 4], [7, 0], [0, 1, 2], [2, 0, 0], [3, 1], [2, 2], [8, 0], [0, 5, 0],
                     [1, 5], [1, 0, 1], [0, 2, 1], [9, 0], [0, 6, 0], [0, 0, 0, 1], [1, 6], [0, 7, 0]],
}
