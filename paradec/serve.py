"""python -m paradec serve: decoders on this machine behind HTTP, so a CPU front end can drive a GPU box.

GET /health: status, the loaded models, every model's queue. GET /queue: the queues alone.
POST /run: {method, prompt, max_new_tokens, temperature, top_p, top_k, seed, params, draft, model, chat}
-> the trace, in paradec.trace's own JSON (Trace.from_json reads it); the queue position the run
found and its wait come back in the X-Paradec-Ahead and X-Paradec-Wait-S headers.
Bad requests get 4xx and {"error": "one line"}; a run the device has no memory for, 507.

Targets are loaded once at start-up and shared read-only; each run keeps its own KV cache and
waits its turn in its target's lane (one run at a time per model, a bounded line behind it).
Everything lives in the Service object that create_app builds: no module state."""
from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict

from . import lora, methods, models
from .lanes import Lane, QueueFull
from .run import OutOfMemory, run, validate
from .trace import Trace

MAX_DRAFTS = 4  # drafts kept per target: self:N for every N would fill the memory


class RunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # a typo'd field or "64" for 64 is an error

    method: str
    prompt: str
    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 0
    params: dict[str, str | bool | int | float] = {}
    draft: str | None = None  # sps: self:N, trained (the embedded model's), or one named at start-up
    model: str | None = None  # which loaded target (default: the first)
    chat: bool = True


class Target:
    """One loaded target, its lane, and the drafts loaded for it (touched only inside the lane)."""

    def __init__(self, spec: str, loaded: models.Loaded, queue: int):
        self.spec, self.loaded, self.lane = spec, loaded, Lane(queue)
        self.drafts: dict[str, models.Loaded] = {}
        self.tuned: dict[str, models.Loaded] = {}  # fine-tuned copies (cllm's), by deltas folder

    def decodes_on(self, method: str, params: dict) -> models.Loaded:
        folder = lora.needed(method, params)
        if folder is None:
            return self.loaded
        if str(folder) not in self.tuned:
            self.tuned[str(folder)] = lora.target_for(self.loaded, method, params)
        return self.tuned[str(folder)]

    def draft(self, spec: str) -> models.Loaded:
        if spec not in self.drafts:
            if len(self.drafts) >= MAX_DRAFTS:
                self.drafts.pop(next(iter(self.drafts)))
            self.drafts[spec] = models.load_draft(spec, self.loaded)
        return self.drafts[spec]


class Service:
    def __init__(self, targets: dict[str, models.Loaded], queue: int = 8, drafts: tuple[str, ...] = ()):
        if not targets:
            raise ValueError("the service needs at least one model")
        self.targets = {spec: Target(spec, loaded, queue) for spec, loaded in targets.items()}
        self.allowed_drafts = set(drafts)

    def health(self) -> dict:
        return {"status": "ok", "models": [self._describe(t) for t in self.targets.values()], "queues": self.queues()}

    def queues(self) -> dict:
        return {spec: t.lane.status() for spec, t in self.targets.items()}

    def _describe(self, t: Target) -> dict:
        return {"spec": t.spec, "name": t.loaded.name, "device": t.loaded.device, "dtype": t.loaded.dtype,
                "drafts": [d.name for d in list(t.drafts.values())]}  # list(): one C call, safe while a run adds one

    def run(self, r: RunRequest) -> tuple[Trace, dict]:
        """Validate, wait for the target's turn, decode: (the trace, queue headers)."""
        target = self._target(r.model)
        validate(r.prompt, r.max_new_tokens, r.temperature, r.top_p, r.top_k, r.seed)
        params = methods.parse_params(r.method, r.params)  # checked before queueing: a bad request never waits
        if lora.needed(r.method, params) != lora.needed(r.method, {}):  # a request must not name files to read
            raise methods.InputError(f"{r.method}: only the shipped fine-tuned weights are served here")
        draft_spec = self._draft_spec(r, target)
        with target.lane.turn() as turn:
            draft = target.draft(draft_spec) if draft_spec else None
            model = target.decodes_on(r.method, params)  # cllm: a fine-tuned copy of the target
            trace = run(model, r.method, r.prompt, r.params, r.max_new_tokens, r.temperature, r.top_p, r.top_k,
                        r.seed, draft, chat=r.chat)
        return trace, {"X-Paradec-Ahead": str(turn.ahead), "X-Paradec-Wait-S": f"{turn.waited_s:.3f}"}

    def _target(self, spec: str | None) -> Target:
        if spec is None:
            return next(iter(self.targets.values()))
        if spec not in self.targets:
            raise methods.InputError(f"model {spec!r} is not served here (served: {', '.join(self.targets)})")
        return self.targets[spec]

    def _draft_spec(self, r: RunRequest, target: Target) -> str | None:
        """Drafts are loaded on request, but only cheap or known ones: a request must not make the
        service download or read whatever it names."""
        if not methods.needs_draft_model(r.method):
            return None
        spec = r.draft or models.default_draft(target.spec)
        if not spec:
            raise methods.InputError(f"{r.method} needs a draft for {target.spec!r}: self:N, or one of "
                                     f"{sorted(self.allowed_drafts) or 'none'} (named at start-up)")
        if not (spec.startswith("self:") or spec == models.TRAINED or spec in self.allowed_drafts):
            raise methods.InputError(f"draft {spec!r} is not served here: self:N, trained, or one named at start-up "
                                     f"({', '.join(sorted(self.allowed_drafts)) or 'none'})")
        return spec


def create_app(service: Service) -> FastAPI:
    app = FastAPI(title="paradec", description=__doc__)
    app.state.service = service

    @app.get("/health")
    def health() -> dict:
        return service.health()

    @app.get("/queue")
    def queue() -> dict:
        return service.queues()

    @app.post("/run")
    def run_endpoint(r: RunRequest) -> Response:  # a plain def: FastAPI runs it in a worker thread
        try:
            trace, headers = service.run(r)
        except OutOfMemory as e:  # the request was valid, this machine cannot hold it; its memory is freed
            return _error(507, str(e))
        except (methods.InputError, models.ModelError) as e:
            return _error(400, str(e))
        except QueueFull as e:
            return _error(429, str(e), {"Retry-After": "5"})
        # Trace.to_json, not JSONResponse: the trace's own format, which Trace.from_json reads back
        return Response(trace.to_json(), media_type="application/json", headers=headers)

    @app.exception_handler(RequestValidationError)
    def invalid(request: Request, e: RequestValidationError) -> JSONResponse:
        return _error(422, _one_line(e))

    return app


def _error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _one_line(e: RequestValidationError) -> str:
    """Pydantic's first complaint, e.g. "max_new_tokens: Input should be a valid integer"."""
    err = e.errors()[0] if e.errors() else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in err["loc"] if p != "body")
    return f"{where}: {err['msg']}" if where else err["msg"]


def serve_command(args) -> int:
    """Load every --model (and --draft for each) once, then serve until interrupted."""
    import uvicorn

    if args.queue < 0 or not 0 <= args.port <= 65535:
        raise methods.InputError("--queue must be 0 or more and --port between 0 and 65535")
    targets = {spec: models.load(spec, args.device, args.dtype) for spec in args.model or [models.EMBEDDED]}
    service = Service(targets, args.queue, tuple(args.draft))
    for target in service.targets.values():
        for spec in args.draft:
            target.draft(spec)
    uvicorn.run(create_app(service), host=args.host, port=args.port, log_level="info")
    return 0
