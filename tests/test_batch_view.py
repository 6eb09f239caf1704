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
