"""Medusa training end to end on a tiny model in seconds: self-distillation shards, the
`python -m paradec.train medusa` command, its weights and card, a run with those heads
(greedy equal to AR), and the CLI's LOSSY warning for typical acceptance."""
import json

import pytest
import torch

from paradec.cli import main as cli_main
from paradec.drafters import medusa_heads
from paradec.run import run
from paradec.train.__main__ import main as train_main
from paradec.train.answers import generate_shards
from paradec.train.medusa import best_tree, positions, to_subset
from paradec.train.selfdistill import frequent_tokens

pytestmark = pytest.mark.usefixtures("one_thread")


def test_positions_pair_each_hidden_state_with_the_tokens_after_the_next():
    tokens = torch.tensor([[5, 6, 7, 8, 9, 10]] * 10, dtype=torch.int32)
    answer = torch.tensor([[False, False, False, True, True, True]] * 10)  # prompt 5 6 7, answer 8 9 10
    hidden = torch.arange(6, dtype=torch.float16)[None, :, None].expand(10, 6, 2)
    shard = {"tokens": tokens, "answer": answer, "mask": torch.ones_like(answer), "hidden": hidden,
             "prompt": torch.arange(10)}
    x, y, is_answer = positions([shard], heads=2, val=False)  # prompts 1..9 train, prompt 0 is kept out
    assert len(x) == 9 * 3  # positions 1..3 have an answer token two ahead (head 1)
    assert x[:3, 0].tolist() == [1, 2, 3]
    assert y[:3].tolist() == [[8, 9], [9, 10], [10, -1]]  # head k at t: the token at t + 1 + k
    assert is_answer[:3].tolist() == [[True, True], [True, True], [True, False]]
    x, y, is_answer = positions([shard], heads=2, val=False, prompt=True)  # the prompt's tokens too
    assert x[:4, 0].tolist() == [0, 1, 2, 3]
    assert y[:4].tolist() == [[7, 8], [8, 9], [9, 10], [10, -1]]
    assert is_answer[:4].tolist() == [[False, True], [True, True], [True, True], [True, False]]
    ids = frequent_tokens(y[is_answer], 2)
    assert ids.tolist() == [8, 9]  # the most frequent answer tokens (8, 9, 10 tie: the lower ids)
    sub = to_subset(torch.tensor([[7, -1], [9, 8]]), ids, 11)
    assert sub.tolist() == [[-2, -1], [1, 0]]  # 7 is outside the subset, -1 had no target


def test_best_tree_grows_by_path_probability():
    acc = [[0.6, 0.2, 0.08], [0.5, 0.1, 0.05]]
    paths, expected = best_tree(acc, 4)  # [0] 0.6, [0, 0] 0.3, [1] 0.2, [1, 0] 0.1 (not [2] 0.08, [0, 1] 0.06)
    assert paths == [[0], [0, 0], [1], [1, 0]]
    assert expected == pytest.approx(0.6 + 0.3 + 0.2 + 0.1)


def test_train_command_end_to_end(tiny_loaded, tiny_dir, tmp_path, capfd):
    data, out = tmp_path / "data", tmp_path / "heads"
    prompts = ["Say hi.", "Count to three, please.", "Name a colour.", "Add two and two.", "Spell cat."] * 2
    generate_shards(tiny_loaded, prompts, data, samples=1, batch=5, max_new_tokens=12)
    data_args = ["--data", str(data), "--features", str(data)]  # answers and features together
    code = train_main(["medusa", *data_args, "--steps", "8", "--vocab", "256", "--batch", "64",
                       "--heads", "3", "--out", str(out), "--model", str(tiny_dir), "--measure",
                       "--prompt-weight", "0.3"])
    assert code == 0
    heads = medusa_heads.load(out)
    assert heads.num_heads == 3 and 0 < heads.vocab_ids.numel() <= 256 and heads.tree
    card = (out / "card.md").read_text()
    assert "seed 0" in card and "8 steps" in card and "top-1" in card and "Chosen" in card and "weight 0.3" in card
    assert f"shards in {data} (" in card  # as the other cards name it (selfdistill.learned_from): float32 features
    stats = json.loads((out / "stats.json").read_text())
    assert len(stats["accuracy"]) == 3
    assert [r["nodes"] for r in stats["tree_sizes"]] == [2, 3, 4, 5, 6, 7, 11, 12, 15, 23, 31]  # verify sizes - 1
    assert "measured by this command" in card and "before this run" not in card
    again = tmp_path / "again"  # scored beside the heads above: the same kept-out positions give the same numbers
    assert train_main(["medusa", *data_args, "--steps", "1", "--vocab", "256", "--batch", "64", "--heads", "3",
                       "--out", str(again), "--model", str(tiny_dir), "--baseline", str(out)]) == 0
    assert json.loads((again / "stats.json").read_text())["before"] == stats["accuracy"]
    assert f"The heads in `{out}` (before this run)" in (again / "card.md").read_text()
    capfd.readouterr()
    assert train_main(["medusa", *data_args, "--out", str(again), "--model", str(tiny_dir), "--baseline",
                       str(tmp_path / "nowhere")]) == 2
    err = [line for line in capfd.readouterr().err.strip().splitlines() if ": will write --out" not in line]
    # a missing baseline: one line, before the target loads
    assert len(err) == 1 and err[0].startswith("python -m paradec.train medusa: error:") and "nowhere" in err[0]
    prompt = "Name a colour."
    ar = run(tiny_loaded, "ar", prompt, max_new_tokens=20)
    med = run(tiny_loaded, "medusa", prompt, {"heads": str(out)}, max_new_tokens=20)
    assert med.token_ids == ar.token_ids and med.drafted > 0
    capfd.readouterr()
    code = cli_main(["run", "--method", "medusa", "--model", str(tiny_dir), "--set", f"heads={out}", "--set",
                     "acceptance=typical", "--temperature", "0.7", "--max-new-tokens", "5", "--prompt", "Hi", "--json"])
    _, err = capfd.readouterr()
    assert code == 0 and "LOSSY" in err
