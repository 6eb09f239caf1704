"""The static site's HTML: every page's frame (its head, the bar with the pages, the language and predict mode, and
the line that says live decoding needs the app), a chart's box, and the escaping. A page's own data goes in a JSON
block (#pd-page) that paradec/web/site.js reads; its charts are drawn once they come near the window, not all at
once."""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field

from ..words import Words

esc = html.escape


def file_of(name: str, lang: str) -> str:
    """A page's file: sps.html in English, sps.fr.html in French."""
    return f"{name}.html" if lang == "en" else f"{name}.{lang}.html"


def data_json(value) -> str:
    """JSON for a <script type="application/json"> block: nothing in it can close the block."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@dataclass
class Page:
    """One page: its file's name (no language), title, body HTML, the data site.js boots it with, and its charts
    (id -> a figure as plain JSON, drawn when it comes into view)."""
    name: str
    title: str
    body: str
    kind: str
    data: dict = field(default_factory=dict)
    charts: dict = field(default_factory=dict)


def chart(page: Page, key: str, fig: dict, title: str, badges: list[dict], help: str = "") -> str:
    """A chart's box: its title and honesty badges, and the empty box site.js draws it in."""
    page.charts[key] = fig
    marks = "".join(f"<span class='pd-badge pd-{esc(b['kind'])}' title='{esc(b['help'])}'>{esc(b['text'])}</span>"
                    for b in badges)
    helped = f"<span class='pd-help' title='{esc(help)}'>?</span>" if help else ""
    return (f"<section class='pd-chart'><div class='pd-head'><span class='pd-title'>{esc(title)}</span>{marks}"
            f"{helped}</div><div class='pd-plot' data-chart='{esc(key)}'></div></section>")


def frame(page: Page, tr: Words, langs: list[str], nav: list[tuple[str, str]]) -> str:
    """The whole HTML file of a page in tr's language; nav: (file name, label) of the pages the bar links."""
    other = [x for x in langs if x != tr.lang]
    switch = "".join(f"<a class='pd-keepq pd-langlink' hreflang='{x}' href='{file_of(page.name, x)}'>"
                     f"{'Français' if x == 'fr' else 'English'}</a>" for x in other)
    links = "".join(f"<a href='{file_of(n, tr.lang)}'{' aria-current=page' if n == page.name else ''}>{esc(label)}</a>"
                    for n, label in nav)
    live = tr("A recorded replay: every step here was recorded from a real run, and replays in your browser with no "
              "server. Live decoding (your own prompt, model and settings) needs the app:")
    on, off, how = esc(tr("Predict mode: on")), esc(tr("Predict mode: off")), esc(tr("how to run it"))
    predict = (f"<a class='pd-predict' href='?predict=1' data-on='{on}' data-off='{off}'>{off}</a>"
               if page.kind == "method" or page.name == "roofline" else "")
    # plotly.js is most of a page's work in the browser: a page with no chart does without it
    plotly = "<script defer src='static/plotly.min.js'></script>" if page.kind == "method" or page.charts else ""
    boot = {"kind": page.kind, "page": page.name, "lang": tr.lang, **page.data, "charts": page.charts}
    return (f"<!doctype html>\n<html lang='{tr.lang}'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{esc(page.title)} · paradec</title><link rel='stylesheet' href='static/paradec.css'>"
            f"{plotly}<script defer src='static/paradec.js'></script>"
            f"</head><body><header class='pd-top'><a class='pd-home' href='{file_of('index', tr.lang)}'>paradec</a>"
            f"<nav>{links}</nav>{predict}{switch}</header>"
            f"<p class='pd-replay'>{esc(live)} <a href='{file_of('about', tr.lang)}'>{how}</a>.</p>"
            f"<main>{page.body}</main><script type='application/json' id='pd-page'>{data_json(boot)}</script>"
            "</body></html>\n")
