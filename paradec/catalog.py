"""Every method described once, with no torch: its family, a one-line summary, its parameters (type, default,
range or choices, help, whether the device sizes it, whether it names weights), whether it is lossless and
what it needs. `paradec.methods.parse_params` checks a request's parameters against it (once, for the CLI, the
service and the app alike), `paradec.methods.resolve` fills what a request leaves out with its defaults (the
only ones: a drafter's arguments have none), the pages build their controls from it (ui.controls) and the
device profile sizes only what it marks. A new parameter is written here once (tests/test_catalog.py
checks that every drafter argument, page control and CLI option comes from here)."""
from __future__ import annotations

from dataclasses import dataclass

from .core import records

MAX_K = 16  # no rule drafts more than this many tokens in one step
RULES = ("fixed", "heuristic", "confidence", "learned")  # paradec.drafters.draft_length


@dataclass(frozen=True)
class Param:
    name: str
    kind: type  # int, float, bool or str
    default: object
    help: str
    low: float | None = None  # numbers: the inclusive range
    high: float | None = None
    choices: tuple = ()  # strings with a fixed set of values
    sized: bool = False  # the device profile (paradec.tuning.presets) sizes it when a run leaves it out
    weights: bool = False  # names weights: a service takes only operator-listed values, besides `spare`
    spare: tuple = ()  # the values of a weights parameter that name no file ("": the shipped weights)
    label: str = ""  # a page control's label (the name when empty)
    step: float | None = None  # a page slider's step (floats)
    tune: tuple = ()  # the values `python -m paradec tune` tries (paradec.tuner.tune); empty: it leaves this one alone
    when: tuple = ()  # (another parameter, its values) under which this one matters; the tuner varies it only then

    def check(self, value) -> None:
        """ValueError (one line) when value is outside the range or the choices."""
        if self.choices and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(map(str, self.choices))}, got {value!r}")
        if self.low is not None and not self.low <= value <= self.high:
            raise ValueError(f"{self.name} must be between {_num(self.low)} and {_num(self.high)}, got {value!r}")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclass(frozen=True)
class Ask:
    """A predict question the method's page asks before it reveals a verify pass, computed from the step's record
    by paradec.learn.questions: its kind (accepted, branch, keep, bet) and, when the kind's words do not fit the
    method, its own (English; {drafted}, {pending} and the kind's values filled in)."""
    kind: str
    text: str = ""


@dataclass(frozen=True)
class Exercise:
    """An exercise the method's page ends with, checked against a shipped trace (paradec.learn.exercises): its kind,
    the recorded trace's name in assets/traces, and a second one for the kinds that compare two."""
    kind: str
    trace: str
    other: str = ""


def _ex(trace: str, *kinds: str) -> tuple[Exercise, ...]:
    return tuple(Exercise(k, trace) for k in kinds)


@dataclass(frozen=True)
class Method:
    name: str
    drafter: str  # its drafter class, "module:Class" (a module of paradec.drafters, or any importable one)
    family: str  # draft model | heads | self-speculative | guess and iterate | copy | baseline
    summary: str
    params: tuple[Param, ...] = ()
    lossless: str = "yes"  # "yes", or why not / when not
    needs: str = ""  # "draft" (a draft model), "heads" (trained weights over the target), "deltas" (a fine-tuned copy)
    reads_target: bool = False  # the drafter is built with the target model (its LM head, layers or device)
    record: type[records.Record] | None = None  # what its steps record of their own (None: nothing)
    # Its page in the app. Methods that share one (EAGLE-1/2/3) name the same page; its first method gives the
    # title, icon and link. A method without a page file of its own (views/<page>.py) gets the generic page.
    page: str = ""  # the page's url path (default: the method's name)
    title: str = ""  # the page's title in the sidebar (default: the method's name)
    icon: str = ":material/science:"  # the sidebar's icon
    link: str = ""  # its label on Home's map of the pages (default: the title)
    version: str = ""  # its name in its page's version picker ("EAGLE-2"); none: its page's first method replays it
    uses: str = ""  # the GPU presets' model it reads besides the target, by role (paradec.tuning.presets)
    questions: tuple[Ask, ...] = ()  # what predict mode asks at a step (the first that applies, in turn)
    exercises: tuple[Exercise, ...] = ()  # its page's exercises (a page shows those of every method on it)
    # Where its page opens: the first of these recorded runs (assets/traces/METHOD-NAME.json) with a step the rule
    # finds (paradec.learn.opening: chain, tree, block, window, any), at that step.
    opens_on: tuple[str, ...] = ("greedy",)
    opening: str = "chain"

    def __post_init__(self):  # what a description leaves out: its page is its own, named after the method
        object.__setattr__(self, "page", self.page or self.name)
        object.__setattr__(self, "title", self.title or self.name)
        object.__setattr__(self, "link", self.link or self.title)

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    @property
    def greedy_is_targets(self) -> bool:
        """Greedy decoding gives the target's own text (every method but one that decodes a fine-tuned copy)."""
        return self.needs != "deltas"


