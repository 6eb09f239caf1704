"""Where paradec's C++ kernel is not available, `make run` says so in one line with the speed it costs, measured
by the shipped benchmark (bench's ar_torch row against AR), and the home page likewise; silent where it loads."""
from paradec import bench_report, kernel_note


def test_the_cost_is_ar_torchs_speed_over_ars():
    report = {"methods": {"ar": {"tokens_per_s": 50.0}, "ar_torch": {"tokens_per_s": 20.0}}}
    assert bench_report.without_kernel(report) == 0.4
    assert bench_report.without_kernel({"methods": {"ar": {"tokens_per_s": 50.0}}}) is None


def test_without_the_kernel_the_line_says_why_and_what_it_costs(monkeypatch):
    monkeypatch.setenv("PARADEC_KERNEL", "off")
    monkeypatch.setattr(kernel_note, "measured", lambda: 0.45)
    line = kernel_note.line()
    assert line.startswith("paradec: the C++ kernel is not available here (PARADEC_KERNEL=off)")
    assert "AR at 0.45x the kernel's speed in assets/bench/cpu-2core.json" in line and "\n" not in line


def test_the_run_script_asks_for_the_line_beside_the_app():
    from pathlib import Path

    script = (Path(__file__).resolve().parents[1] / "scripts" / "run.sh").read_text()
    asks, starts = script.index("-m paradec.kernel_note &"), script.index("-m streamlit run")
    assert asks < starts  # in the background, before the app takes the process
