"""paradec.serving.worker: every job on one thread, its events back in the caller's thread, a caller that gives up
stops the job at its next event."""
import threading

import pytest

from paradec.serving.worker import Stopped, Worker


def test_jobs_run_on_one_thread_whatever_thread_calls():
    w = Worker()
    seen = []
    callers = [threading.Thread(target=lambda: w.call(lambda emit: seen.append(threading.get_ident())))
               for _ in range(4)]
    for t in callers:
        t.start()
        t.join()
    w.call(lambda emit: seen.append(threading.get_ident()))
    assert len(set(seen)) == 1 and seen[0] != threading.get_ident()


def test_results_errors_and_events_come_back_to_the_caller():
    w = Worker()
    here, got = threading.get_ident(), []

    def job(emit):
        for k in range(5):
            emit(k)
        return "done"

    assert w.call(job, lambda e: got.append((e, threading.get_ident()))) == "done"
    assert got == [(k, here) for k in range(5)]
    with pytest.raises(ValueError, match="bad"):
        w.call(lambda emit: (_ for _ in ()).throw(ValueError("bad")))
    assert w.call(lambda emit: 7) == 7  # a failed job leaves the thread working


def test_a_caller_that_gives_up_stops_the_job_at_its_next_event():
    w = Worker()
    steps, stopped, handled = [], [], threading.Semaphore(0)

    def job(emit):  # a step waits until the caller handled the last one, as slow decode steps would
        try:
            for k in range(100):
                steps.append(k)
                emit(k)
                handled.acquire(timeout=0.5)
        except Stopped:
            stopped.append(True)
            raise

    def on_event(k):
        if k == 2:
            raise ConnectionError("client went away")
        handled.release()

    with pytest.raises(ConnectionError):
        w.call(job, on_event)
    assert stopped == [True] and steps == [0, 1, 2, 3]  # stopped at the event after the one that failed


def test_a_job_that_calls_the_worker_again_runs_inline():
    w = Worker()
    assert w.call(lambda emit: w.call(lambda inner: threading.get_ident())) == w.call(lambda e: threading.get_ident())
