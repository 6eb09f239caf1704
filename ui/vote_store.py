"""A class vote's state, in the server's memory only (ui.vote holds one store per server process; nothing is ever
written to a file): rooms, each opened by a presenter who alone holds its token, with the current question and
the votes on it. Everything is bounded: rooms, voters per room, the size of a question and of an answer, and a
room's life. A room's code is drawn with `secrets` from 32 letters and digits (no 0/O or 1/I): counting cannot
find one. No streamlit here: the tests drive it with a clock of their own."""
from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LEN = 6  # 32^6, about a billion codes
MAX_ROOMS = 64
MAX_VOTERS = 300  # per room (a lecture hall)
MAX_QUESTION = 16_000  # bytes of a question as JSON
MAX_CHOICES = 16
MAX_VOTER_ID = 64  # characters
TTL_S = 3 * 3600  # a room closes this long after its last use


class Refused(ValueError):
    """A request the store turns down; its message is a reason's name (ui.vote words it for the visitor)."""


class Unknown(Refused):
    """No open room has this code (never opened, closed, or expired)."""


@dataclass
class Room:
    token: str
    used: float
    question: dict | None = None  # {"id": ..., "question": ... or None}
    revealed: bool = False
    votes: dict[str, int] = field(default_factory=dict)  # voter -> choice


class Rooms:
    def __init__(self, clock: Callable[[], float] = time.monotonic, ttl_s: float = TTL_S, max_rooms: int = MAX_ROOMS,
                 max_voters: int = MAX_VOTERS):
        self.clock, self.ttl_s, self.max_rooms, self.max_voters = clock, ttl_s, max_rooms, max_voters
        self._rooms: dict[str, Room] = {}
        self._lock = threading.Lock()

    def _expire(self) -> None:
        now = self.clock()
        for code in [c for c, r in self._rooms.items() if now - r.used > self.ttl_s]:
            del self._rooms[code]

    def _room(self, code: str) -> Room:
        self._expire()
        room = self._rooms.get(normal(code))
        if room is None:
            raise Unknown("unknown")
        room.used = self.clock()
        return room

    def _owned(self, code: str, token: str) -> Room:
        room = self._room(code)
        if not secrets.compare_digest(room.token, token):
            raise Refused("not-presenter")
        return room

    def open(self) -> tuple[str, str]:
        """A new room: its code (for the students) and its token (the presenter's alone)."""
        with self._lock:
            self._expire()
            if len(self._rooms) >= self.max_rooms:
                raise Refused("too-many-rooms")
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LEN))
            while code in self._rooms:
                code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LEN))
            token = secrets.token_urlsafe(24)
            self._rooms[code] = Room(token, self.clock())
            return code, token

    def close(self, code: str, token: str) -> None:
        with self._lock:
            self._owned(code, token)
            del self._rooms[normal(code)]

    def publish(self, code: str, token: str, question: dict) -> None:
        """The question the students answer now ({"id", "question": a paradec.learn question or None}); a new id
        clears the votes and the reveal, the same id keeps them."""
        if len(json.dumps(question)) > MAX_QUESTION or len((question.get("question") or {}).get("choices", ())) > \
                MAX_CHOICES:
            raise Refused("too-large")
        with self._lock:
            room = self._owned(code, token)
            if room.question is None or room.question.get("id") != question.get("id"):
                room.question, room.revealed, room.votes = question, False, {}

    def reveal(self, code: str, token: str, question_id: str | None = None) -> None:
        """The answer shown to the room (only to the question question_id names, when given)."""
        with self._lock:
            room = self._owned(code, token)
            if room.question and question_id in (None, room.question.get("id")):
                room.revealed = True

    def vote(self, code: str, voter: str, choice: int, question_id: str) -> None:
        """A student's answer to the current question (a new answer replaces theirs until the reveal)."""
        if not isinstance(voter, str) or not 0 < len(voter) <= MAX_VOTER_ID:
            raise Refused("bad-voter")
        with self._lock:
            room = self._room(code)
            q = (room.question or {}).get("question")
            if q is None or room.question.get("id") != question_id:
                raise Refused("moved-on")
            if room.revealed:
                raise Refused("closed")
            if type(choice) is not int or not 0 <= choice < len(q["choices"]):
                raise Refused("bad-choice")
            if voter not in room.votes and len(room.votes) >= self.max_voters:
                raise Refused("full")
            room.votes[voter] = choice

    def view(self, code: str, voter: str | None = None) -> dict:
        """What a student or the presenter sees: the question, whether it is revealed, the count of each choice,
        and this voter's own choice."""
        with self._lock:
            room = self._room(code)
            q = (room.question or {}).get("question")
            counts = [0] * len(q["choices"]) if q else []
            for choice in room.votes.values():
                counts[choice] += 1
            return {"id": (room.question or {}).get("id"), "question": q, "revealed": room.revealed,
                    "counts": counts, "total": len(room.votes), "mine": room.votes.get(voter)}


def normal(code: str) -> str:
    """A typed code as the store keeps it: upper case, without spaces, at most a few characters."""
    return "".join(str(code).split()).upper()[: CODE_LEN + 4]