def pages() -> dict[str, Method]:
    """url path -> the first method on that page, in the catalogue's order (the app's navigation)."""
    out: dict[str, Method] = {}
    for m in METHODS.values():
        out.setdefault(m.page, m)
    return out


def on_page(path: str) -> list[Method]:
    """The methods a page shows, in the catalogue's order."""
    return [m for m in METHODS.values() if m.page == path]


def _rule(threshold: float) -> tuple[Param, ...]:
    """A draft-length rule's two parameters (paradec.drafters.draft_length), shared by five methods."""
    return (Param("draft_length", str, "fixed", "how long a step's draft gets: fixed, the +2/-1 heuristic, a "
                  "confidence cutoff, or a learned predictor of acceptance (as in Pacer)", choices=RULES,
                  label="draft length rule", tune=RULES),
            Param("threshold", float, threshold, "confidence: stop below this draft probability; learned: below "
                  "this predicted chance of being committed", 0.0, 1.0, label="threshold", step=0.05,
                  tune=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6), when=("draft_length", ("confidence", "learned"))))


WEIGHTS_HELP = "a folder of trained weights (empty: the shipped ones for the embedded model)"
TREE_HELP = "a preset's name, or rank paths as JSON, e.g. [[0], [0, 0], [1]]"
def _eagle_dynamic(lookup: int) -> tuple[Param, ...]:
    """EAGLE-2/3's parameters; lookup: the default of the prompt-lookup branch's length (0: none)."""
    return (
        Param("head", str, "", WEIGHTS_HELP, weights=True, spare=("",)),
        Param("depth", int, 4, "draft steps: depths the tree grows", 1, MAX_K, sized=True,
              label="depth (draft steps)", tune=(2, 3, 4, 5, 6, 8)),
        Param("top_k", int, 4, "candidates expanded per depth, and children per candidate", 1, 16, sized=True,
              label="top_k (expanded per depth)", tune=(2, 3, 4, 6, 8)),
        Param("total_tokens", int, 11, "candidates kept for the verify pass (12 rows: one register block on a CPU)",
              1, 256, sized=True, label="total_tokens (verified)", tune=(4, 6, 8, 11, 16, 24, 32, 48, 64)),
        Param("lookup", int, lookup, "the most tokens a prompt-lookup branch (what followed the last n-gram's "
              "earlier occurrence) adds beside the tree, verified in the same pass; 0: none", 0, 64,
              label="prompt-lookup branch (tokens)", tune=(0, 4, 8)),
        *_rule(0.3),
    )

# Predict mode's questions: a chain's, and a tree's (paradec.learn.questions)
CHAIN = (Ask("accepted"), Ask("keep"))
TREE = (Ask("branch"), Ask("accepted", "Predict: how deep will the accepted path go in this {drafted}-node tree?"),
        Ask("keep"))
JACOBI = (Ask("accepted", "Predict: how many of the block's {drafted} guesses reach their fixed point in this pass?"),)

