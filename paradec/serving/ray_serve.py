"""The backend on Ray Serve: the HTTP API of `python -m paradec serve`, its runs decoded by replicas.

Two deployments. The ingress (no CPU of its own) is paradec.serving.serve's own app (create_app): the same
routes, request schema (paradec.serving.requests), body cap, errors and status codes. Its service, RayService,
sends each valid run to the Decoder deployment of the model it names. A Decoder replica loads its
model once and decodes one run at a time (max_ongoing_requests=1) with paradec.serving.serve's Service.run,
the function `python -m paradec serve` decodes with. Ray Serve routes, queues (max_queued_requests:
past it, 429), and scales replicas between a minimum and a maximum (autoscaling_config); a replica
takes a GPU where the cluster has them, one CPU otherwise.

A replica that dies during a run (its process killed, its node lost) fails that call: the run is sent
again, RETRIES times at most (decoding is seeded: the same trace), then the client gets a 503; Ray
starts a replacement. A client that leaves cancels its call: the replica's run stops at its next
step. Optional: `ray[serve]` is in requirements-ray.txt, and only this module imports it."""
from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio.to_thread
import ray
from ray import serve
from ray.exceptions import RayActorError
from ray.serve.exceptions import BackPressureError, RequestCancelledError

from .. import methods, models
from ..lanes import QueueFull
from ..models import gguf
from ..run import OutOfMemory, validate
from ..traces.trace import Trace
from .requests import RunRequest
from .serve import Cancelled, Service, Unavailable, create_app, pick

APP = "paradec"  # the Serve application's name
ROOT = Path(__file__).resolve().parents[2]  # the folder paradec is imported from
RETRIES = 1  # a run whose replica died is sent again this many times (a run that kills them costs RETRIES + 1)
WATCH_S = 0.2  # how often a waiting call checks that its client is still there
INGRESS_ONGOING = 1000  # requests one ingress replica holds at once (each waits on a decoder)
STATUS_S = 2.0  # how long the replica count /queue reports is reused
ERRORS = {"input": methods.InputError, "oom": OutOfMemory, "cancelled": Cancelled, "busy": QueueFull}


@serve.deployment(max_ongoing_requests=1)
class Decoder:
    """One model, loaded once per replica; one run at a time, as a lane of `paradec serve` runs it."""

    def __init__(self, spec: str, device: str | None, dtype: str | None, drafts: tuple = (), weights: tuple = ()):
        loaded = models.load(spec, device, dtype, weights=gguf.pick_weights(spec, device, None, dtype))  # q4 on a CPU
        self.service = Service({spec: loaded}, 0, tuple(drafts), tuple(weights))
        for d in drafts:
            self.service.runner.draft(d, spec)

    def describe(self) -> dict:
        return self.service.health()["models"][0]

    async def run(self, body: str) -> dict:
        """Decode in a worker thread; if Ray cancels the call (its client left), the run stops at its
        next step and this replica is busy until it has."""
        gone = threading.Event()
        decoding = asyncio.get_running_loop().run_in_executor(None, self._decode, body, gone.is_set)
        try:
            return await asyncio.shield(decoding)
        except asyncio.CancelledError:
            gone.set()
            await asyncio.wait([decoding])
            raise

    def _decode(self, body: str, gone: Callable[[], bool]) -> dict:
        t0 = time.perf_counter()
        try:
            trace, _ = self.service.run(RunRequest.model_validate_json(body), gone)
        except Cancelled as e:
            return {"error": "cancelled", "message": str(e)}
        except OutOfMemory as e:
            return {"error": "oom", "message": str(e)}
        except (methods.InputError, models.ModelError) as e:
            return {"error": "input", "message": str(e)}
        except QueueFull as e:
            return {"error": "busy", "message": str(e)}
        return {"trace": trace.to_json(), "busy_s": time.perf_counter() - t0}


