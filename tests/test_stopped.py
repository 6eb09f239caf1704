"""A run stopped half way gives its model's turn back. Streamlit stops a script on a rerun or a
closed tab by raising StopException (a BaseException) from inside whatever the script is doing,
here the progress callback of a live run; a generator that held the turn is closed instead.
Either way the lane is free at once, nothing half-done is cached, and the next run is whole."""
from __future__ import annotations

import gc
import json
import threading
import time

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException
from test_serve import untimed

from paradec import models, run
from paradec.lanes import Lane

pytestmark = pytest.mark.usefixtures("one_thread")

IDLE = {"running": False, "waiting": 0}
PROMPT, NEW = "the cat sat on the mat, the cat sat on", 12


def idle(lane: Lane) -> bool:
    status = lane.status()
    return {k: status[k] for k in IDLE} == IDLE


def next_turn_is_immediate(lane: Lane) -> None:
    """A fresh run finds nobody ahead: the stopped one did not keep its turn. The thread and its
    timeout turn a stuck lane into a failure instead of a hung suite."""
    got = []

    def take():
        with lane.turn() as turn:
            got.append(turn)

    t = threading.Thread(target=take, daemon=True)
    t.start()
    t.join(5)
    assert got and got[0].ahead == 0 and got[0].waited_s < 1.0, "the lane is still held"


def test_an_exception_inside_the_turn_gives_it_back():
    lane = Lane(2)
    with pytest.raises(StopException), lane.turn():
        raise StopException
    assert idle(lane)
    next_turn_is_immediate(lane)


def holds_the_turn(lane: Lane):
    """A run written as a generator (what a page iterating over steps is): the turn is held while it yields."""
    with lane.turn():
        for i in range(100):
            yield i


@pytest.mark.parametrize("how", ["closed", "dropped"])
def test_a_generator_stopped_half_way_gives_the_turn_back(how):
    lane = Lane(2)
    steps = holds_the_turn(lane)
    next(steps), next(steps)
    assert lane.status()["running"]
    if how == "closed":
        steps.close()  # GeneratorExit at the yield: what a rerun does to a generator it abandons
    else:
        del steps  # the last reference gone: Python closes it as it frees it
        gc.collect()
    assert idle(lane)
    next_turn_is_immediate(lane)


def live_key(spec: str, seed: int):
    from ui import live

    return live.Key(spec, "cpu", "float32", None, "pld", json.dumps({"k": 4}), PROMPT, NEW, 0.0, 1.0, seed)


def stop_after_a_step(fraction: float, text=None) -> None:
    if fraction > 0:  # a step was decoded: the run is half way, holding the turn
        raise StopException


@pytest.mark.serial  # on a clock: run alone, not beside other tests
def test_a_live_run_stopped_half_way_releases_the_model_and_caches_nothing(tiny_dir):
    from ui import live

    spec = str(tiny_dir)
    k = live_key(spec, seed=101)  # a key of its own: no other test has cached it
    with pytest.raises(StopException):
        live.run(k, stop_after_a_step)
    lane = live._live().runner(k).lane(spec)
    assert idle(lane) and live.cached(k) is None  # no half trace kept as if it were the result
    t0 = time.perf_counter()
    trace = live.run(k)
    assert time.perf_counter() - t0 < 30 and idle(lane)
    alone = run.run(models.load(spec, "cpu", "float32"), "pld", PROMPT, {"k": 4}, NEW, seed=101)
    assert untimed(trace.to_dict()) == untimed(alone.to_dict())


def test_a_live_run_stopped_while_waiting_leaves_the_line(tiny_dir):
    from ui import live

    spec = str(tiny_dir)
    lane = live._live().runner(live_key(spec, seed=0)).lane(spec)
    stopped = []

    def waits_then_stops():
        def progress(fraction, text=None):
            if text and text.startswith("waiting for the model"):
                raise StopException
        try:
            live.run(live_key(spec, seed=102), progress)
        except StopException:
            stopped.append(True)

    with lane.turn():  # another session is decoding
        t = threading.Thread(target=waits_then_stops)
        t.start()
        t.join(10)
        assert stopped and lane.status()["waiting"] == 0  # the stopped one is out of the line
    assert idle(lane) and live.run(live_key(spec, seed=102)).new_tokens == NEW