METHODS: dict[str, Method] = {m.name: m for m in (
    Method("ar", "paradec.core.drafter:Drafter", "baseline", "one token per target forward",
           title="Autoregressive (AR)", icon=":material/looks_one:", link="AR: one pass per token", opening="any"),
    Method("sps", "sps:SpeculativeSampling", "draft model",
           "a draft model proposes a chain; rejection sampling keeps the target's distribution",
           (Param("k", int, 4, "tokens a step drafts (the most a rule drafts)", 1, MAX_K, sized=True,
                  label="k (draft length)", tune=(2, 3, 4, 5, 6, 8)), *_rule(0.4)), needs="draft",
           record=records.DraftLength, title="Speculative sampling", icon=":material/call_split:", uses="draft",
           questions=CHAIN,
           exercises=_ex("sps-fixed", "tau", "alpha", "formula", "versus") + _ex("sps-sampled", "keep"),
           opens_on=("fixed", "greedy")),
    Method("pld", "pld:PromptLookup", "copy",
           "prompt lookup: copies what followed the last n-gram's earlier occurrence",
           (Param("k", int, 8, "tokens copied at most", 1, 64, label="k (tokens copied at most)",
                  tune=(2, 4, 6, 8, 10, 16)),
            Param("ngram_max", int, 3, "the longest n-gram looked up", 1, 16, label="longest n-gram", tune=(2, 3, 4)),
            Param("ngram_min", int, 1, "the shortest n-gram looked up", 1, 16, label="shortest n-gram")),
           record=records.Pld, title="Prompt lookup", icon=":material/content_copy:",
           link="Prompt lookup: copy the prompt", questions=(
               Ask("accepted", "Predict: how many of the {drafted} copied tokens will the target keep?"), Ask("keep")),
           exercises=_ex("pld-greedy", "tau", "alpha", "idle") + _ex("pld-sampled", "keep")),
    Method("jacobi", "jacobi:Jacobi", "guess and iterate",
           "guesses a block; the target re-predicts it until a prefix is fixed",
           (Param("block", int, 8, "guesses per pass", 1, 64, label="block size n (guesses per pass)",
                  tune=(2, 4, 6, 8, 11, 16)),
            Param("init", str, "repeat", "the first guesses: the last token repeated, padding, or random context "
                  "tokens (seeded)", choices=("repeat", "pad", "random"), label="initial guess")),
           record=records.Jacobi, title="Jacobi decoding", icon=":material/grid_on:", link="Jacobi: iterate a block",
           questions=JACOBI, exercises=_ex("jacobi-greedy", "tau", "slower", "break_even"), opening="block"),
    Method("lookahead", "lookahead:Lookahead", "guess and iterate",
           "an n-gram pool filled by Jacobi iterations, verified in the same pass",
           (Param("window", int, 4, "window columns (W)", 1, 32, sized=True, label="W (window columns)",
                  tune=(1, 2, 3, 4, 5, 6, 8, 12)),
            Param("ngram", int, 3, "n-gram size (N)", 2, 8, sized=True, label="N (n-gram size)", tune=(2, 3, 4, 5)),
            Param("candidates", int, 2, "candidates verified (G)", 0, 32, sized=True,
                  label="G (candidates verified)", tune=(0, 1, 2, 3, 4, 6, 8))), record=records.Lookahead,
           title="Lookahead decoding", icon=":material/manage_search:", link="Lookahead: window + pool", questions=(
               Ask("accepted", "Predict: the pool offers {drafted} candidate tokens after {pending}. How many will "
                   "the target accept?"),),
           exercises=_ex("lookahead-greedy", "tau", "alpha", "pass_tokens", "pool_wins"), opening="window"),
    Method("medusa", "medusa:Medusa", "heads",
           "heads on the last hidden state guess later tokens; their top-k form a tree",
           (Param("heads", str, "", WEIGHTS_HELP, weights=True, spare=("",)),
            Param("tree", str, "", TREE_HELP + " (empty: the heads' own tree)", sized=True,
                  tune=("", "chain4", "small8", "cpu12", "wide16", "mc_sim_7b_63")),
            Param("acceptance", str, "exact", "exact rejection sampling, or Medusa-2's typical acceptance (LOSSY "
                  "when sampling)", choices=("exact", "typical"), label="Acceptance"),
            Param("epsilon", float, 0.09, "typical acceptance's hard threshold", 0.0, 1.0, step=0.01),
            Param("delta", float, 0.3, "typical acceptance's entropy-scaled threshold", 0.0, 10.0, step=0.05),
            *_rule(0.3)), lossless="yes (acceptance=typical: no, LOSSY when sampling)", needs="heads",
           reads_target=True, record=records.Medusa, icon=":material/account_tree:", link="Medusa: heads, a tree",
           title="Medusa", uses="medusa", questions=TREE, opening="tree",
           exercises=(*_ex("medusa-greedy", "tau", "alpha"),
                      Exercise("trees", "medusa-trees/chain4", "medusa-trees/wide16"), *_ex("medusa-sampled", "keep"))),
    Method("eagle", "eagle:Eagle", "heads", "EAGLE-1: a one-layer head drafts a static tree at the feature level",
           (Param("head", str, "", WEIGHTS_HELP, weights=True, spare=("",)),
            Param("tree", str, "cpu10", TREE_HELP, label="Static tree", tune=("chain4", "cpu10")), *_rule(0.3)),
           needs="heads", reads_target=True, record=records.Eagle, title="EAGLE-1/2/3",
           icon=":material/flight_takeoff:", link="EAGLE-1/2/3: feature drafts", version="EAGLE-1", uses="eagle",
           questions=TREE, opening="tree",
           exercises=(Exercise("trees", "eagle-greedy", "eagle2-greedy"), *_ex("eagle-greedy", "tau"))),
    Method("eagle2", "eagle:Eagle2", "heads",
           "EAGLE-2: the EAGLE-1 head, a dynamic tree (expand the likeliest, rerank)",
           _eagle_dynamic(0), needs="heads", reads_target=True, record=records.Eagle, page="eagle", title="EAGLE-1/2/3",
           version="EAGLE-2", uses="eagle", questions=TREE, opening="tree", exercises=_ex("eagle2-greedy", "alpha")),
    # The prompt-lookup branch is on by default for EAGLE-3: with and without it in one bench run, in
    # assets/bench/cpu-2core-eagle3-lookup.json (lookup=8 is not behind prompt lookup on any category).
    Method("eagle3", "eagle:Eagle3", "heads",
           "EAGLE-3: fused features, training-time test, a reduced vocabulary; EAGLE-2's tree, and a prompt-lookup "
           "branch beside it",
           _eagle_dynamic(8), needs="heads", reads_target=True, record=records.Eagle, page="eagle", title="EAGLE-1/2/3",
           version="EAGLE-3", uses="eagle3", questions=TREE, opening="tree", exercises=_ex("eagle3-sampled", "keep")),
    Method("early_exit", "early_exit:EarlyExit", "self-speculative",
           "the target's first layers plus a trained adapter draft a chain",
           (Param("k", int, 4, "tokens a step drafts (the most a rule drafts)", 1, MAX_K,
                  label="k (tokens drafted; the most a rule drafts)", tune=(2, 3, 4, 5, 6, 8)),
            Param("exit_layer", int, 2, "target layers the draft runs (fewer than the target has)", 1, 255,
                  label="exit layer"),
            Param("adapter", str, "", WEIGHTS_HELP + "; none: the plain early exit", weights=True,
                  spare=("", "none")), *_rule(0.4)),
           needs="heads", reads_target=True, record=records.EarlyExit, title="Early exit",
           icon=":material/exit_to_app:", link="Early exit: own layers draft", questions=CHAIN,
           exercises=_ex("early_exit-greedy", "tau", "alpha", "formula", "versus")),
    Method("cllm", "cllm:Cllm", "guess and iterate",
           "Jacobi decoding on a copy of the target fine-tuned on its Jacobi trajectories",
           (Param("block", int, 16, "guesses per pass (16, as trained)", 1, 64, label="block size n"),
            Param("init", str, "repeat", "the first guesses", choices=("repeat", "pad", "random")),
            Param("adapter", str, "", "a folder of LoRA deltas (empty: the shipped ones)", weights=True,
                  spare=("",))),
           lossless="no: its text is the fine-tuned model's (lossless relative to that model)", needs="deltas",
           record=records.Jacobi, page="jacobi", title="Jacobi decoding", questions=JACOBI, opening="block",
           exercises=_ex("cllm-greedy", "tau")),
    Method("mirror", "mirror:Mirror", "draft model",
           "sps's chain, and a worker drafting the next chain for the likeliest outcomes "
           "while the target verifies",
           (Param("k", int, 4, "tokens a step drafts", 1, MAX_K, label="k (draft length)", tune=(2, 3, 4, 6, 8)),
            Param("bets", int, 8, "outcomes drafted ahead", 1, 64, label="bets (outcomes drafted ahead)",
                  tune=(2, 4, 8, 16)),
            Param("parallel", bool, True, "the worker drafts in parallel (false: the sequential baseline)"),
            Param("draft_device", str, "same", "the worker's draft: on the target's device, or a CPU copy",
                  choices=("same", "cpu"), label="worker's draft on")), needs="draft", reads_target=True,
           record=records.Mirror, title="Parallel draft-and-verify", icon=":material/view_timeline:",
           link="Draft while verifying", uses="draft", questions=(Ask("accepted"), Ask("bet")),
           exercises=(*_ex("mirror-greedy", "tau", "bets"), Exercise("speed", "mirror-sequential", "mirror-greedy"))),
)}


