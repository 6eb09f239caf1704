"""The self-distillation data: the training prompts (none from the held-out split, not even an 8-gram of
one), and the data command end to end on a tiny model: answers, follow-ups, features, resumption."""
import json

import pytest
import torch
from safetensors.torch import load_file

from paradec.data import SPECBENCH, TRAIN_PROMPTS, read_jsonl, split_of
from paradec.train import answers
from paradec.train import prompts as made
from paradec.train.__main__ import main as train_main
from paradec.train.answers import generate_shards
from paradec.train.selfdistill import load_shards, share_of, training_prompts, training_rows, validation


def test_training_prompts_share_no_8_gram_with_the_heldout_split():
    rows = training_rows()
    assert len(rows) >= 1500 and TRAIN_PROMPTS.exists()
    banned = made.heldout_ngrams(read_jsonl(SPECBENCH))
    assert len(banned) > 10_000  # the check has something to check against
    assert not [r["prompt"][:80] for r in rows if made.ngrams(r["prompt"]) & banned]
    assert not [r["follow_up"] for r in rows if made.ngrams(r.get("follow_up", "")) & banned]
    heldout = {t for r in read_jsonl(SPECBENCH) if split_of(r) == "heldout" for t in r["turns"]}
    assert not heldout & set(training_prompts())


def test_the_prompts_cover_every_category_from_every_source():
    rows = training_rows()
    categories = {r["category"] for r in read_jsonl(SPECBENCH)}
    assert {r["category"] for r in rows} == categories
    assert {r["source"] for r in rows} == {"spec-bench", "template", "self-instruct"}
    assert len({" ".join(made.words(r["prompt"])) for r in rows}) == len(rows)  # deduplicated
    assert 0.25 < sum("follow_up" in r for r in rows) / len(rows) < 0.5


def test_the_8_gram_check_catches_a_copied_passage():
    heldout = [{"question_id": 1, "turns": ["The quick brown fox jumps over the lazy dog near the river bank."]}]
    banned = made.heldout_ngrams(heldout)
    assert made.ngrams("Summarize: the quick brown fox jumps over the lazy dog near the") & banned
    assert not made.ngrams("The quick brown fox jumps over a lazy cat near the river.") & banned
    assert made._question('A student might ask: "What makes a volcano erupt?" and more.') == \
        "What makes a volcano erupt?"
    assert made._question("No question here.") is None


def test_answers_follow_ups_and_features(tiny_loaded, tmp_path):
    rows = ["Say hi.", {"prompt": "Count to three, please.", "follow_up": "Why?"}, "Name a colour."]
    generate_shards(tiny_loaded, rows, tmp_path, samples=2, batch=2, max_new_tokens=5)
    shards = load_shards(tmp_path)
    assert len(shards) == 4  # 2 samples x 2 batches
    rows_seen = torch.cat([s["prompt"] for s in shards]).tolist()
    assert sorted(rows_seen) == [0, 0, 1, 1, 1, 1, 2, 2]  # the follow-up answered on each of its 2 answers
    greedy = load_shards(tmp_path, ("hidden",), greedy=True)  # sample 0's shards (greedy, checked below) only
    assert len(greedy) == 2 and all(torch.equal(g["tokens"], s["tokens"]) for g, s in zip(greedy, shards))
    first = shards[0]
    assert first["hidden"].shape[:2] == first["tokens"].shape
    assert first["hidden"].shape[2] == tiny_loaded.model.config.hidden_size
    assert first["fuse"].shape[2] == 3 * tiny_loaded.model.config.hidden_size
    assert first["answer"].sum() > 0 and not (first["answer"] & ~first["mask"]).any()
    # Greedy answers are the target's own argmax continuations of the (left-padded) prompt.
    row = first["tokens"][1][first["mask"][1]].tolist()
    n = int(first["answer"][1].sum())
    with torch.no_grad():
        logits = tiny_loaded.model(torch.tensor([row])).logits[0]
        hidden = tiny_loaded.model(torch.tensor([row]), output_hidden_states=True).hidden_states[-1][0]
    assert torch.argmax(logits[-n - 1 : -1], dim=-1).tolist() == row[-n:]
    torch.testing.assert_close(first["hidden"][1][first["mask"][1]].float(), hidden, atol=2e-3, rtol=2e-3)
    # Rows of similar lengths share a pass, cropped to the longest: the same features as one row at a time.
    longest = max(shards, key=lambda s: int((~s["mask"]).sum()))
    one_by_one = answers._shard_features(tiny_loaded, longest, batch=1)
    for k in ("hidden", "fuse"):
        torch.testing.assert_close(one_by_one[k][longest["mask"]], longest[k][longest["mask"]], atol=2e-3, rtol=2e-3)
    # A second call resumes: nothing is regenerated.
    before = {p: p.stat().st_mtime for p in tmp_path.glob("*.safetensors")}
    generate_shards(tiny_loaded, rows, tmp_path, samples=2, batch=2, max_new_tokens=5)
    assert before == {p: p.stat().st_mtime for p in tmp_path.glob("*.safetensors")}
    assert json.loads((tmp_path / "manifest.json").read_text())["prompts"] == 3


