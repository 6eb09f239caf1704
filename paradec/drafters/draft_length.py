"""How long a chain draft gets: the rules a drafting method asks after each drafted token.

Every rule answers continue_after(position, q): draft another token after the one at
`position` (0 = the first of this step), whose draft distribution was q? and hears
update(accepted, drafted) after the verify pass. k is the most tokens a step drafts.

- fixed: always k tokens.
- heuristic: k grows by 2 after a fully accepted draft and shrinks by 1 after a rejection
  (between 1 and MAX_K, or a static tree's depth), the schedule Hugging Face's assisted generation uses.
- confidence: stop once the draft's top probability falls below the threshold.
- learned: a logistic regression on what the drafter sees (q's top probability, the margin to
  the second, q's entropy, the position) predicts the chance that the target accepts the token
  given that the ones before it were accepted; the product along the chain is the chance that
  the token is committed at all, and drafting stops when it falls below the threshold
  (SpecDec++'s stopping rule, with a smaller predictor). Trained by `python -m paradec.train stop`.

Each rule keeps `chances`: per drafted token of the current step, the number it compared
with the threshold (None where it compares none), so traces can show why a draft stopped.

Who asks. Chain drafters (sps, early_exit, mirror) draft with `chain`. Tree drafters ask along one
path, the most likely branch, with `reach`: EAGLE-2/3 before growing each depth (position =
depth - 1), EAGLE-1 to cut its static tree, Medusa to keep the first depths of its heads'
tree. Their k counts depths, and `most` caps what the heuristic grows to (a static tree's depth)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from ..catalog import MAX_K
from ..core.records import DraftLength

FEATURES = ("q_max", "margin", "entropy", "position")
SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "drafters" / "sps-smollm2" / "stop.json"


def features(position: int, q: torch.Tensor) -> list[float]:
    """The predictor's inputs for one drafted token, in FEATURES' order."""
    top = torch.topk(q, min(2, q.shape[-1])).values.tolist() + [0.0]
    entropy = float(torch.special.entr(q).sum())  # entr(0) = 0: tokens outside a draft's subset add nothing
    return [top[0], top[0] - top[1], entropy, float(position)]


class Predictor:
    """P(the target accepts a drafted token | the tokens before it were accepted) =
    sigmoid(bias + weights · features)."""

    def __init__(self, weights: list[float], bias: float):
        if len(weights) != len(FEATURES) or not all(map(math.isfinite, [*weights, bias])):
            raise ValueError(f"a stop predictor has {len(FEATURES)} finite weights ({', '.join(FEATURES)}) and a bias")
        self.weights, self.bias = [float(w) for w in weights], float(bias)

    def chance(self, position: int, q: torch.Tensor) -> float:
        z = self.bias + sum(w * x for w, x in zip(self.weights, features(position, q)))
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0  # math.exp overflows past ~709

    @classmethod
    def load(cls, path: Path = SHIPPED) -> Predictor:
        try:
            data = json.loads(Path(path).read_text())
            if data.get("features") != list(FEATURES):
                raise ValueError(f"features {data.get('features')} are not {list(FEATURES)}")
            return cls(data["weights"], data["bias"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ValueError(f"cannot load the stop predictor {path} (train one: python -m paradec.train stop): {e}") \
                from None


class Fixed:
    name = "fixed"

    def __init__(self, k: int, threshold: float = 0.0, predictor: Predictor | None = None, most: int = MAX_K):
        self.k, self.threshold, self.predictor, self.most = k, threshold, predictor, most
        self.chances: list[float | None] = []

    def continue_after(self, position: int, q: torch.Tensor) -> bool:
        if position == 0:
            self.chances = []
        self.chances.append(self._chance(position, q))
        return position + 1 < self.k and self._keep_going()

    def _chance(self, position: int, q: torch.Tensor) -> float | None:
        return None

    def _keep_going(self) -> bool:
        return True

    def update(self, accepted: int, drafted: int) -> None:
        """accepted of the drafted tokens passed verification."""

    def record(self, length: int, kind: type[DraftLength] = DraftLength, /, **more) -> DraftLength:
        """A step's record of kind (a records.DraftLength, the rule's part, with the method's `more`):
        the rule's k, the length it drafted, and what it compared with the threshold."""
        compared = any(c is not None for c in self.chances)
        return kind(k=self.k, draft_length=length, chance=[round(c, 4) for c in self.chances] if compared else None,
                    **more)


class Heuristic(Fixed):
    name = "heuristic"

    def update(self, accepted: int, drafted: int) -> None:
        # A fully accepted draft says the draft is on an easy stretch: reach further.
        self.k = min(self.most, self.k + 2) if accepted == drafted else max(1, self.k - 1)


class Confidence(Fixed):
    name = "confidence"

    def _chance(self, position: int, q: torch.Tensor) -> float:
        return float(q.max())

    def _keep_going(self) -> bool:
        return self.chances[-1] >= self.threshold


class Learned(Fixed):
    name = "learned"

    def _chance(self, position: int, q: torch.Tensor) -> float:
        """The predicted chance that this token is committed: the product along the chain."""
        before = self.chances[-1] if position > 0 else 1.0
        return before * self.predictor.chance(position, q)

    def _keep_going(self) -> bool:
        return self.chances[-1] >= self.threshold


RULES = {r.name: r for r in (Fixed, Heuristic, Confidence, Learned)}
SCHEDULES = tuple(RULES)


def make(name: str, k: int, threshold: float, predictor: Predictor | None = None, most: int = MAX_K) -> Fixed:
    if name == "learned" and predictor is None:
        raise ValueError("draft_length=learned needs a stop predictor")
    return RULES[name](k, threshold, predictor, most)


class Schedule:
    """A drafter's draft_length and threshold parameters, checked once; a fresh rule per run.
    The learned rule reads stop_file (a trained draft's own predictor) or the shipped one: its
    features mean the same for every draft distribution."""

    def __init__(self, name: str, k: int, threshold: float, most: int = MAX_K, stop_file: Path | None = None):
        if name not in SCHEDULES:
            raise ValueError(f"draft_length must be one of {', '.join(SCHEDULES)}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("threshold must be between 0 and 1")
        self.name, self.k, self.threshold, self.most = name, k, threshold, most
        self.predictor = Predictor.load(stop_file or SHIPPED) if name == "learned" else None

    def rule(self) -> Fixed:
        return make(self.name, self.k, self.threshold, self.predictor, self.most)


def chain(continue_after, logits_after, feed: list[int], sampler, gen) -> tuple[list[int], list[torch.Tensor]]:
    """Draft a chain until continue_after(position, q) (a rule's) says stop: logits_after(tokens)
    gives the draft's logits after feeding it those tokens. -> the tokens and the q each was picked from."""
    tokens, qs = [], []
    while True:
        q = sampler.probs(logits_after(feed))
        tokens.append(sampler.pick(q, gen))
        qs.append(q)
        feed = tokens[-1:]
        if not continue_after(len(tokens) - 1, q):
            return tokens, qs



def reach(rule: Fixed, qs: list[torch.Tensor]) -> int:
    """Tree drafters: how many depths the rule drafts along one path, given the q each of its
    tokens was picked from, root first (asked afresh: the rule's chances become this path's).
    len(qs) + 1 means it would go deeper."""
    for i, q in enumerate(qs):
        if not rule.continue_after(i, q):
            return i + 1
    return len(qs) + 1
