"""python -m paradec serve: decoders on this machine behind HTTP, so a CPU front end can drive a GPU box.

GET /health: status, the loaded models, every model's queue. GET /queue: the queues alone.
POST /run: {method, prompt, max_new_tokens, temperature, top_p, top_k, seed, params, draft, model, chat}
-> the trace, in paradec.traces.trace's own JSON (Trace.from_json reads it); the queue position the run
found and its wait come back in the X-Paradec-Ahead and X-Paradec-Wait-S headers.
Bad requests get 4xx and {"error": "one line"}; a run the device has no memory for, 507; a run no
worker could take (paradec.serving.ray_serve: replicas that died), 503. A message names no folder of this
machine's (public()). One exception to the JSON: a request the HTTP parser itself refuses (a negative
Content-Length, a malformed request line) gets uvicorn's plain-text 400 before any app code runs.
GET /engines, POST /engine {engine, prompt, ...}: a prompt on a production engine peer named with
--engine (paradec.production), its acceptance read as that engine reports it; 502 when it fails.

A request never names a file, a hub id or a URL that the service then opens: its target, draft and
weights (Medusa's heads, an EAGLE head, an adapter) are the shipped ones or those the operator named
at start-up. Bodies are capped (MAX_BODY). A run whose client has gone stops at its next step, and
one still waiting leaves the line, so a dropped connection frees its place.

Targets are loaded once at start-up and shared read-only; each run keeps its own KV cache and
waits its turn in its target's lane (one run at a time per model, a bounded line behind it).
Everything lives in the Service object that create_app builds: no module state."""
from __future__ import annotations

import asyncio
import dataclasses
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from .. import catalog, methods, models, runner
from ..cpu import kernels
from ..lanes import QueueFull
from ..models import gguf
from ..production import config as engine_config
from ..production import workload
from ..run import OutOfMemory, validate
from ..traces.trace import Trace
from .requests import BatchRequest, EngineRequest, RunRequest, method_json, with_methods

MAX_BODY = 2 * 2**20  # bytes: a prompt at its cap (200,000 characters) as JSON escapes fits
WATCH_S = 0.2  # how often a running request checks that its client is still there
MAX_ERROR = 300  # characters of an error's message: one that quotes a huge value is cut
# This machine's folders, as a message names them (the shipped weights, Python's packages, the home):
# a client learns where paradec is installed from none, and reads them relative (assets/drafters/...).
PRIVATE = sorted({(str(Path(__file__).resolve().parents[2]) + "/", ""), (sys.prefix + "/", "<python>/"),
                  (str(Path.home()) + "/", "~/")}, key=lambda pair: -len(pair[0]))


class Cancelled(RuntimeError):
    """The client went away: the run stops at its next step, or leaves the line."""


class Unavailable(RuntimeError):
    """No worker could take the run (a Ray Serve replica that died twice): 503, try again."""


