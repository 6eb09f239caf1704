"""The glossary names every term of the article the app teaches (assets/glossary/article_terms.txt), each once,
with a view that exists; "The article, checked" reads every figure from the shipped runs and has words for each."""
import json
from pathlib import Path

from paradec import claims
from ui import article, glossary, guide

ROOT = Path(__file__).resolve().parents[1]
TERMS = ROOT / "assets" / "glossary" / "article_terms.txt"


def _terms() -> list[str]:
    return [line.strip() for line in TERMS.read_text().splitlines() if line.strip() and not line.startswith("#")]


def test_every_term_of_the_article_is_in_the_glossary():
    entries = [t for terms in glossary.SECTIONS.values() for t in terms]
    names = [f"{t.en} | {t.fr}".lower() for t in entries]
    missing = [term for term in _terms() if not any(term.lower() in name for name in names)]
    assert not missing, missing
    assert len({t.en for t in entries}) == len(entries)  # no term twice


def test_every_glossary_link_opens_a_page():
    views = {t.view for terms in glossary.SECTIONS.values() for t in terms} - {""}
    assert views <= set(guide.pages()) and all((ROOT / guide.pages()[v].file).is_file() for v in views)


def test_the_search_finds_a_term_by_either_language():
    term = glossary.SECTIONS[next(iter(glossary.SECTIONS))][0]
    assert glossary.matches(term, term.en.upper()) and glossary.matches(term, term.fr) and glossary.matches(term, "")
    assert not glossary.matches(term, "no such word anywhere")


def test_every_claim_has_its_words_a_verdict_and_figures_from_its_files():
    checks = claims.check_all(ROOT / "assets")
    assert {c.key for c in checks} == set(article.TEXT)
    for c in checks:
        claim, found, why = article.TEXT[c.key]
        found.format(**c.values), why.format(**c.values)  # every placeholder has its figure
        assert c.verdict in article.VERDICT and (ROOT / "views" / f"{c.view}.py").is_file()
        assert all((ROOT / "assets" / s).is_file() for s in c.sources)


def test_the_figures_are_the_runs_own():
    bench = json.loads((ROOT / "assets" / claims.BENCH).read_text())
    checks = {c.key: c for c in claims.check_all(ROOT / "assets")}
    assert checks["sps_speedup"].values["speedup"] == bench["methods"]["sps"]["speedup"]
    assert checks["lookahead_speedup"].values["tau"] == bench["methods"]["lookahead"]["tau"]
    cost = json.loads((ROOT / "assets" / claims.COST).read_text())["curves"]["paradec"]["median_ms"]
    assert checks["verify_eight"].values["ratio"] == cost[7] / cost[0]  # 8 tokens over 1
    assert checks["tree_dozens"].values["nodes"] == 63


def test_a_verdict_follows_the_figures(tmp_path):
    """A bench where speculative sampling reached 2.5x supports the article's 2-3x: the verdict is computed."""
    bench = json.loads((ROOT / "assets" / claims.BENCH).read_text())
    bench["methods"]["sps"]["speedup"] = 2.5
    (tmp_path / "bench").mkdir()
    (tmp_path / claims.BENCH).write_text(json.dumps(bench))
    assert claims.sps_speedup(tmp_path).verdict == "supported"
    assert claims.sps_speedup(ROOT / "assets").verdict == "different"
