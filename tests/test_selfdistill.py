"""The self-distillation data command, end to end on a tiny model in seconds."""
import torch

from paradec.data import split_of
from paradec.train.selfdistill import generate_shards, load_shards, training_prompts


def test_training_prompts_exclude_the_heldout_split():
    prompts = training_prompts()
    assert len(prompts) >= 300
    from paradec.data import first_turn, read_jsonl
    from paradec.train.selfdistill import SPECBENCH

    heldout = {first_turn(r) for r in read_jsonl(SPECBENCH) if split_of(r) == "heldout"}
    assert heldout and not heldout & set(prompts)


def test_shards_hold_answers_and_hidden_states(tiny_loaded, tmp_path):
    prompts = ["Say hi.", "Count to three, please.", "Name a colour."]
    generate_shards(tiny_loaded, prompts, tmp_path, samples=2, batch=2, max_new_tokens=5)
    shards = load_shards(tmp_path)
    assert len(shards) == 4  # 2 samples x 2 batches
    first = shards[0]
    assert first["tokens"].shape[0] == 2 and first["hidden"].shape[:2] == first["tokens"].shape
    assert first["hidden"].shape[2] == tiny_loaded.model.config.hidden_size
    assert first["answer"].sum() > 0 and not (first["answer"] & ~first["mask"]).any()
    # Greedy answers are the target's own argmax continuations of the (left-padded) prompt.
    row = first["tokens"][1][first["mask"][1]].tolist()
    n = int(first["answer"][1].sum())
    with torch.no_grad():
        logits = tiny_loaded.model(torch.tensor([row])).logits[0]
    assert torch.argmax(logits[-n - 1 : -1], dim=-1).tolist() == row[-n:]
    # A second call resumes: nothing is regenerated.
    before = {p: p.stat().st_mtime for p in tmp_path.glob("shard-*")}
    generate_shards(tiny_loaded, prompts, tmp_path, samples=2, batch=2, max_new_tokens=5)
    assert before == {p: p.stat().st_mtime for p in tmp_path.glob("shard-*")}
