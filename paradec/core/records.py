"""Each method's own part of a step record: a small frozen dataclass, built once by the drafter (and, for
what a step learns in its verify pass, completed as a copy by Drafter.record) and never changed after.

A record goes to JSON as a plain object of its fields (dataclasses.asdict) and comes back through
from_dict, which refuses unknown fields, missing ones and values of the wrong type, read from the
field's annotation; check(step) then refuses what a page could not draw (the sizes, a rank per node, a
kept candidate per node), with a one-line message. Which record a method writes is part of its
description (paradec.catalog: Method.record). Schema 1 kept these fields in an untyped "extras" dict:
upgrade() reads it. Standard library only: the app replays traces without torch."""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields

from . import typed_json
from .limits import MAX_LIST, MAX_WINDOW, tops
from .tree import MAX_NODES, is_path


@dataclass(frozen=True)
class Record:
    """The base: no fields of its own."""

    @classmethod
    def from_dict(cls, d) -> Record:
        """From a trace file: every field present and of its annotated type (paradec.core.typed_json)."""
        return typed_json.build(cls, d, f"{cls.__name__} record", required={f.name for f in fields(cls)})

    @classmethod
    def upgrade(cls, extras: dict, nodes: int) -> dict:
        """Schema 1's extras, of a step with this many nodes, as this record's fields: what it left out
        takes the field's default."""
        defaults = {f.name: f.default if f.default is not MISSING else f.default_factory()
                    for f in fields(cls) if (f.default, f.default_factory) != (MISSING, MISSING)}
        return {**defaults, **extras}

    def check(self, step) -> None:
        """ValueError (one line) when a page could not draw this record with the step's nodes."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, list) and len(value) > MAX_LIST:
                raise ValueError(f"record field {f.name!r} has {len(value)} entries, more than {MAX_LIST}")

    def token_ids(self) -> set[int]:
        """Token ids the record names beyond the step's nodes (the trace keeps their text)."""
        return set()


@dataclass(frozen=True)
class DraftLength(Record):
    """What a draft-length rule records (paradec.drafters.draft_length): its k, what the step drafted,
    and, for a rule that compares one with its threshold, the chance after each drafted token. sps's
    record, and the part every method with a rule shares."""
    k: int = 0
    draft_length: int = 0
    chance: list[float] | None = None

    @classmethod
    def upgrade(cls, extras: dict, nodes: int) -> dict:
        """The oldest traces did not record the draft length: the nodes drafted are that length."""
        return super().upgrade({"draft_length": nodes, **extras}, nodes)

    def check(self, step) -> None:
        super().check(step)
        if self.k < 0 or self.draft_length < 0:
            raise ValueError("record fields 'k' and 'draft_length' must not be negative")


@dataclass(frozen=True)
class EarlyExit(DraftLength):
    exit_layer: int = 0  # where the draft leaves the target's layers


@dataclass(frozen=True)
class Pld(Record):
    """Prompt lookup: the n-gram matched and where its earlier occurrence starts (None: no match)."""
    ngram: list[int] = field(default_factory=list)
    match_at: int | None = None

    def check(self, step) -> None:
        super().check(step)
        _ids(self.ngram, "ngram")


@dataclass(frozen=True)
class Jacobi(Record):
    """One Jacobi iteration (jacobi, cllm): the block of guesses verified, and which changed since the last."""
    block: list[int]
    changed: list[bool]

    def check(self, step) -> None:
        super().check(step)
        _ids(self.block, "block")
        if not 0 < len(self.block) <= MAX_NODES or len(self.changed) != len(self.block):
            raise ValueError(f"a block holds 1 to {MAX_NODES} guesses, each with a 'changed' flag")


@dataclass(frozen=True)
class Lookahead(Record):
    """Lookahead: the window fed (levels: N-1 lists of W tokens; levels[0][0] is the pending token), the
    pool's candidate n-grams verified, each window cell's position offset and the block indices it
    attends to, and the n-grams the pass added to the pool (one per column)."""
    levels: list[list[int]]
    candidates: list[list[int]] = field(default_factory=list)
    window_pos: list[int] = field(default_factory=list)
    window_sees: list[list[int]] = field(default_factory=list)
    added: list[list[int]] = field(default_factory=list)

    def check(self, step) -> None:
        super().check(step)
        if not self.levels or not self.levels[0]:
            raise ValueError("record field 'levels' needs a first level (the pending token's)")
        for name in ("levels", "candidates", "window_sees", "added"):
            for row in getattr(self, name):
                _ids(row, name)
        _ids(self.window_pos, "window_pos")
        if any(len(gram) < 2 for gram in self.added):
            raise ValueError("record field 'added' holds n-grams of at least two tokens")
        cells = sum(len(level) for level in self.levels) - 1  # levels[0][0] is the pending token itself
        if cells > MAX_WINDOW or len(self.window_pos) != cells or len(self.window_sees) != cells:
            raise ValueError(f"the window has {cells} cells (at most {MAX_WINDOW}), each with a position and a "
                             "mask row")
        rows = 1 + len(step.nodes) + cells
        if any(not 0 <= k < rows for row in self.window_sees for k in row):
            raise ValueError("a window row sees a token outside the verify pass")