def test_answers_ship_compact_and_features_are_kept_apart_by_content(tiny_loaded, tmp_path):
    data, features = tmp_path / "answers", tmp_path / "features"
    generate_shards(tiny_loaded, ["Say hi.", "Count to three, please.", "Name a colour."], data, samples=1, batch=3,
                    max_new_tokens=6, features=features)
    shard = next(data.glob("shard-*.safetensors"))
    stored, rows = load_file(str(shard)), answers.read_answers(shard)
    assert stored["ids"].dtype == torch.uint16 and len(stored["ids"]) == int(rows["mask"].sum())  # no padding
    assert not list(data.glob("features-*")) and len(list(features.glob("features-*"))) == 1
    packed = answers.pack(rows)
    for k in ("ids", "length", "answer_length", "prompt"):
        assert torch.equal(packed[k], stored[k])
    assert (rows["answer"] <= rows["mask"]).all() and rows["answer"].any()
    # Features are named by the answers' content: answers made again differently are not paired with stale ones.
    assert load_shards(data, ("hidden",), features)[0]["hidden"].shape[:2] == rows["tokens"].shape
    answers._save(answers.pack({**rows, "prompt": rows["prompt"] + 1}), shard)
    with pytest.raises(FileNotFoundError, match="no features yet"):
        load_shards(data, ("hidden",), features)


def test_a_token_target_stops_the_answers_and_a_larger_one_goes_on(tiny_loaded, tmp_path):
    rows = ["Say hi.", "Count to three, please.", "Name a colour.", "Spell cat."]
    generate_shards(tiny_loaded, rows, tmp_path, samples=2, batch=1, max_new_tokens=4, answer_tokens=1)
    first = json.loads((tmp_path / "manifest.json").read_text())
    assert first["batches"] == "1 of 8" and 1 <= first["answer_tokens"] <= 4 and first["answer_tokens_asked"] == 1
    assert [p.name for p in tmp_path.glob("shard-*")] == ["shard-s0-00000.safetensors"]  # greedy comes first
    generate_shards(tiny_loaded, rows, tmp_path, samples=2, batch=1, max_new_tokens=4,
                    answer_tokens=first["answer_tokens"] + 1)
    assert json.loads((tmp_path / "manifest.json").read_text())["batches"] == "2 of 8"


def test_a_train_fraction_keeps_every_held_out_prompt_and_a_nested_share_of_the_others(capsys):
    prompt = torch.arange(40)  # prompts 0, 10, 20 and 30 are held out
    shards = [{"prompt": prompt[i:i + 8], "tokens": prompt[i:i + 8, None].expand(8, 3)} for i in range(0, 40, 8)]

    def kept(fraction):
        out = share_of(shards, fraction)
        assert all(torch.equal(s["tokens"][:, 0], s["prompt"]) for s in out)  # a row's tensors stay together
        return {int(p) for s in out for p in s["prompt"]}

    held = {p for p in range(40) if validation(p)}
    assert len(held) == 4 and share_of(shards, 1.0) is shards
    assert held < kept(0.25) < kept(0.5) < kept(1.0)
    assert len(kept(0.5) - held) == 18 and len(kept(0.25) - held) == 9  # of the 36 training prompts
    assert kept(0.5) - held == set(range(1, 20)) - held  # the first ones of the (shuffled) prompt file
    with pytest.raises(SystemExit) as e:
        train_main(["medusa", "--train-fraction", "1.5"])
    assert e.value.code == 2 and "a share in (0, 1], not 1.5" in capsys.readouterr().err


def test_each_engine_has_its_own_features_and_the_features_command_remakes_them(tiny_loaded, tiny_dir, tmp_path,
                                                                                 monkeypatch, capsys):
    """A drafter learns the features of the engine it will read (--weights: f32 or q4, a cache folder each); the
    features command makes them for the shipped answers alone, the answers untouched."""
    from argparse import Namespace

    from paradec.train.selfdistill import features_dir, learned_from

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert features_dir("f32") != features_dir("q4") and features_dir("q4").parent == features_dir("f32").parent
    data, made_by_data, remade = tmp_path / "answers", tmp_path / "a", tmp_path / "b"
    generate_shards(tiny_loaded, ["Say hi.", "Name a colour."], data, samples=1, batch=2, max_new_tokens=4,
                    features=made_by_data)
    before = {p.name: p.read_bytes() for p in data.iterdir()}
    assert train_main(["features", "--model", str(tiny_dir), "--data", str(data), "--features", str(remade)]) == 0
    assert {p.name: p.read_bytes() for p in data.iterdir()} == before
    (a,), (b,) = list(made_by_data.glob("features-*")), list(remade.glob("features-*"))
    assert a.name == b.name and torch.equal(load_file(str(a))["hidden"], load_file(str(b))["hidden"])
    assert train_main(["features", "--weights", "q4", "--data", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"python -m paradec.train features: error: no self-distillation answers in {tmp_path / 'none'}"
    assert "selfdistill-features-q4" in err[-2]  # where a 4-bit engine's features would go
    # every trainer's card names the answers, and the engine whose features it learned where that is not float32
    assert learned_from(Namespace(data=str(data), weights="f32")) == str(data)
    assert learned_from(Namespace(data=str(data), weights="q4")) == f"{data} with the 4-bit engine's features"
