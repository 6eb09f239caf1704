"""The backend on Ray Serve (paradec.serving.ray_serve): one local Ray on loopback for the module (2 CPUs, no
dashboard), the tiny model on 2 CPU replicas. The same API as `python -m paradec serve`: the single-process
service's bad-request and hostile-request tests run here against Ray's endpoint unchanged (imported below);
20 concurrent runs (200 or a clean 429, each equal to the run alone); a replica killed mid-run (the run is
retried, Ray replaces the replica, nothing else is touched); a client that leaves frees its replica; the
app's live mode runs a method on it. Slow: Ray and its replicas take tens of seconds to start here."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import ray
from ray import serve
from test_app import live_app
from test_hostile_serve import (  # noqa: F401 (the single-process service's tests, run here on Ray's url)
    _send_and_drop,
    _until,
    files,
    test_a_body_over_the_cap_is_refused_unread,
    test_a_malformed_body_gets_one_line_422,
    test_a_weight_parameter_never_names_a_file_or_a_hub_id,
    test_draft_and_model_never_name_a_file_or_a_hub_id,
    test_other_routes_answer_in_the_same_one_line,
    test_unbounded_costs_are_refused_before_a_run,
)
from test_serve import (  # noqa: F401
    REQUESTS,
    _free_port,
    alone,
    get,
    post,
    test_bad_requests_get_a_4xx_and_one_line,
    tiny,
    untimed,
)

from paradec.serving import ray_serve  # noqa: E402

from helpers import player

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # replicas are killed and restarted on a clock
QUEUE = 8  # runs that may wait in Ray's line behind the 2 running ones
# 11.6 s a run on the tiny model, measured on the busy 2-core development machine: far past the bound below
LONG = {"method": "lookahead", "prompt": "hi", "max_new_tokens": 400, "params": {"window": 32, "ngram": 8,
                                                                                 "candidates": 32}}


@pytest.fixture(scope="module")
def url(tiny_dir):
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ray_serve.ROOT)}})
    try:
        port = _free_port()
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(ray_serve.build([str(tiny_dir)], replicas=2, queue=QUEUE, device="cpu", dtype="float32"),
                  name=ray_serve.APP, route_prefix="/")
        yield f"http://127.0.0.1:{port}"
    finally:
        ray.shutdown()  # its replicas with it (serve.shutdown would stop each gracefully: seconds more)


@pytest.fixture(scope="module")
def start(url):
    """test_serve's start(queue), answered by the Ray endpoint (its line is QUEUE long)."""
    return lambda queue: (url, None)


def replicas() -> set[str]:
    """The decoder replicas' actor names."""
    return {a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if "#decoder0#" in a["name"]}


def queue(url: str) -> dict:
    """/queue's one model."""
    return next(iter(get(url + "/queue").values()))


def test_health_and_queue_speak_the_single_process_api(url, tiny_dir):
    h = get(url + "/health")
    assert h["status"] == "ok" and [m["spec"] for m in h["models"]] == [str(tiny_dir)]
    lane = h["queues"][str(tiny_dir)]
    assert lane == {"running": False, "waiting": 0, "capacity": QUEUE, "replicas": 2} and get(url + "/queue")


def test_twenty_concurrent_runs_over_two_replicas_each_equal_to_the_run_alone(url, tiny):
    bodies = [REQUESTS[i % len(REQUESTS)] for i in range(20)]
    with ThreadPoolExecutor(len(bodies)) as pool:
        answers = list(pool.map(lambda b: post(url, b), bodies))
    assert {status for status, _, _ in answers} <= {200, 429} and sum(s == 200 for s, _, _ in answers) >= 2
    expected = [untimed(alone(tiny, r).to_dict()) for r in REQUESTS]
    for i, (status, body, headers) in enumerate(answers):
        if status == 429:
            assert set(body) == {"error"} and "queue is full" in body["error"] and headers["Retry-After"]
        else:
            assert untimed(body) == expected[i % len(REQUESTS)], bodies[i]["method"]


def test_a_replica_killed_mid_run_the_run_is_retried_and_ray_replaces_it(url, tiny):
    before = replicas()
    assert len(before) == 2
    body = {**REQUESTS[0], "max_new_tokens": 400}
    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(post, url, body) for _ in range(6)]  # both replicas busy, four in line
        assert _until(lambda: queue(url)["waiting"] >= 2, 30)
        victim = sorted(before)[0]
        ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=True)
        answers = [f.result() for f in futures]
    expected = untimed(alone(tiny, body).to_dict())
    assert all(status == 200 and untimed(b) == expected for status, b, _ in answers), [a[:2] for a in answers]
    assert sum(int(h["X-Paradec-Retried"]) for _, _, h in answers) >= 1  # the run the replica was decoding
    assert _until(lambda: len(replicas()) == 2 and victim not in replicas(), 120), replicas()
    assert sorted(before)[1] in replicas()  # the other replica was not touched
    assert _until(lambda: queue(url)["replicas"] == 2, 120)
    for r in REQUESTS:  # the next runs succeed
        status, got, _ = post(url, r)
        assert status == 200 and untimed(got) == untimed(alone(tiny, r).to_dict())


def test_a_full_line_is_refused_and_clients_that_leave_free_their_replicas(url):
    """Two long runs decoding and QUEUE in Ray's line: the next run gets 429. Their clients leave: the
    replicas stop at their next step: two fresh runs are answered within 3 s (a long run takes longer)."""
    dropped = []
    for i in range(2 + QUEUE):
        dropped.append(_send_and_drop(url, LONG))
        assert _until(lambda n=i: queue(url)["running"] and queue(url)["waiting"] == max(0, n - 1), 30), queue(url)
    status, answer, headers = post(url, REQUESTS[0])
    assert status == 429 and "queue is full" in answer["error"] and headers["Retry-After"]
    for s in dropped:
        s.close()
    assert _until(lambda: not queue(url)["running"], 5), queue(url)

    def both_answered() -> bool:  # one per replica; Ray's line may count the cancelled runs a moment longer (429)
        with ThreadPoolExecutor(2) as pool:
            return [status for status, _, _ in pool.map(lambda r: post(url, r), REQUESTS[:2])] == [200, 200]

    t0 = time.perf_counter()
    assert _until(both_answered, 3) and time.perf_counter() - t0 < 3  # long before the long runs could end


def test_the_app_runs_live_on_the_ray_endpoint(url, monkeypatch):
    monkeypatch.setenv("PARADEC_BACKEND", url)
    at = live_app(max_new=8)
    at.switch_page("views/pld.py").run()
    at.button(key="pld.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("tiny-model" in c.value for c in at.caption) and player(at, "pld")["frames"]

