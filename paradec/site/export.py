"""`python -m paradec export-site --out DIR [--lang en,fr] [--only METHODS] [--force]`: the static replay site,
written safely (paradec.traces.files' rule). DIR is made when new; an existing folder must be empty or hold a
previous export (its .paradec-site file), unless --force; it may not be, hold or lie in what the export reads (the
repository's assets, locale and package). Every file is written by a rename, and a previous export's files that
this one no longer writes are removed."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import plotly

from .. import bench_report, catalog, web
from ..data import ASSETS
from ..stage.frames import template
from ..traces import files
from ..traces.trace import Trace
from ..words import LANGS, LOCALE, Words
from . import method, pages
from .html import file_of, frame

MARK = ".paradec-site"  # a previous export's list of its files
PLOTLY = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
PACKAGE = Path(__file__).resolve().parents[1]
BENCH = "cpu-2core"  # the main benchmark (the app's Benchmark page opens on it)
SPACE = """---
title: paradec (recorded replay)
emoji: 🌳
colorFrom: indigo
colorTo: green
sdk: static
app_file: index.html
short_description: Parallel decoding of LLMs, replayed step by step
pinned: false
---
# paradec: a recorded replay

Every method of paradec replayed step by step from recorded runs, in the browser, with no server: open
`index.html`. Live decoding needs the app (see `about.html`). Written by `python -m paradec export-site`.
"""


def add_parser(sub) -> None:
    e = sub.add_parser("export-site", help="write the static replay site (no server, opens from file://)")
    e.add_argument("--out", required=True, help="the folder to write (made when new)")
    e.add_argument("--lang", default=",".join(LANGS), help="languages, comma-separated (default: en,fr)")
    e.add_argument("--only", default="", metavar="METHODS", help="comma-separated methods: only their pages and "
                   "traces (default: every method page)")
    e.add_argument("--repo", default="", help="the repository's address, linked from the page on running the app")
    e.add_argument("--force", action="store_true", help="write into a non-empty folder that holds no export")


def reads() -> list[Path]:
    return [ASSETS, LOCALE, PACKAGE, PLOTLY]


def check_out(out: str | os.PathLike, force: bool = False) -> Path:
    """The folder to write, checked before any work; files.Refused (one line) where the rule forbids it."""
    path, real = Path(out), files.target(out)
    if os.path.lexists(path) and not real.is_dir():
        raise files.Refused(f"cannot write the site to {out}: not a folder")
    if not real.parent.is_dir():
        raise files.Refused(f"cannot write the site to {out}: no such folder {real.parent}")
    for read in reads():
        read = read.resolve()
        if real == read or real.is_relative_to(read) or read.is_relative_to(real):
            raise files.Refused(f"cannot write the site to {out}: it is, holds or lies in {read}, which the export "
                                "reads")
    if real.is_dir() and any(real.iterdir()) and not (real / MARK).is_file() and not force:
        raise files.Refused(f"cannot write the site to {out}: the folder is not empty and holds no previous export "
                            "(--force writes into it)")
    if real.exists() and not os.access(real, os.W_OK | os.X_OK):
        raise files.Refused(f"cannot write the site to {out}: the folder is not writable")
    return real


def _choices(text: str, allowed, what: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in names if x not in allowed]
    if bad or not names:
        raise files.Refused(f"--{what} takes {', '.join(allowed)}; got {catalog.shown(text)}")
    return list(dict.fromkeys(names))


def bundle() -> str:
    """The browser's one script: the player, the quiz (their Streamlit component modules as plain functions), the
    figures' template and the site's own code, in one scope."""
    parts = []
    for name in ("learn.js", "player_stage.js", "player.js", "quiz.js", "site.js"):
        text = web.text((name,))
        if text.count("export default function ") > 1:
            raise RuntimeError(f"paradec/web/{name}: one default export expected")
        parts.append(text.replace("export default function ", "function "))
    return "(function () {\nconst TEMPLATE = " + json.dumps(template()) + ";\n" + "\n".join(parts) + "\n})();\n"


def site(langs: list[str], only: list[str], repo: str = "") -> dict[str, str]:
    """Every file of the site: its path under the folder -> its text."""
    traces = ASSETS / "traces"
    found = {url: [r for r in method.recorded(url, traces) if not only or r.method.name in only]
             for url in catalog.pages()}
    found = {url: rs for url, rs in found.items() if rs}
    loaded = {r.key: Trace.load(r.path) for rs in found.values() for r in rs}
    arena = sorted((traces / "arena").glob("*.json"), key=lambda f: (f.stem != "ar", f.stem))
    runs = {f.stem: Trace.load(f) for f in arena}
    report = bench_report.load(ASSETS / "bench" / f"{BENCH}.json")
    urls = [*found, "roofline", *(["arena"] if runs else []), "benchmark", "glossary"]
    out = {"static/plotly.min.js": PLOTLY.read_text(encoding="utf-8"), "static/paradec.js": bundle(),
           "static/paradec.css": web.text(web.SITE_CSS), "README.md": SPACE}
    for lang in langs:
        tr = Words(lang)
        nav = [("index", tr("Home")), ("glossary", tr("Glossary"))]
        made = [pages.index(urls, tr), pages.roofline(ASSETS, tr), pages.benchmark(report, tr),
                pages.glossary(urls, tr), pages.about(tr, repo), *([pages.arena(runs, tr)] if runs else [])]
        for url, rs in found.items():
            made.append(method.page(url, rs, loaded, ASSETS, tr))
            for r in rs:
                out.update(method.files(r, loaded[r.key], tr))
        out.update({file_of(p.name, lang): frame(p, tr, langs, nav) for p in made})
    out[MARK] = json.dumps({"files": sorted(out)}, indent=1) + "\n"
    return out


def write(real: Path, made: dict[str, str]) -> None:
    """Each file by a rename; a previous export's files that this one does not write, removed."""
    for name in made:
        path = real / name
        if os.path.islink(path.parent) or os.path.islink(path):
            raise files.Refused(f"cannot write {path}: a link (the export writes only regular files)")
        path.parent.mkdir(exist_ok=True)
    files.plan([("a site file", real / name) for name in made], [(str(p), p) for p in reads()], force=True)
    old = []
    if (real / MARK).is_file():
        try:
            old = json.loads((real / MARK).read_text()).get("files", [])
        except (OSError, ValueError, AttributeError):
            old = []
    for name, text in made.items():
        files.write_atomic(real / name, text)
    for name in set(old) - set(made) if isinstance(old, list) else ():
        stale = real / str(name)
        if stale.resolve().is_relative_to(real) and stale.is_file() and not stale.is_symlink():
            stale.unlink()


def export_command(args) -> int:
    langs = _choices(args.lang, list(LANGS), "lang")
    only = _choices(args.only, list(catalog.METHODS), "only") if args.only else []
    real = check_out(args.out, args.force)
    real.mkdir(exist_ok=True)
    made = site(langs, only, args.repo)
    write(real, made)
    pages_n = sum(name.endswith(".html") for name in made)
    size = sum(len(t.encode("utf-8")) for t in made.values()) / 2**20
    print(f"paradec export-site: {pages_n} pages, {len(made)} files, {size:.1f} MiB in {real} "
          f"(open {real / 'index.html'})", file=sys.stderr)
    return 0
