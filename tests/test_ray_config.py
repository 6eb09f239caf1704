"""Ray Serve without starting Ray: the repository's Serve config is valid and builds the application,
bad --ray flags are one line, and without `ray[serve]` installed paradec imports and `serve --ray` says
what to install (the default install has no Ray); RayService, over stand-in replicas, retries a run whose
replica died, maps what a replica refuses to the single-process service's errors and cancels a call
whose client left."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # Ray's dependency
from ray.serve.exceptions import BackPressureError
from ray.serve.schema import ServeDeploySchema

from paradec import cli, methods, run
from paradec.lanes import QueueFull
from paradec.serving import (
    ray_serve,  # noqa: E402
    serve,
)
from paradec.serving.requests import RunRequest

# make test only: a fresh interpreter per case
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_the_serve_config_is_valid_and_builds_the_application():
    config = ServeDeploySchema.model_validate(yaml.safe_load((ROOT / "deploy" / "serve.yaml").read_text()))
    [app] = config.applications
    assert app.name == ray_serve.APP and app.import_path == "paradec.serving.ray_serve:app_builder"
    ray_serve.app_builder(app.args)  # binds the deployments: no cluster, no model loaded


@pytest.mark.parametrize("flags, words", [(["--replicas", "0"], "--replicas 1 or more"),
                                          (["--replicas", "3", "--max-replicas", "2"], "at most --max-replicas"),
                                          (["--queue", "0"], "--queue 1 or more"),
                                          (["--engine", "vllm=http://127.0.0.1:9"], "without --ray")])
def test_bad_ray_flags_are_one_line(capsys, flags, words):
    assert cli.main(["serve", "--ray", *flags]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_replicas_without_ray_are_refused(capsys):
    assert cli.main(["serve", "--replicas", "2"]) == 2 and "need --ray" in capsys.readouterr().err


def test_without_ray_paradec_imports_and_serve_ray_says_what_to_install():
    code = ("import sys; sys.modules['ray'] = None; import paradec.serving.serve, paradec.cli; "
            "sys.exit(paradec.cli.main(['serve', '--ray']))")  # None in sys.modules: `import ray` fails
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == ("paradec: error: --ray needs Ray Serve: "
                                                       "pip install -r requirements-ray.txt"), r.stderr


def test_build_refuses_what_ray_could_not_run():
    with pytest.raises(methods.InputError, match="needs a model"):
        ray_serve.build([], replicas=1)


def decoder_deployment(app):
    """The one model's Decoder deployment behind the ingress (Ray's bound application, pinned Ray version)."""
    [decoder] = app._bound_deployment.init_args[0].values()
    return decoder._bound_deployment


@pytest.mark.parametrize("gpus", [False, True])
def test_replicas_scale_between_the_minimum_and_the_maximum_on_load(gpus):
    fixed = decoder_deployment(ray_serve.build(["m"], replicas=2, queue=5, gpus=gpus))
    assert fixed._deployment_config.num_replicas == 2 and fixed._deployment_config.autoscaling_config is None
    scaled = decoder_deployment(ray_serve.build(["m"], replicas=1, max_replicas=4, queue=5, gpus=gpus))
    auto = scaled._deployment_config.autoscaling_config
    assert (auto.min_replicas, auto.max_replicas, auto.target_ongoing_requests) == (1, 4, 1)  # one run a replica
    assert (scaled._deployment_config.max_queued_requests, scaled._deployment_config.max_ongoing_requests) == (5, 1)
    assert scaled.ray_actor_options.get("num_gpus", 0) == (1 if gpus else 0)


# ---------------------------------------------------------------- RayService over stand-in replicas

TRACE = next((ROOT / "assets" / "traces").glob("pld-*.json")).read_text()
BODY = {"method": "pld", "prompt": "hi", "max_new_tokens": 8}


class Handle:
    """A stand-in DeploymentHandle: each call's outcome in turn (an answer or an exception)."""

    def __init__(self, *outcomes):
        self.outcomes, self.calls, self.cancelled, self.run = list(outcomes), 0, 0, self

    def remote(self, body: str):
        self.calls += 1
        return self

    def result(self, timeout_s: float):
        if isinstance(self.outcomes[0], BaseException) or self.outcomes[0] is None:
            raise self.outcomes.pop(0) or TimeoutError()
        return self.outcomes.pop(0)

    def cancel(self):
        self.cancelled += 1


def service(handle: Handle) -> ray_serve.RayService:
    return ray_serve.RayService({"tiny": handle}, 4, {"tiny": {"spec": "tiny"}})


def test_a_run_whose_replica_died_is_sent_again_once_then_refused_with_503():
    from ray.exceptions import ActorDiedError

    handle = Handle(ActorDiedError(), {"trace": TRACE, "busy_s": 0.0})
    trace, headers = service(handle).run(RunRequest(**BODY))
    assert trace.steps and headers["X-Paradec-Retried"] == "1" and handle.calls == 2
    with pytest.raises(serve.Unavailable, match="failed on 2 replicas in a row"):
        service(Handle(ActorDiedError(), ActorDiedError(), {"trace": TRACE, "busy_s": 0.0})).run(RunRequest(**BODY))


@pytest.mark.parametrize("outcome, error", [
    ({"error": "input", "message": "unknown method"}, methods.InputError),
    ({"error": "oom", "message": "out of memory"}, run.OutOfMemory),
    ({"error": "busy", "message": "the queue is full"}, QueueFull),
    (BackPressureError(num_queued_requests=4, max_queued_requests=4), QueueFull),
])
def test_what_a_replica_refuses_is_the_single_process_services_error(outcome, error):
    with pytest.raises(error):
        service(Handle(outcome)).run(RunRequest(**BODY))


def test_a_client_that_leaves_cancels_its_call():
    handle = Handle(None, None, None)
    with pytest.raises(serve.Cancelled):
        service(handle).run(RunRequest(**BODY), gone=lambda: handle.outcomes == [None])
    assert handle.cancelled == 1 and service(handle).queues()["tiny"]["running"] is False


def test_bad_requests_are_refused_before_a_replica_is_asked():
    handle = Handle()
    for body in [{**BODY, "method": "nope"}, {**BODY, "max_new_tokens": 0}, {**BODY, "model": "other"},
                 {**BODY, "top_k": 10**30}, {**BODY, "seed": 2**64 - 1}]:  # numbers a trace may not hold: no 500
        with pytest.raises(methods.InputError):
            service(handle).run(RunRequest(**body))
    assert handle.calls == 0
