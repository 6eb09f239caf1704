// The player's stage (ui/player.py puts this file before ui/player.js, in one module): its boxes, and
// drawing the shown step in them. A plotly redraw costs tens of ms (it lays out its axes and measures its
// text), too much for every figure four times a second on a slow laptop. So a step changes only the boxes
// in view whose content changed, and shows a still there (a static copy of the figure, drawn by plotly
// ahead of time while the browser idles) when one is ready; plotly itself draws the figures, hover and
// all, once the player stands, and draws the boxes out of view then.
const SIDE = new Set(["tree", "mask"]);  // presenter layout: the boxes beside the controls, story and stream
const HEADER = 70;  // px of the window under Streamlit's header bar
const MIN_FIT = 220;  // px: the least a presenter's tree or mask is drawn in
const AHEAD = 8;  // steps after the shown one whose stills are drawn ahead: stills of every step of a trace took
// seconds of a student's main thread on every page, for steps most never played to
const CONFIG = {displaylogo: false};
const idle = window.requestIdleCallback || ((f) => setTimeout(f, 50));
const cancelIdle = window.cancelIdleCallback || clearTimeout;
let stills = 0;  // numbers each still's element ids apart

function el(tag, cls, parent, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function watch(P) {
  P.seen = new IntersectionObserver((entries) => {
    for (const e of entries) P.inView[e.isIntersecting ? "add" : "delete"](e.target.dataset.name);
    paint(P);
    later(P);
  });
  // A new width redraws the figures, which plotly sizes to their boxes; a new height (a taller tree) does not.
  new ResizeObserver(() => {
    const w = P.wrap.clientWidth, first = !P.width;
    if (w === P.width) return;
    P.width = w;
    if (first) return;
    fit(P);
    redraw(P);
  }).observe(P.wrap);
}

function redraw(P) {  // everything afresh: another width, or other heights
  forget(P);
  paint(P);
  later(P);
}

function forget(P) {
  P.drawn = {};
  P.stills.clear();
  for (const box of Object.values(P.figs)) for (const gd of [box.gd, box.scratch]) if (gd) gd.fig = null;
}

function stale(P, name) {
  return P.figs[name] && P.drawn[name] !== P.want[name];
}

function paint(P) {  // the boxes in view whose content changed: a still when one is ready, else plotly
  for (const name of Object.keys(P.want)) if (P.inView.has(name) && stale(P, name)) put(P, name, true);
}

function put(P, name, quick) {
  const what = P.want[name], box = P.figs[name];
  if (typeof what === "string") box.innerHTML = what;
  else if (quick && P.stills.has(what)) still(P, box, what);
  else if (!live(P, box, name, what)) return false;
  P.drawn[name] = what;
  return true;
}

// The browser's idle time, one chore at a time (an idle callback can wait for ever on a busy page: 300 ms at
// most): with the player standing, plotly draws the boxes in view that show a still, then those out of view;
// then stills for the AHEAD steps after the shown one, of the figures in view first (only those while playing).
function later(P) {
  cancelIdle(P.idle);
  if (P.root.isConnected) P.idle = idle(() => { const chore = next(P); if (chore && chore() !== false) later(P); },
                                        {timeout: 300});
}

function next(P) {
  const names = Object.keys(P.want).filter((name) => P.figs[name]);
  const up = !P.timer && (names.find((name) => P.inView.has(name) && (stale(P, name) || P.figs[name].still))
    || names.find((name) => stale(P, name)));
  if (up) return () => put(P, up, false);
  const k0 = P.i - 1 - P.offset, n = P.frames.length, shown = names.filter((name) => P.inView.has(name));
  for (const group of P.timer ? [shown] : [shown, names])
    for (let d = 1; d < Math.min(n, AHEAD + 1); d++) {
      const figs = (P.frames[(k0 + d) % n] || {}).figs || {};  // none while a window of steps loads
      const name = group.find((name) => figs[name] && !P.stills.has(figs[name]));
      if (name) return () => ahead(P, P.figs[name], name, figs[name]);
    }
  return null;
}

function plot(P, gd, name, fig) {  // plotly draws fig in gd; then keeps a still of it
  if (!window.Plotly) { waitForPlotly(P); return false; }
  const layout = Object.assign({}, fig.layout, {template: P.template, autosize: true});
  if (P.fit[name]) layout.height = Math.min(layout.height || P.fit[name], P.fit[name]);
  gd.style.height = `${layout.height || 450}px`;
  gd.fig = fig;
  Promise.resolve(window.Plotly.react(gd, fig.data, layout, gd.data ? undefined : CONFIG))
    .then(() => {
      if (gd.fig === fig && !P.stills.has(fig)) P.stills.set(fig, copy(gd));
      if (!gd.pdClick && gd.on) { gd.pdClick = true; gd.on("plotly_click", (e) => P.onPoint(name, e)); }
    });
  return gd.style.height;
}

function live(P, box, name, fig) {
  const height = box.gd.fig === fig || plot(P, box.gd, name, fig);
  if (height === false) return false;
  // The box is exactly as tall as its figure (its content cannot change that, see .pd-fig): plotly's
  // measuring lays out this box alone, not the whole page.
  box.style.height = box.gd.style.height;
  box.classList.remove("pd-stilled");
  box.still = null;
  return true;
}

function still(P, box, fig) {
  box.still = P.stills.get(fig);
  box.shelf.replaceChildren(box.still);
  box.style.height = box.still.style.height;
  box.classList.add("pd-stilled");
}

function ahead(P, box, name, fig) {  // a still of fig, drawn out of sight in the box
  box.scratch = box.scratch || el("div", "pd-scratch", box);
  return plot(P, box.scratch, name, fig);
}

function copy(gd) {  // a still of what plotly drew: no tool bar or hover label, and ids of its own for its clip paths
  const c = gd.querySelector(".svg-container").cloneNode(true), tag = `-pd${++stills}`;
  for (const e of c.querySelectorAll(".modebar-container, .hoverlayer > *")) e.remove();
  for (const e of c.querySelectorAll("[id]")) e.id += tag;
  for (const e of c.querySelectorAll("[clip-path], [style*='url(']"))
    for (const a of ["clip-path", "style"]) {
      const v = e.getAttribute(a);
      if (v && v.includes("url(")) e.setAttribute(a, v.replace(/(url\(['"]?[^'")]*#[^'")]+)/g, `$1${tag}`));
    }
  return c;
}

function stageLayout(P, panels) {
  P.stage.innerHTML = "";
  P.seen.disconnect();
  P.figs = {};
  P.inView.clear();
  for (const row of panels) {
    const r = el("div", "pd-row", P.stage);
    // a wide panel (Lookahead's combined mask) needs the page's width: its row stays under the controls
    r.classList.toggle("pd-side", row.some((p) => SIDE.has(p.name)) && row.every((p) => p.width <= 1));
    r.classList.toggle("pd-drawing", row.some((p) => SIDE.has(p.name)));  // the step's drawing: first on the page
    r.style.gridTemplateColumns = row.map((p) => p.width + "fr").join(" ");
    for (const p of row) {
      const cell = el("div", "pd-cell", r);
      const h = el("div", "pd-head", cell);
      el("span", "pd-title", h, p.title);
      for (const b of p.badges) el("span", "pd-badge pd-" + b.kind, h, b.text).title = b.help;
      if (p.help) el("span", "pd-help", h, "?").title = p.help;
      const box = P.figs[p.name] = el("div", p.html ? "pd-html" : "pd-fig", cell);
      if (!p.html) [box.gd, box.shelf] = [el("div", "pd-live", box), el("div", "pd-shelf", box)];
      box.dataset.name = p.name;
      P.seen.observe(box);
      if (p.caption) el("div", "pd-caption", cell, p.caption);
    }
  }
}

// Presenter: the tree and the mask, one over the other beside the controls and story, share the window's
// height in proportion to the tallest each gets in this trace (a tree grows with its leaves), not under
// MIN_FIT px each.
function fit(P) {
  P.fit = {};
  if (!P.presenter) return fitFirstScreen(P);
  const side = P.presenter && P.stage.querySelector(".pd-side");
  const boxes = side ? Array.from(side.querySelectorAll(".pd-fig")) : [];
  const room = window.innerHeight - HEADER - (side ? side.offsetHeight : 0) +
    boxes.reduce((s, b) => s + b.offsetHeight, 0);
  const tallest = boxes.map((b) => Math.max(MIN_FIT, ...P.frames.map((f) => f.figs?.[b.dataset.name]?.layout.height)
    .filter(Boolean)));
  const scale = Math.min(1, room / tallest.reduce((s, h) => s + h, 0));
  boxes.forEach((b, k) => { P.fit[b.dataset.name] = Math.max(MIN_FIT, Math.floor(tallest[k] * scale)); });
}

// Not presenting: the step's first drawing (the tree, or the mask) is no taller than what the first screen has
// left under the controls, so the Play button and the drawing show together (not under MIN_FIT px).
function fitFirstScreen(P) {
  const box = P.stage.querySelector(".pd-drawing .pd-fig");
  if (!box || window.innerWidth < 700) return;  // a phone scrolls to the drawing, drawn at its own height
  const room = window.innerHeight - pageTop(box) - 40;  // a margin: what the page draws above it later
  const tallest = Math.max(...P.frames.map((f) => f.figs?.[box.dataset.name]?.layout.height).filter(Boolean), 0);
  if (tallest > room) P.fit[box.dataset.name] = Math.max(MIN_FIT, Math.floor(room));
}

function pageTop(e) {  // e's distance from the top of the page as first shown, whatever is scrolled now
  let top = e.getBoundingClientRect().top + (window.scrollY || 0);
  for (let a = e.parentElement; a; a = a.parentElement) top += a.scrollTop || 0;
  return top;
}

function present(P, on, fresh) {  // the presenter layout, or not; a new trace has other tallest figures
  on = !!on && !!P.stage.querySelector(".pd-side");
  if (on === !!P.presenter && !fresh) return;
  P.presenter = on;
  P.wrap.classList.toggle("pd-presenter", on);
  fit(P);
  forget(P);
}

function waitForPlotly(P) {  // Streamlit loads plotly.js with its first chart: draw once it is there
  if (P.waiting) return;
  P.waiting = true;
  const t0 = performance.now();
  const poll = () => {
    if (window.Plotly) { P.waiting = false; paint(P); later(P); }
    else setTimeout(poll, performance.now() - t0 < 20000 ? 100 : 1000);
  };
  setTimeout(poll, 100);
}
