"""The Roofline page's batching section: the figures follow a bench --batch file, the crossing point is
where the speedup falls through 1.0, and each batch's verify pass gets its place on the roofline."""
from paradec.bench_batch import crossing
from paradec.costs import roofline
from paradec.plots import batch as plots


def _report() -> dict:
    def by(speedups, tps, rows):
        return {str(b): {"tokens_per_s": t, "speedup": s, "tau": 1.5, "identical_runs": b, "runs": b,
                         "latency_s": 1.0, "rows": r} for b, s, t, r in zip((1, 2, 4, 8), speedups, tps, rows)}
    return {"methods": {"ar": {"by_batch": by((1, 1, 1, 1), (60, 110, 200, 330), (1, 2, 4, 8))},
                        "eagle3": {"by_batch": by((1.4, 1.2, 0.95, 0.8), (84, 132, 190, 264), (9, 18, 36, 72))},
                        "pld": {"speedup": 1.1}}}


def test_crossing_is_interpolated_between_the_sizes_around_it():
    by = _report()["methods"]["eagle3"]["by_batch"]
    at = crossing(by)
    assert 2 < at < 4 and crossing(_report()["methods"]["ar"]["by_batch"]) is None  # AR is 1.0: never below


def test_figures_draw_every_method_with_batches():
    report = _report()
    thr, spd = plots.throughput_figure(report), plots.speedup_figure(report)
    assert [t.name for t in thr.data] == ["ar", "eagle3"] and [t.name for t in spd.data] == ["eagle3"]
    assert list(spd.data[0].y) == [1.4, 1.2, 0.95, 0.8]
    at = crossing(report["methods"]["eagle3"]["by_batch"])
    assert any(s.type == "line" and s.x0 == at for s in spd.layout.shapes)


def test_a_wider_batch_pass_moves_right_on_the_roofline():
    found = plots.passes(_report(), roofline.MODELS["SmolLM2-135M-Instruct"].with_dtype("float32"))
    eagle = [p["intensity"] for p in found if p["method"] == "eagle3"]
    assert len(found) == 8 and eagle == sorted(eagle) and eagle[0] > found[0]["intensity"]


def test_a_method_below_ar_at_batch_1_is_said_so_and_left_out_of_the_charts():
    from ui import batching

    report = _report()
    slow = {b: {**c, "speedup": 0.9, "tokens_per_s": c["tokens_per_s"] * 0.9}
            for b, c in report["methods"]["eagle3"]["by_batch"].items()}
    report["methods"]["jacobi"] = {"by_batch": slow}
    assert list(batching._paying(report)["methods"]) == ["ar", "eagle3"]
    lines = batching.findings(report)
    assert "jacobi: below AR at every batch size measured, batch 1 included." in lines
    assert "eagle3: below AR from batch 3.5." in lines  # 1.2 at B = 2, 0.95 at 4: between them in log2(B)


def test_ar_gains_are_given_whole_and_after_the_prompts_pass():
    from ui import batching

    report = _report()
    for b, c in report["methods"]["ar"]["by_batch"].items():
        c["decode_tokens_per_s"] = 70 * int(b)
    whole, after = batching._ar_gains(report["methods"]["ar"]["by_batch"], [1, 2, 4, 8])
    assert "5.5× at B = 8" in whole and "8.0× at B = 8" in after  # 330 / 60; 560 / 70


def test_throughput_after_the_prompts_pass_leaves_the_first_step_out():
    from types import SimpleNamespace as NS

    from paradec.bench_batch import figures

    def trace(first_ms, token_ids):  # a prompt's pass of first_ms, then 3 steps of 10 ms with a token each
        steps = [NS(draft_ms=0.0, verify_ms=first_ms, tokens=[1], verified=50)] + \
            [NS(draft_ms=0.0, verify_ms=10.0, tokens=[1], verified=1)] * 3
        return NS(token_ids=token_ids, wall_s=(first_ms + 30) / 1e3, steps=steps, target_forwards=4)

    got = figures([([0, 1], [trace(100, [1, 1, 1, 1]), trace(100, [2, 2, 2, 2])])], [[1, 1, 1, 1], [0]])
    assert got["tokens_per_s"] == round(8 / 0.13, 2) and got["decode_tokens_per_s"] == round(6 / 0.03, 2)
    assert got["identical_runs"] == 1 and got["rows"] == 2.0  # a shared pass: each sequence's one row