class Service:
    def __init__(self, targets: dict[str, models.Loaded], queue: int = 8, drafts: tuple[str, ...] = (),
                 weights: tuple[str, ...] = (), engines: tuple[engine_config.Peer, ...] = ()):
        """targets: the loaded models, by spec (the first is the default); drafts, weights: what requests
        may name besides the shipped ones; engines: the production engine peers requests may name (the
        operator's lists)."""
        if not targets:
            raise ValueError("the service needs at least one model")
        self.runner = runner.Runner(queue=queue, loaded=targets)
        self.allowed_drafts, self.allowed_weights = set(drafts), set(weights)
        self.engines = {peer.name: peer for peer in engines}

    def engine(self, r: EngineRequest) -> dict:
        """One prompt on a named engine peer and its baseline (paradec.production.workload.one)."""
        if r.engine not in self.engines:
            raise methods.InputError(f"engine {r.engine!r} is not served here ({', '.join(self.engines) or 'none'})")
        validate(r.prompt, r.max_new_tokens, r.temperature, r.top_p, 0, r.seed)
        settings = {**r.model_dump(exclude={"engine", "prompt"}), "top_k": 0}
        peer = self.engines[r.engine]
        try:
            return workload.one(peer, r.prompt, settings)
        except engine_config.EngineError as e:  # where the engines are is the operator's, as in /engines
            raise engine_config.EngineError(_hide_urls(peer, str(e))) from None

    def health(self) -> dict:
        """Up, what it serves, its queues, and whether its CPU runs decode with paradec's C++ kernel."""
        return {"status": "ok", "models": [self._describe(spec) for spec in self.runner.specs()],
                "queues": self.queues(), "kernel": kernels.state()}

    def queues(self) -> dict:
        return {spec: self.runner.lane(spec).status() for spec in self.runner.specs()}

    def _describe(self, spec: str) -> dict:
        t = self.runner.target(spec)
        return {"spec": spec, "name": t.name, "device": t.device, "dtype": t.dtype, "weights": t.weights,
                "drafts": [d.name for d in self.runner.drafts(spec)]}

    def run(self, r: RunRequest, gone: Callable[[], bool] = lambda: False) -> tuple[Trace, dict]:
        """Validate, wait for the target's turn, decode: (the trace, queue headers). gone() says that
        the client left: then the run raises Cancelled at its next step (or while waiting)."""
        spec = self._target(r.model)
        request = runner.Request(**{**r.model_dump(), "model": spec})
        self._check_weights(r.method, request.check())  # before queueing: a bad request never waits
        request = dataclasses.replace(request, draft=self._draft_spec(r, spec))

        def check(_=None) -> None:
            if gone():
                raise Cancelled("the client went away")

        trace, turn = self.runner.run(request, on_step=check, on_wait=check)
        return trace, {"X-Paradec-Ahead": str(turn.ahead), "X-Paradec-Wait-S": f"{turn.waited_s:.3f}"}

    def run_batch(self, r: BatchRequest, gone: Callable[[], bool] = lambda: False) -> tuple[list[Trace], dict]:
        """run() for several prompts decoded as one batch: (a trace per prompt, queue headers)."""
        spec = self._target(r.model)
        first = r.prompts[0] if r.prompts else ""  # the runner checks every prompt, and their number
        request = runner.Request(**{**r.model_dump(exclude={"prompts"}), "prompt": first, "model": spec})
        self.runner.check_batch(request, r.prompts)  # before queueing: a bad batch never waits
        self._check_weights(r.method, request.check())
        request = dataclasses.replace(request, draft=self._draft_spec(r, spec))

        def check(*_) -> None:
            if gone():
                raise Cancelled("the client went away")

        traces, turn = self.runner.run_batch(request, r.prompts, on_step=check, on_wait=check)
        return traces, {"X-Paradec-Ahead": str(turn.ahead), "X-Paradec-Wait-S": f"{turn.waited_s:.3f}"}

    def _check_weights(self, method: str, params: dict) -> None:
        """A parameter that names weights takes the shipped ones or one the operator listed: nothing
        is opened (a path) or fetched (a hub id) for a request, so the answer is the same whether the
        file exists or not, and no file's contents reach the caller."""
        listed = ", ".join(sorted(self.allowed_weights)) or "none"
        for name, value in methods.weights_named(method, params).items():
            if value not in self.allowed_weights:
                raise methods.InputError(f"{name} {value!r} is not served here: the shipped weights (leave it "
                                         f"out), or one named at start-up ({listed})")

    def _target(self, spec: str | None) -> str:
        return pick({s: s for s in self.runner.specs()}, spec)

    def _draft_spec(self, r: RunRequest, target: str) -> str | None:
        """Drafts are loaded on request, but only cheap or known ones: a request must not make the
        service download or read whatever it names."""
        if not methods.needs_draft_model(r.method):
            return None
        spec = r.draft or models.default_draft(target)
        if not spec:
            raise methods.InputError(f"{r.method} needs a draft for {target!r}: self:N, or one of "
                                     f"{sorted(self.allowed_drafts) or 'none'} (named at start-up)")
        if not (spec.startswith("self:") or spec == models.TRAINED or spec in self.allowed_drafts):
            raise methods.InputError(f"draft {spec!r} is not served here: self:N, trained, or one named at start-up "
                                     f"({', '.join(sorted(self.allowed_drafts)) or 'none'})")
        return spec


def _hide_urls(peer: engine_config.Peer, message: str) -> str:
    """An engine's error with its URLs as names (<vllm>, <baseline>): the longer first, should one extend the other."""
    names = {peer.url: f"<{peer.name}>", **({peer.baseline: "<baseline>"} if peer.baseline else {})}
    for url in sorted(names, key=len, reverse=True):
        message = message.replace(url, names[url])
    return message


def pick(served: dict, spec: str | None):
    """What a request's model names among those served (default: the first), or one line."""
    if spec is None:
        return next(iter(served.values()))
    if spec not in served:
        raise methods.InputError(f"model {spec!r} is not served here (served: {', '.join(served)})")
    return served[spec]


