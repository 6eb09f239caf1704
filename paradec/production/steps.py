"""An engine's per-step arrays as a coarse paradec trace: per verify step, the chain of drafts it
checked and how many it accepted, with no tree and no per-token p or q (the engine reports neither).

The engine reports counts, not tokens, so the trace's token ids number positions in the sequence
(the prompt's 0..P-1, then the output's); a draft that was not committed gets the id of the position
it was drafted for, and no id has text. The first output token comes from the prefill forward, which
drafts nothing and is not a step of the arrays; it is left out, so the trace's τ is the engine's mean
acceptance length, 1 + accepted / steps. A last step that ran past the token budget is cut where the
output ends, as paradec cuts its own (what was accepted beyond it counts as unreached)."""
from __future__ import annotations

from ..core.steps import Node, Step
from ..traces.trace import Trace
from ..traces.trace_check import MAX_STEPS
from .config import Peer

PLACEHOLDER_IDS = "positions in the sequence, not vocabulary ids: the engine reports counts, not tokens"


def _step(index: int, context: int, accepted: int, drafted: int, room: int) -> Step:
    """One verify step at sequence position `context`, committing at most `room` tokens."""
    n = min(accepted + 1, room)  # tokens committed: the accepted drafts, then the target's own
    kept = min(accepted, n)
    nodes = [Node(token=context + j, parent=j - 1, depth=j + 1, status="unreached") for j in range(drafted)]
    for j in range(kept):
        nodes[j].status = "accepted"
    if n > kept and accepted < drafted:
        nodes[accepted].status = "rejected"
    last = "resampled" if accepted < drafted else ("bonus" if accepted else "target")
    origins = ["accepted"] * kept + ([last] if n > kept else [])
    return Step(index=index, context_len=context, nodes=nodes, accepted=list(range(kept)),
                tokens=[context + j for j in range(n)], origins=origins, verified=1 + drafted)


def trace_of(peer: Peer, prompt: str, answer: dict, arrays: tuple[list[int], list[int]], settings: dict) -> Trace:
    """answer: {"text", "prompt_tokens", "completion_tokens", "wall_s"} of one request;
    arrays: (per_step_accepted, per_step_drafted)."""
    prompt_len, produced = max(1, answer["prompt_tokens"]), answer["completion_tokens"]
    pos, steps = 1, []  # output position 0 is the prefill's token
    for accepted, drafted in zip(*arrays):
        if pos >= produced or len(steps) == MAX_STEPS:  # a longer answer's trace is cut where a page stops drawing
            break
        steps.append(_step(len(steps), prompt_len + pos, accepted, drafted, produced - pos))
        pos += len(steps[-1].tokens)
    return Trace(
        method=f"{peer.kind}:{peer.method or 'speculative'}",
        params={"engine": peer.kind, "engine_method": peer.method or "not given", "token_ids": PLACEHOLDER_IDS,
                "first_token": "from the prefill forward, which drafts nothing: not a step here"},
        model=answer.get("model") or peer.model or "?", prompt=prompt, prompt_ids=list(range(prompt_len)),
        sampling={k: settings[k] for k in ("temperature", "top_p", "top_k", "seed")},
        max_new_tokens=settings["max_new_tokens"], steps=steps, text=answer["text"],
        wall_s=answer["wall_s"], device=f"{peer.kind} server", dtype="?",
    )
