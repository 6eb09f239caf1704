"""llama.cpp's side of bench's llamacpp peer: a process of its own, run as a script by paradec.peers.llamacpp,
reading one JSON request a line on stdin and writing one JSON reply a line on stdout.

Standard library and llama-cpp-python only (no paradec, no torch): what crashes here (a native instruction the
sandbox forbids, an assertion in ggml) ends this process, and bench writes one line for it.

Requests and replies:
  {"op": "load", "path", "threads", "n_ctx", "num_pred_tokens"}
      -> {"ok": true, "library", "system_info"}
  {"op": "generate", "mode": "ar" | "pld", "prompt_ids", "max_new_tokens", "stop_ids"}
      -> {"ok": true, "tokens", "wall_s", "first_s"}
  anything that fails -> {"ok": false, "error"}
"""
import json
import sys
import time

MODES = ("ar", "pld")


def load(request: dict) -> tuple[dict, dict]:
    """The two decoders on the same file: plain AR, and prompt lookup (llama-cpp-python's draft model, which
    also makes it keep every position's logits, so it is a Llama of its own rather than a switch on the first).
    logits_all is named although the draft model implies it: llama-cpp-python sizes its array of logits by the
    argument, so without it a run past n_batch (512) tokens fails to store them."""
    import llama_cpp
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    common = dict(model_path=request["path"], n_ctx=request["n_ctx"], n_threads=request["threads"],
                  n_threads_batch=request["threads"], n_gpu_layers=0, seed=0, verbose=False)
    lookup = LlamaPromptLookupDecoding(num_pred_tokens=request["num_pred_tokens"])
    models = {"ar": llama_cpp.Llama(**common), "pld": llama_cpp.Llama(**common, draft_model=lookup, logits_all=True)}
    info = {"library": f"llama-cpp-python {llama_cpp.__version__}",
            "system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip()}
    return models, info


def generate(llm, prompt_ids: list[int], max_new_tokens: int, stop_ids: set[int]) -> dict:
    """Greedy tokens after prompt_ids, up to max_new_tokens or a stop token (kept, as paradec keeps it). Timed
    from the call to the last token; first_s: until the first token, the prompt's pass included."""
    llm.reset()  # no reuse of the last prompt's cache: every run pays its prompt's pass, as paradec's runs do
    tokens, first = [], None
    t0 = time.perf_counter()
    for token in llm.generate(prompt_ids, temp=0.0, top_k=1, repeat_penalty=1.0, reset=True):
        if first is None:
            first = time.perf_counter() - t0
        tokens.append(int(token))
        if len(tokens) >= max_new_tokens or token in stop_ids:
            break
    wall = time.perf_counter() - t0
    return {"tokens": tokens, "wall_s": wall, "first_s": first if first is not None else wall}


def answer(models: dict | None, request) -> tuple[dict | None, dict]:
    """(the models, once loaded; the reply) for one request."""
    if not isinstance(request, dict) or request.get("op") not in ("load", "generate"):
        return models, {"ok": False, "error": "not a request"}
    if request["op"] == "load":
        models, info = load(request)
        return models, {"ok": True, **info}
    if models is None or request.get("mode") not in MODES:
        return models, {"ok": False, "error": "generate before load, or an unknown mode"}
    got = generate(models[request["mode"]], request["prompt_ids"], request["max_new_tokens"],
                   set(request["stop_ids"]))
    return models, {"ok": True, **got}


def main() -> None:
    models = None
    for line in sys.stdin:
        try:
            models, reply = answer(models, json.loads(line))
        except Exception as e:  # noqa: BLE001 -- every failure is a reply; the parent decides what it means
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
