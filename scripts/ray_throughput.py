"""Runs per minute on the Ray Serve backend (paradec.serving.ray_serve) with 1 replica against 2 (or --replicas).

    python scripts/ray_throughput.py [--model embedded] [--replicas 1,2] [--runs 24] [--clients 8]
                                     [--method ar] [--max-new-tokens 32] [--out FILE.json]

Starts a local Ray on loopback (one CPU per replica, --cpus in all), deploys the backend with each replica
count in turn, warms every replica up, then sends --runs POST /run from --clients concurrent clients and
times them: runs/minute = runs answered 200 / wall minutes. A benchmark, not a test: run it on a quiet
machine and say which; docs/serving.md's numbers name theirs."""
from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ray  # noqa: E402
from ray import serve  # noqa: E402

from paradec.serving import ray_serve  # noqa: E402
from paradec.traces.files import write_atomic  # noqa: E402

PROMPTS = ["Explain what a hash table is.", "Write a haiku about rain.", "List three prime numbers.",
           "Why is the sky blue?", "Translate 'good morning' into French.", "Name a famous bridge."]


def post(url: str, body: dict) -> int:
    req = urllib.request.Request(url + "/run", json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def measure(url: str, args, replicas: int) -> dict:
    bodies = [{"method": args.method, "prompt": PROMPTS[i % len(PROMPTS)], "max_new_tokens": args.max_new_tokens,
               "seed": i} for i in range(args.runs)]
    with ThreadPoolExecutor(max(replicas, 1)) as pool:  # every replica loaded and warm before the clock starts
        list(pool.map(lambda b: post(url, b), bodies[:replicas]))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.clients) as pool:
        statuses = list(pool.map(lambda b: post(url, b), bodies))
    wall = time.perf_counter() - t0
    ok = statuses.count(200)
    return {"replicas": replicas, "runs": len(bodies), "ok": ok, "refused": len(bodies) - ok,
            "wall_s": round(wall, 2), "runs_per_minute": round(60 * ok / wall, 1)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="embedded")
    p.add_argument("--replicas", default="1,2", help="comma-separated replica counts, measured in turn")
    p.add_argument("--runs", type=int, default=24)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--method", default="ar")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--out", help="write the results here as JSON")
    args = p.parse_args()
    counts = [int(n) for n in args.replicas.split(",")]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray.init(address="local", num_cpus=max(counts), include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    results = []
    try:
        for n in counts:
            serve.run(ray_serve.build([args.model], replicas=n, queue=args.runs, device="cpu", dtype="float32"),
                      name=ray_serve.APP, route_prefix="/")
            results.append(measure(f"http://127.0.0.1:{port}", args, n))
            print(json.dumps(results[-1]), flush=True)
            serve.delete(ray_serve.APP)
    finally:
        ray.shutdown()
    report = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}", "model": args.model,
              "method": args.method, "max_new_tokens": args.max_new_tokens, "clients": args.clients,
              "results": results}
    if len(results) > 1:
        report["speedup"] = round(results[-1]["runs_per_minute"] / results[0]["runs_per_minute"], 2)
    print(json.dumps(report))
    if args.out:
        write_atomic(args.out, json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