class RayService:
    """create_app's service whose runs Decoder replicas decode: health, queues, run, as Service's."""

    def __init__(self, decoders: dict, capacity: int, described: dict):
        self.decoders, self.capacity, self.described = decoders, capacity, described
        self.engines: dict = {}  # production engine peers: `python -m paradec serve --engine` only
        self._lock = threading.Lock()
        self._inflight = dict.fromkeys(decoders, 0)
        self._replicas: tuple[float, dict] = (0.0, {})

    def engine(self, r):
        raise methods.InputError("engine peers are served by `python -m paradec serve --engine`, not on Ray")

    def health(self) -> dict:
        return {"status": "ok", "models": list(self.described.values()), "queues": self.queues()}

    def queues(self) -> dict:
        """Per model: runs in flight (decoding or in Ray's line), the line's capacity, the replicas up."""
        replicas = self.replicas()
        with self._lock:
            inflight = dict(self._inflight)
        return {spec: {"running": n > 0, "waiting": max(0, n - replicas.get(spec, 1)), "capacity": self.capacity,
                       "replicas": replicas.get(spec, 0)} for spec, n in inflight.items()}

    def replicas(self) -> dict:
        """Running replicas per model, from Serve's controller (asked at most every STATUS_S)."""
        at, known = self._replicas
        if time.monotonic() - at > STATUS_S and ray.is_initialized():  # (serve.status() would start a Ray)
            try:
                deployments = serve.status().applications[APP].deployments
                known = {spec: deployments[h.deployment_name].replica_states.get("RUNNING", 0)
                         for spec, h in self.decoders.items()}
            except (KeyError, RuntimeError):
                pass  # run outside an application named APP: nothing to count
            self._replicas = (time.monotonic(), known)
        return known

    def run_batch(self, r, gone: Callable[[], bool] = lambda: False):
        """Batches decode in `python -m paradec serve`'s own process; the replicas take one prompt a run."""
        raise Unavailable("batches (POST /batch) are served by python -m paradec serve, not on Ray Serve's replicas")

    def run(self, r: RunRequest, gone: Callable[[], bool] = lambda: False) -> tuple[Trace, dict]:
        """As Service.run: the checks that need no model here (a bad request never waits), then the
        run on a replica; (the trace, queue headers)."""
        handle = pick(self.decoders, r.model)
        spec = r.model or next(iter(self.decoders))
        validate(r.prompt, r.max_new_tokens, r.temperature, r.top_p, r.top_k, r.seed)
        methods.parse_params(r.method, r.params)
        t0 = time.perf_counter()
        with self._lock:
            ahead = self._inflight[spec]
            self._inflight[spec] += 1
        try:
            answer, failed = self._call(handle, r.model_dump_json(), gone)
        finally:
            with self._lock:
                self._inflight[spec] -= 1
        waited = max(0.0, time.perf_counter() - t0 - answer["busy_s"])
        return Trace.from_json(answer["trace"]), {"X-Paradec-Ahead": str(ahead), "X-Paradec-Wait-S": f"{waited:.3f}",
                                                  "X-Paradec-Retried": str(failed)}

    def _call(self, handle, body: str, gone: Callable[[], bool]) -> tuple[dict, int]:
        """(the replica's answer, how many replicas died under this run before it)."""
        failed = 0
        while True:
            try:
                answer = _wait(handle.run.remote(body), gone)
                break
            except RayActorError:  # the replica died: seeded decoding, so another replica gives the same trace
                failed += 1
                if failed > RETRIES:
                    raise Unavailable(f"the run failed on {failed} replicas in a row; try again") from None
        if "error" in answer:
            raise ERRORS[answer["error"]](answer["message"])
        return answer, failed


def _wait(response, gone: Callable[[], bool]) -> dict:
    """The replica's answer; the call is cancelled once its client has gone."""
    try:
        while True:
            try:
                return response.result(timeout_s=WATCH_S)
            except TimeoutError:
                if gone():
                    response.cancel()
                    raise Cancelled("the client went away") from None
    except BackPressureError:
        raise QueueFull("the queue is full (every replica busy and the line full); try again in a moment") from None
    except RequestCancelledError:
        raise Cancelled("the client went away") from None


