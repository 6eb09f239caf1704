"""Each method's own part of a step record: a small frozen dataclass per method family, built once by
the drafter (or, for what a step learns after its verify pass, by its commit) and never changed after.

A record goes to JSON as a plain object of its fields and comes back through from_dict, which refuses
unknown fields, missing ones and values of the wrong type, read from the field's annotation: a trace
file is checked where it is read, not in a page. What a record means beyond its types (a rank per
node, a kept candidate per node) is checked in paradec.trace_check. Standard library only: the app
replays traces without torch. Which record a method writes is part of its description
(paradec.catalog: Method.record)."""
from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass, field, fields

DRAFT_LENGTH = ("k", "draft_length", "chance")  # what paradec.drafters.draft_length's rules record


@dataclass(frozen=True)
class Record:
    """No method-specific fields (AR, and a method that records nothing of its own)."""

    def to_dict(self) -> dict:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, d) -> Record:
        if not isinstance(d, dict):
            raise TypeError(f"{cls.__name__} should be an object")
        hints = typing.get_type_hints(cls)
        unknown = set(d) - set(hints)
        if unknown:
            raise TypeError(f"unknown field(s) {sorted(unknown)} in {cls.__name__}")
        return cls(**{k: _typed(v, hints[k], f"{cls.__name__}.{k}") for k, v in d.items()})

    def token_ids(self) -> set[int]:
        """Token ids the record names beyond the step's nodes (the trace keeps their text)."""
        return set()


@dataclass(frozen=True)
class Chain(Record):
    """A chain drafter's step (sps, early exit): its draft-length rule's k, what it drafted and, for a
    rule that compares one, the chance it estimated after each drafted token."""
    k: int = 0
    draft_length: int = 0
    chance: list[float] | None = None
    exit_layer: int | None = None  # early exit: where the draft leaves the target's layers


@dataclass(frozen=True)
class Pld(Record):
    """Prompt lookup: the n-gram matched and where its earlier occurrence starts (none: no match)."""
    ngram: list[int] = field(default_factory=list)
    match_at: int | None = None


@dataclass(frozen=True)
class Jacobi(Record):
    """One Jacobi iteration: the block of guesses verified, and which of them changed since the last."""
    block: list[int]
    changed: list[bool]


@dataclass(frozen=True)
class Lookahead(Record):
    """Lookahead: the window fed (levels: N-1 lists of W tokens; levels[0][0] is the pending token), the
    pool's candidate n-grams verified, each window cell's position offset and the cells it attends to,
    and (from commit) the n-grams the pass added to the pool."""
    levels: list[list[int]]
    candidates: list[list[int]] = field(default_factory=list)
    window_pos: list[int] = field(default_factory=list)
    window_sees: list[list[int]] = field(default_factory=list)
    added: list[list[int]] = field(default_factory=list)

    def token_ids(self) -> set[int]:
        return {t for rows in (self.levels, self.candidates, self.added) for row in rows for t in row}


@dataclass(frozen=True)
class Medusa(Record):
    """Medusa: the acceptance rule, each node's top-k rank in its head and head probability, every head's
    top-k, and the draft-length rule's record (k: the tree's depth)."""
    acceptance: str = "exact"
    rank: list[int] = field(default_factory=list)
    head_p: list[float] = field(default_factory=list)
    head_top: list[list[list[int | float]]] = field(default_factory=list)  # per head: [[token, prob], ...]
    k: int = 0
    draft_length: int = 0
    chance: list[float] | None = None

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

    @property
    def confidence(self) -> float:
        return math.exp(self.score)


@dataclass(frozen=True)
class Eagle(Record):
    """EAGLE: every candidate drafted (the kept ones are the step's nodes, in the same order), each kept
    node's q, and the draft-length rule's record."""
    drafted: list[Candidate] = field(default_factory=list)
    draft_q: list[float] = field(default_factory=list)
    k: int = 0
    draft_length: int = 0
    chance: list[float] | None = None

    def token_ids(self) -> set[int]:
        return {c.token for c in self.drafted}  # the cut ones too


@dataclass(frozen=True)
class Mirror(Record):
    """Parallel draft-and-verify: the chain's k and length, and (after the first step) the worker's
    round: its bets [j, b, chance, drafted?] best first, the real outcome (j, b), whether it was drafted,
    when the worker ran (ms on the run's clock) and how long propose() waited for it."""
    k: int = 0
    draft_length: int = 0
    hit: bool | None = None
    outcome: list[int] = field(default_factory=list)
    wait_ms: float = 0.0
    prefetch: list[float] | None = None
    bets: list[list[int | float | bool]] = field(default_factory=list)


def _plain(value):
    """A field's value as JSON: records and candidates as objects, lists as lists."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Candidate):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    return value


def _typed(value, hint, where: str):
    """value, checked against the annotation (int, float, bool, str, lists, unions, Candidate)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for a in (a for a in args if a is not type(None)):  # the first that fits: int | float keeps an int
            try:
                return _typed(value, a, where)
            except TypeError:
                pass
        raise TypeError(f"{where} should be {hint}, got {type(value).__name__}")
    if origin is list:
        if not isinstance(value, list):
            raise TypeError(f"{where} should be a list")
        return [_typed(v, args[0], where) for v in value]
    if hint is Candidate:
        if not isinstance(value, dict) or set(value) != {f.name for f in fields(Candidate)}:
            raise TypeError(f"{where}: a candidate has the fields {[f.name for f in fields(Candidate)]}")
        hints = typing.get_type_hints(Candidate)
        return Candidate(**{k: _typed(v, hints[k], where) for k, v in value.items()})
    if hint is float and type(value) in (int, float):
        return float(value)
    if type(value) is not hint:  # type(): True is not an int here
        raise TypeError(f"{where} should be {hint.__name__}, got {type(value).__name__}")
    return value
