"""A worker process spoken to in JSON lines over its stdin and stdout: one request, one reply.

Its replies are hostile (another library's native code answers): each is read up to a size and a deadline,
must be one JSON object without NaN or Infinity, and anything else (a crash, a hang, a flood, garbage) is a
PeerError of one line, after which the worker is killed. Standard library only."""
from __future__ import annotations

import collections
import json
import os
import select
import signal
import subprocess
import threading
import time

MAX_REPLY = 1 << 20  # bytes: a reply of 2,048 token ids and a few figures is ~20 kB
MAX_LINE = 300  # characters of an error line
STDERR_TAIL = 2048  # bytes of the worker's stderr kept, for the line that says why it died


class PeerError(Exception):
    """The worker failed: the message is one line for the user."""


def one_line(text: str) -> str:
    """text on one line of at most MAX_LINE characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= MAX_LINE else flat[: MAX_LINE - 3] + "..."


class Pipe:
    def __init__(self, command: list[str], name: str):
        self.name = name
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0)
        self._tail: collections.deque = collections.deque(maxlen=STDERR_TAIL)
        # drained all the time, so that a worker writing a lot to stderr never blocks on a full pipe
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read(4096), b""):
            self._tail.extend(chunk)

    def ask(self, request: dict, timeout_s: float) -> dict:
        """The worker's reply to request; PeerError (the worker killed) when it gives none in timeout_s,
        or one that is not a JSON object of at most MAX_REPLY bytes."""
        if select.select([self.proc.stdout], [], [], 0)[0]:  # words before a request: a crash's EOF, or out of step
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            raise self._failed(self._death() if not chunk else "answered without being asked")
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            raise self._failed("did not take the request") from None
        line = self._read_line(time.monotonic() + timeout_s, timeout_s)
        try:
            reply = json.loads(line, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise self._failed("answered with something that is not JSON") from None
        if not isinstance(reply, dict):
            raise self._failed("answered with JSON that is not an object")
        return reply

    def _read_line(self, deadline: float, timeout_s: float) -> bytes:
        out = self.proc.stdout
        got = bytearray()
        while b"\n" not in got:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._failed(f"gave no reply in {timeout_s:.0f} s")
            ready, _, _ = select.select([out], [], [], left)
            if not ready:
                continue
            chunk = os.read(out.fileno(), 65536)
            if not chunk:
                raise self._failed(self._death())
            got += chunk
            if len(got) > MAX_REPLY:
                raise self._failed(f"answered with more than {MAX_REPLY} bytes")
        line, _, rest = bytes(got).partition(b"\n")
        if rest:  # one request, one reply: more is a worker out of step with us
            raise self._failed("answered more than once")
        return line

    def _death(self) -> str:
        """Why the worker closed its stdout: the signal that killed it or its exit code, and its last words."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "closed its output"
        how = (f"died of {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals()
               else f"exited with code {code}")
        time.sleep(0.05)  # the drain thread's last chunk
        last = bytes(self._tail).decode(errors="replace").strip().splitlines()
        return f"{how}: {last[-1]}" if last else how

    def _failed(self, why: str) -> PeerError:
        if self.proc.poll() is None:  # hung, flooding or out of step: nothing more it says is trusted
            self.proc.kill()
            self.proc.wait()
        self.close()
        return PeerError(one_line(f"{self.name} {why}"))

    def close(self) -> None:
        """Ends the worker (its stdin closed first, so a well-behaved one leaves on its own)."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number")
