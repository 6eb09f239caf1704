"""The self-distillation prompts at scale, none from the held-out split (python -m paradec.train prompts).

Four sources, covering Spec-Bench's 13 categories:
- Spec-Bench's training split (its second turns become follow-ups);
- task templates over seed topics (assets/data/seeds.json), category by category;
- self-instruct: the target writes questions about seed topics; the ones that read as a question are kept;
- the training split's passages (news articles, retrieved passages, German sentences) under new instructions,
  for summarization, extraction, RAG and translation.
A third of the prompts get a follow-up turn on the target's own answer. Exact duplicates are dropped, and so
is any prompt that shares a word 8-gram with a held-out prompt. Seeded: the same seed gives the same file."""
from __future__ import annotations

import json
import random
import re
import sys

import torch

from ..core.sampling import Sampler
from ..data import ASSETS, SPECBENCH, TRAIN_PROMPTS, first_turn, read_jsonl, split_of
from ..models import Loaded, encode_prompt, eos_ids
from ..traces.files import write_atomic
from .generate import generate

SEEDS = ASSETS / "data" / "seeds.json"
NGRAM = 8


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def ngrams(text: str, n: int = NGRAM) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def heldout_ngrams(rows: list[dict]) -> set[tuple[str, ...]]:
    """Every word 8-gram of every turn of the held-out split."""
    return {g for r in rows if split_of(r) == "heldout" for t in r.get("turns", []) for g in ngrams(t)}


def passages(train: list[dict]) -> dict[str, list[str]]:
    """Texts the templates ask about, from the training split only: articles and retrieved passages
    ("passage"), German sentences ("passage_de")."""
    out = {"passage": [], "passage_de": []}
    for r in train:
        text = first_turn(r) or ""
        if r.get("category") in ("summarization", "rag"):
            out["passage"].append(re.sub(r"^Summarize:\s*", "", text))
        elif r.get("category") == "translation":
            out["passage_de"].append(re.sub(r"^Translate German to English:\s*", "", text))
    return out


def from_templates(seeds: dict, texts: dict[str, list[str]], rng: random.Random) -> list[dict]:
    """Every template with every topic of its group; a passage template takes each passage once (the
    category's templates in turn), so that long prompts stay a minority."""
    rows = []
    for category, templates in seeds["templates"].items():
        for k, (group, template) in enumerate(templates):
            if group.startswith("passage"):
                chosen = texts[group][k::len(templates)]
                rows += [{"prompt": template.format(passage=p), "category": category} for p in chosen]
                continue
            for topic in seeds["topics"][group]:
                text = template.format(topic=topic, number=rng.randint(3, 40))
                rows.append({"prompt": text, "category": category})
    return rows


def self_instruct(target: Loaded, seeds: dict, seed: int, batch: int = 12) -> list[dict]:
    """The target asked for questions about each topic (sampled, two tries each); kept: the first sentence
    of its reply that ends with a question mark."""
    asks = [(group, t.format(topic=topic)) for group, t in seeds["self_instruct"] for topic in seeds["topics"][group]]
    asks = [a for a in asks for _ in range(2)]
    gen, eos, rows = torch.Generator().manual_seed(seed), eos_ids(target.tokenizer, target.model), []
    for i in range(0, len(asks), batch):
        part = asks[i:i + batch]
        ids = [encode_prompt(target.tokenizer, text) for _, text in part]
        out = generate(target.decoder, ids, 48, Sampler(temperature=0.9, top_p=0.95), gen, eos,
                       target.tokenizer.eos_token_id)
        for (group, _), answer in zip(part, out):
            question = _question(target.tokenizer.decode(answer, skip_special_tokens=True))
            if question:
                rows.append({"prompt": question, "category": "qa" if group != "code" else "coding"})
        print(f"\rself-instruct: {min(i + batch, len(asks))}/{len(asks)} asked, {len(rows)} kept", end="",
              file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return rows


def _question(reply: str) -> str | None:
    """The first sentence of a reply that is a question, without quotes around it; None when there is none."""
    for sentence in re.findall(r"[^.!?\n\"“”]+\?", reply):
        sentence = sentence.strip(" '\"“”:")
        if 15 <= len(sentence) <= 200 and len(words(sentence)) >= 4:
            return sentence
    return None


def build(target: Loaded, seed: int = 0) -> list[dict]:
    """The whole prompt set, deduplicated and checked against the held-out split, in a seeded order."""
    rng = random.Random(seed)
    rows = read_jsonl(SPECBENCH)
    train = [r for r in rows if split_of(r) == "train"]
    seeds = json.loads(SEEDS.read_text())
    found = [{"prompt": first_turn(r), "category": r["category"], "source": "spec-bench",
              **({"follow_up": r["turns"][1]} if len(r.get("turns", [])) > 1 else {})} for r in train]
    found += [{**r, "source": "template"} for r in from_templates(seeds, passages(train), rng)]
    found += [{**r, "source": "self-instruct"} for r in self_instruct(target, seeds, seed)]
    banned, seen, kept = heldout_ngrams(rows), set(), []
    for r in found:
        key = " ".join(words(r["prompt"]))
        if key in seen or ngrams(r["prompt"]) & banned:
            continue
        seen.add(key)
        if "follow_up" not in r and rng.random() < 1 / 3:
            r["follow_up"] = rng.choice(seeds["follow_ups"])
        kept.append(r)
    rng.shuffle(kept)
    return kept


def save(rows: list[dict], path=TRAIN_PROMPTS) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