@dataclass(frozen=True)
class Medusa(DraftLength):
    """Medusa (k: the tree's depth): the acceptance rule, each node's top-k rank in its head and head
    probability, every head's top-k as [token, probability] pairs and, under typical acceptance, each
    node's threshold on p (None: not tested)."""
    acceptance: str = "exact"
    rank: list[int] = field(default_factory=list)
    head_p: list[float] = field(default_factory=list)
    head_top: list[list[list[int | float]]] = field(default_factory=list)
    threshold: list[float | None] | None = None

    def check(self, step) -> None:
        super().check(step)
        _ids(self.rank, "rank")
        if len(self.rank) != len(step.nodes):
            raise ValueError(f"record field 'rank' needs one rank per node ({len(step.nodes)})")
        for row in self.head_top:
            tops(row, "head_top")

    def token_ids(self) -> set[int]:
        return {int(t) for row in self.head_top for t, _ in row}


@dataclass(frozen=True)
class Candidate:
    """A candidate EAGLE's head drafted, parents before children."""
    token: int
    parent: int  # the parent candidate's index (-1: the pending token)
    depth: int
    score: float  # cumulative draft log-probability along its path
    rank: int  # among its parent's children
    expanded: bool  # fed back to the head for children
    kept: bool  # kept by the rerank: a node of the verified tree


@dataclass(frozen=True)
class Eagle(DraftLength):
    """EAGLE-1/2/3 (k: the depths grown): every candidate drafted (None: not recorded; the kept ones are
    the step's first nodes, in order), each node's q, and the step's nodes on the prompt-lookup branch,
    root first (the nodes after the kept candidates are that branch's own: copied, q = 1)."""
    drafted: list[Candidate] | None = None
    draft_q: list[float] = field(default_factory=list)
    looked_up: list[int] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d) -> Record:
        """Traces recorded before prompt lookup joined the tree have no looked_up: none."""
        return super().from_dict({"looked_up": [], **d} if isinstance(d, dict) else d)

    @classmethod
    def upgrade(cls, extras: dict, nodes: int) -> dict:
        """Schema 1 wrote each candidate as [token, parent, depth, score, rank, expanded, kept]."""
        out = super().upgrade(extras, nodes)
        if isinstance(out["drafted"], list):
            names = [f.name for f in fields(Candidate)]
            if not all(isinstance(c, list) and len(c) == len(names) for c in out["drafted"]):
                raise TypeError(f"a drafted candidate should be the list {names}")
            out["drafted"] = [dict(zip(names, c)) for c in out["drafted"]]
        return out

    def check(self, step) -> None:
        super().check(step)
        for j, c in enumerate(self.drafted or ()):
            if not (-1 <= c.parent < j and c.depth >= 1 and c.score <= 0):
                raise ValueError(f"drafted candidate {j} has parent {c.parent}, depth {c.depth}, score {c.score}")
        kept = sum(c.kept for c in self.drafted or ())
        copied_only = set(range(kept, len(step.nodes)))  # nodes after the kept candidates: the copy's own
        if self.drafted is not None and (kept > len(step.nodes) or not copied_only <= set(self.looked_up)):
            raise ValueError(f"the kept candidates are the step's first nodes, and the rest of its {len(step.nodes)} "
                             "nodes are on the prompt-lookup branch")
        parents = [n.parent for n in step.nodes]
        if any(not 0 <= i < len(parents) for i in self.looked_up) or not is_path(parents, self.looked_up):
            raise ValueError("record field 'looked_up' must be a root-first path of the step's tree")

    def token_ids(self) -> set[int]:
        return {c.token for c in self.drafted or ()}  # the cut ones too


@dataclass(frozen=True)
class Mirror(DraftLength):
    """Parallel draft-and-verify: after the first step, the worker's round: whether the real outcome was
    drafted (None: no round ran), the outcome (j, b), when the worker ran (ms on the run's clock), how
    long propose() waited for it, and its bets [j, b, chance, drafted?] best first."""
    hit: bool | None = None
    outcome: list[int] = field(default_factory=list)
    wait_ms: float = 0.0
    prefetch: list[float] | None = None
    bets: list[list[int | float | bool]] = field(default_factory=list)

    @classmethod
    def upgrade(cls, extras: dict, nodes: int) -> dict:
        if "hit" in extras and "wait_ms" not in extras:
            raise ValueError("extras 'hit' comes with 'wait_ms'")
        return super().upgrade(extras, nodes)

    def check(self, step) -> None:
        super().check(step)
        _ids(self.outcome, "outcome")
        if self.wait_ms < 0 or (self.prefetch is not None and len(self.prefetch) != 2):
            raise ValueError("record field 'wait_ms' must not be negative, 'prefetch' is [start, end]")


def load(cls: type[Record] | None, value, method: str) -> Record | None:
    """A step's "record" from a trace file, for a method whose description names cls (None: none)."""
    if cls is None:
        if value is not None:
            raise TypeError(f"a {method} step records nothing of its own, got {str(value)[:40]}")
        return None
    return cls.from_dict(value)


def upgrade_step(step, cls: type[Record] | None) -> dict:
    """A schema-1 step (its method's fields in an untyped "extras" dict) as schema 2's, whose "record"
    is of class cls (None: the method records nothing of its own)."""
    if not isinstance(step, dict) or not isinstance(step.get("extras", {}), dict):
        raise TypeError("a schema-1 step should be a JSON object with an object 'extras'")
    step = dict(step)
    extras, nodes = step.pop("extras", {}), step.get("nodes", [])
    step["record"] = cls.upgrade(extras, len(nodes) if isinstance(nodes, list) else 0) if cls else extras or None
    return step


def _ids(xs: list[int], name: str) -> None:
    if any(t < 0 for t in xs):
        raise ValueError(f"record field {name!r} holds a negative token id or index")