def create_app(service: Service) -> FastAPI:
    """The HTTP API over a Service, or anything with its health, queues, run, engines and engine
    (paradec.serving.ray_serve's, whose runs Ray Serve replicas decode)."""
    app = FastAPI(title="paradec", description=__doc__)
    app.state.service = service

    @app.get("/health")
    def health() -> dict:
        return service.health()

    @app.get("/queue")
    def queue() -> dict:
        return service.queues()

    @app.get("/methods")
    def described() -> list:
        """Every method a request may name, with its parameters, as paradec.catalog describes them."""
        return [method_json(m) for m in catalog.METHODS.values()]

    def post(path: str, schema, call, body):
        """An endpoint that decodes: schema's body in, call(request, gone) in a worker thread, body(result) out."""
        @app.post(path, openapi_extra={"requestBody": {"content": {"application/json": {
            "schema": with_methods(schema.model_json_schema())}}, "required": True}})
        async def endpoint(request: Request) -> Response:
            return await _decode(request, schema, call, body)
        return endpoint

    # Trace.to_json, not JSONResponse: the trace's own format, which Trace.from_json reads back
    post("/run", RunRequest, service.run, lambda trace: trace.to_json())
    post("/batch", BatchRequest, service.run_batch,
         lambda traces: '{"traces": [' + ", ".join(t.to_json() for t in traces) + "]}")

    @app.get("/engines")
    def engines() -> list:  # what each is, not where: the URLs are the operator's
        return [{"name": p.name, "kind": p.kind, "model": p.model, "method": p.method, "matching": p.matching,
                 "baseline": bool(p.baseline)} for p in service.engines.values()]

    @app.post("/engine")
    async def engine_endpoint(request: Request) -> Response:
        """One prompt on an engine peer: 400 for what paradec refuses, 502 for an engine that fails."""
        try:
            r = EngineRequest.model_validate_json(await _body(request))
            return JSONResponse(await run_in_threadpool(service.engine, r))
        except TooLarge as e:
            return _error(413, str(e))
        except ValidationError as e:
            return _error(422, _one_line(e))
        except methods.InputError as e:
            return _error(400, str(e))
        except engine_config.EngineError as e:
            return _error(502, str(e))

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:  # 404, 405: the same one line
        return _error(e.status_code, str(e.detail), e.headers)

    return app


class TooLarge(ValueError):
    """A request body over MAX_BODY."""


async def _decode(request: Request, schema, call, body) -> Response:
    """The body is read here, not by FastAPI: capped in size, and every malformed one (nested past pydantic's
    limit included) gets the service's one-line 422."""
    try:
        r = schema.model_validate_json(await _body(request))
    except ClientDisconnect:
        return _error(499, "the client went away")
    except TooLarge as e:
        return _error(413, str(e))
    except ValidationError as e:
        return _error(422, _one_line(e))
    gone = threading.Event()
    watch = asyncio.create_task(_watch(request, gone))
    try:  # in a worker thread: a run takes seconds; the event loop keeps serving /queue
        result, headers = await run_in_threadpool(call, r, gone.is_set)
    except Cancelled as e:  # nobody is listening; 499 is what proxies log for it
        return _error(499, str(e))
    except OutOfMemory as e:  # the request was valid, this machine cannot hold it; its memory is freed
        return _error(507, str(e))
    except (methods.InputError, models.ModelError) as e:
        return _error(400, str(e))
    except QueueFull as e:
        return _error(429, str(e), {"Retry-After": "5"})
    except Unavailable as e:
        return _error(503, str(e), {"Retry-After": "5"})
    finally:  # also when the server cancels this handler: the run stops at its next step
        gone.set()
        watch.cancel()
    return Response(body(result), media_type="application/json", headers=headers)


async def _body(request: Request) -> bytes:
    """The request body, read no further than MAX_BODY (a 100 MB body is refused, not read)."""
    too_large = TooLarge(f"the request body is larger than {MAX_BODY // 2**20} MiB")
    if int(request.headers.get("content-length") or 0) > MAX_BODY:
        raise too_large
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


async def _watch(request: Request, gone: threading.Event) -> None:
    """Set `gone` once the client disconnects (the server sees its connection close)."""
    while not await request.is_disconnected():
        await asyncio.sleep(WATCH_S)
    gone.set()


def _error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": public(message)}, status_code=status, headers=headers)


def public(message: str) -> str:
    """An error's message as a client may read it: one line, cut at MAX_ERROR characters, and no
    folder of this machine's (PRIVATE) in it."""
    for folder, shown in PRIVATE:
        message = message.replace(folder, shown)
    return methods.one_line(message, MAX_ERROR)


def _one_line(e: ValidationError) -> str:
    """Pydantic's first complaint, e.g. "max_new_tokens: Input should be a valid integer"."""
    err = e.errors()[0] if e.errors() else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else err["msg"]


def serve_command(args) -> int:
    """Load every --model (and --draft for each) once, then serve until interrupted."""
    import uvicorn

    if args.queue < 0 or not 0 <= args.port <= 65535:
        raise methods.InputError("--queue must be 0 or more and --port between 0 and 65535")
    try:
        engines = tuple(engine_config.parse_all(args.engine))
    except engine_config.EngineError as e:
        raise methods.InputError(f"--engine: {e}") from None
    targets = {spec: models.load(spec, args.device, args.dtype,
                                 weights=gguf.pick_weights(spec, args.device, args.model_weights, args.dtype))
               for spec in args.model or [models.EMBEDDED]}
    service = Service(targets, args.queue, tuple(args.draft), tuple(args.weights), engines)
    for target in service.runner.specs():
        for spec in args.draft:
            service.runner.draft(spec, target)
    uvicorn.run(create_app(service), host=args.host, port=args.port, log_level="info")
    return 0