@serve.deployment(max_ongoing_requests=INGRESS_ONGOING, ray_actor_options={"num_cpus": 0})
@serve.ingress()
class Ingress:
    """paradec.serving.serve's app, over a RayService."""

    async def __init__(self, decoders: dict, capacity: int):
        anyio.to_thread.current_default_thread_limiter().total_tokens = INGRESS_ONGOING  # a thread per waiting run
        described = {spec: await h.describe.remote() for spec, h in decoders.items()}
        self.service = RayService(decoders, capacity, described)

    def __serve_build_asgi_app__(self):
        return create_app(self.service)


def check(specs: list[str], replicas: int, max_replicas: int, queue: int) -> None:
    if not specs or replicas < 1 or max_replicas and max_replicas < replicas or queue < 1:
        raise methods.InputError("Ray Serve needs a model, --replicas 1 or more (at most --max-replicas) and "
                                 "--queue 1 or more")


def build(specs: list[str], replicas: int = 1, max_replicas: int = 0, queue: int = 8, device: str | None = None,
          dtype: str | None = None, drafts: tuple = (), weights: tuple = (), gpus: bool = False):
    """The Serve application: one Decoder deployment per model (replicas..max_replicas of them, on load;
    one GPU each where gpus, else one CPU), behind the ingress. queue: runs that may wait per model."""
    check(specs, replicas, max_replicas, queue)
    decoders = {}
    for i, spec in enumerate(specs):
        scale = ({"autoscaling_config": {"min_replicas": replicas, "max_replicas": max_replicas,
                                         "target_ongoing_requests": 1}} if max_replicas > replicas
                 else {"num_replicas": replicas})
        decoders[spec] = Decoder.options(name=f"decoder{i}", max_queued_requests=queue, **scale,
                                         ray_actor_options={"num_gpus": 1} if gpus else {"num_cpus": 1}
                                         ).bind(spec, device, dtype, tuple(drafts), tuple(weights))
    return Ingress.bind(decoders, queue)


def app_builder(args: dict):
    """`serve deploy deploy/serve.yaml`: its args are build()'s (models: a list of specs)."""
    args = dict(args)
    return build(list(args.pop("models", None) or [models.EMBEDDED]), **args)


def serve_ray_command(args) -> int:
    """python -m paradec serve --ray: a local Ray started here (on loopback), or --ray-address's cluster;
    the application deployed, served on --host:--port until interrupted."""
    specs = args.model or [models.EMBEDDED]
    check(specs, args.replicas, args.max_replicas, args.queue)
    if args.engine:
        raise methods.InputError("--engine is served by `python -m paradec serve` without --ray")
    local = not args.ray_address
    try:
        ray.init(address=args.ray_address or "local",  # "local": a new Ray, never a stale one found on disk
                 include_dashboard=False, _node_ip_address="127.0.0.1" if local else None,
                 runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})  # where the replicas import paradec from
    except ConnectionError as e:
        raise methods.InputError(f"--ray-address {args.ray_address}: {str(e).splitlines()[0]}") from None
    try:
        gpus = ray.cluster_resources().get("GPU", 0) >= 1
        serve.start(http_options={"host": args.host, "port": args.port})
        serve.run(build(specs, args.replicas, args.max_replicas, args.queue, args.device, args.dtype, args.draft,
                        args.weights, gpus), name=APP, route_prefix="/")
        print(f"paradec on Ray Serve at http://{args.host}:{args.port}: {', '.join(specs)}, {args.replicas}"
              f"{f'..{args.max_replicas}' if args.max_replicas else ''} replica(s) each on {'GPU' if gpus else 'CPU'}",
              file=sys.stderr)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())  # `docker stop`, a supervisor: as Ctrl-C does
        while not stop.wait(3600):
            pass
        return 0
    finally:
        if not local:  # a cluster outlives this command; what it deployed does not
            serve.delete(APP)
        ray.shutdown()