def parse(desc: Method, pairs: list[str] | dict) -> dict:
    """THE parser of a run's parameters, for every entry point (the CLI's --set strings, a request's or a
    preset's JSON, the app's widgets): the ones given, typed and checked against the description; what they
    leave out stays out (paradec.methods.resolve fills it). ValueError, one line, for a bad one."""
    known = {p.name: p for p in desc.params}
    params = {}
    for key, value in (pairs.items() if isinstance(pairs, dict) else [_split(p) for p in pairs]):
        if key not in known:
            raise ValueError(f"unknown parameter {shown(key)} for method {desc.name!r} (its parameters: "
                             f"{', '.join(known) or 'none'})")
        params[key] = _coerce(key, value, known[key].kind)
        try:
            known[key].check(params[key])
        except ValueError as e:
            raise ValueError(f"{desc.name}: {e}") from None
    return params


def shown(value, limit: int = 60) -> str:
    """A value as an error message echoes it: its repr, cut short (a 5,000-digit value is not a message), and
    a huge integer in a few words (repr() of one past 4,300 digits raises)."""
    if isinstance(value, int) and abs(value) >= 10**30:
        return f"a number of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _split(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key:
        raise ValueError(f"--set expects KEY=VALUE, got {shown(pair)}")
    return key.strip(), value.strip()


