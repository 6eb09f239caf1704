"""A method written for a test, as a newcomer would add one: this drafter file and its description
(test_new_method.py) and nothing else. It proposes the token that followed the pending token's last
earlier occurrence, a chain of up to k such guesses: a greedy n-gram toy."""
from paradec import catalog
from paradec.core.drafter import Drafter
from paradec.core.steps import Draft

DESCRIPTION = catalog.Method(
    "bigram", "toy_bigram:Bigram", "copy", "the token that followed the pending token last time, chained",
    (catalog.Param("k", int, 3, "tokens a step guesses", 1, 8, label="k (guesses)", tune=(2, 4, 8)),))


class Bigram(Drafter):
    name = "bigram"

    def __init__(self, *, k: int):
        self.params = dict(k=k)

    def propose(self, ctx, sampler, gen) -> Draft:
        follow = {a: b for a, b in zip(ctx, ctx[1:])}  # the latest successor of each token
        tokens, last = [], ctx[-1]
        while len(tokens) < self.params["k"] and last in follow:
            last = follow[last]
            tokens.append(last)
        return Draft(tokens=tokens, parents=list(range(-1, len(tokens) - 1)))
