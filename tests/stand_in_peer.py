"""A stand-in for paradec/peers/llamacpp_worker.py: the same protocol, no llama.cpp, and misbehaviour on demand.

    python tests/stand_in_peer.py BEHAVIOUR [N]

good: loads and answers every generate with the tokens 100, 101, ... (prompt lookup: the same, except on
prompts of an odd length, where its last token is 7 higher); otherwise the first N generate requests (default 0)
are answered as `good` does, and the next one gets BEHAVIOUR: crash (SIGILL, as a native build that uses a
forbidden instruction), hang, flood (2 MiB without a newline), garbage, nan, list, twice, refuse (ok false),
bad_tokens, past_eos, slow_first (first_s after wall_s), exit (exit code 3 with a last word on stderr)."""
import json
import os
import signal
import sys
import time


def good(request: dict) -> dict:
    n = request["max_new_tokens"]
    tokens = [100 + i for i in range(n)]
    if request["mode"] == "pld" and len(request["prompt_ids"]) % 2:
        tokens[-1] += 7
    return {"ok": True, "tokens": tokens, "wall_s": 0.01 * n, "first_s": 0.005}


def bad(behaviour: str, request: dict) -> str:
    """The raw reply line (without its newline) for a misbehaving generate."""
    if behaviour == "crash":
        sys.stderr.write("ggml: illegal instruction\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGILL)
    if behaviour == "exit":
        sys.stderr.write("worker: out of luck\n")
        sys.stderr.flush()
        sys.exit(3)
    if behaviour == "hang":
        time.sleep(3600)
    if behaviour == "flood":
        return "x" * (2 << 20)
    reply = good(request)
    changed = {"garbage": "not json at all", "nan": '{"ok": true, "wall_s": NaN}', "list": "[1, 2, 3]",
               "twice": json.dumps(reply) + "\n" + json.dumps(reply), "refuse": '{"ok": false, "error": "no\\nway"}'}
    if behaviour in changed:
        return changed[behaviour]
    if behaviour == "bad_tokens":
        reply["tokens"] = [-1, "2", 10**9]
    if behaviour == "past_eos":
        reply["tokens"] = [request["stop_ids"][0], 5]
    if behaviour == "slow_first":
        reply["first_s"] = reply["wall_s"] + 1
    return json.dumps(reply)


def main() -> None:
    behaviour = sys.argv[1]
    after = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    served = 0
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "load":
            out = json.dumps({"ok": True, "library": "stand-in 0.0\x1b[31m", "system_info": "AVX2 = 1 |"})
        elif behaviour == "good" or served < after:
            out = json.dumps(good(request))
        else:
            out = bad(behaviour, request)
        served += request["op"] == "generate"
        sys.stdout.write(out + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