def _coerce(key: str, value, kind: type):
    if not isinstance(value, str):  # already typed (the app's widgets, a JSON request or preset): check it
        if kind is float and type(value) is int:  # JSON writes 1.0 as 1
            return float(value)
        if type(value) is not kind:  # type(), not isinstance: True is not an int parameter
            raise ValueError(f"parameter {key!r} expects {kind.__name__}, got {shown(value)}")
        return value
    try:
        if kind is bool:
            if value.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return value.lower() in ("true", "1")
        return kind(value) if kind in (int, float) else value
    except ValueError:
        raise ValueError(f"parameter {key!r} expects {kind.__name__}, got {shown(value)}") from None


def help_text() -> str:
    """Every method and its parameters, as the CLI's help shows them (python -m paradec run --help)."""
    lines = ["methods and their parameters (--set KEY=VALUE):"]
    for m in METHODS.values():
        lines.append(f"  {m.name}: {m.summary}" + ("" if m.lossless == "yes" else f" [lossless: {m.lossless}]"))
        for p in m.params:
            allowed = ("|".join(map(str, p.choices)) if p.choices else
                       f"{_num(p.low)}..{_num(p.high)}" if p.low is not None else p.kind.__name__)
            lines.append(f"    {p.name}={p.default!r} ({allowed}): {p.help}")
    return "\n".join(lines)


def method(name: str) -> Method:
    """The description of a method; ValueError (one line) for an unknown name."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r} (choose from {', '.join(METHODS)})")
    return METHODS[name]
