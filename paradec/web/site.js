// The static site's pages (paradec.site writes them; paradec.site.export joins this file after learn.js,
// player_stage.js, player.js and quiz.js, in one scope, with TEMPLATE, the figures' plotly template). No server: a
// page's data is in its #pd-page block, and a trace's frames in a script of their own (data/KEY.js, packed: gzip and
// base64), loaded when the trace is shown; the step's details when they are opened. Nothing is fetched: a page opens
// from file:// as from any static host. The URL keeps the trace, the step and predict mode (?trace=, ?step=,
// ?predict=1), so a link opens the same screen; the language is the file (sps.html, sps.fr.html).
const PLOT_CONFIG = {displaylogo: false, responsive: true};
const packed = new Map(), unpacked = new Map(), waiting = new Map();
const query = new URLSearchParams(location.search);

window.PD = {put(key, text) {  // a data script hands its packed text here
  packed.set(key, text);
  const w = waiting.get(key);
  if (w) { waiting.delete(key); w(); }
}};

function loadScript(key, src) {  // a data script once; resolves when it has handed its text
  if (packed.has(key)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    waiting.set(key, resolve);
    const s = document.createElement("script");
    s.src = src;
    s.onerror = () => reject(new Error("missing " + src));
    document.head.appendChild(s);
  });
}

async function dataOf(key, src) {  // the text a data script packed: base64, then gzip
  if (unpacked.has(key)) return unpacked.get(key);
  await loadScript(key, src);
  const bin = atob(packed.get(key)), bytes = new Uint8Array(bin.length);
  for (let k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  const text = await new Response(stream).text();
  packed.delete(key);
  unpacked.set(key, text);
  return text;
}

function keepQuery(name, value) {  // the URL says what is on screen; the language and predict links keep it
  if (value === null) query.delete(name); else query.set(name, String(value));
  const q = query.toString() ? "?" + query.toString() : "";
  try { history.replaceState(null, "", location.pathname + q); } catch (e) { /* a browser that refuses: no link */ }
  for (const a of document.querySelectorAll("a.pd-keepq")) a.search = q;
  const p = document.querySelector("a.pd-predict");
  if (p) {
    const other = new URLSearchParams(query);
    if (query.get("predict") === "1") other.delete("predict"); else other.set("predict", "1");
    p.search = other.toString() ? "?" + other.toString() : "";
    p.textContent = query.get("predict") === "1" ? p.dataset.on : p.dataset.off;
    p.classList.toggle("pd-on", query.get("predict") === "1");
  }
}

function draw(box, fig) {  // one chart, the site's template and config
  const layout = Object.assign({}, fig.layout, {template: JSON.parse(TEMPLATE), autosize: true});
  box.style.minHeight = (layout.height || 450) + "px";
  window.Plotly.react(box, fig.data, layout, PLOT_CONFIG);
}

function lazyCharts(charts) {  // a page's charts, each drawn when it comes near the window
  const seen = new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      seen.unobserve(e.target);
      draw(e.target, charts[e.target.dataset.chart]);
    }
  }, {rootMargin: "100px"});
  for (const box of document.querySelectorAll(".pd-plot[data-chart]")) {
    box.style.minHeight = ((charts[box.dataset.chart].layout || {}).height || 450) + "px";
    seen.observe(box);
  }
}

function quiz(cfg, questions) {  // the exercises, and the Roofline page's questions in predict mode
  const box = document.getElementById("pd-quiz");
  if (!box) return;
  const data = {page: cfg.page, labels: cfg.labels || {}, exercises: cfg.exercises || [], questions};
  if (data.exercises.length || data.questions.length) mountQuiz({data, parentElement: box});
}

function methodPage(cfg) {
  const predict = query.get("predict") === "1";
  const byName = new Map(cfg.traces.map((t) => [t.name, t]));
  const root = document.getElementById("pd-player"), picker = document.getElementById("pd-traces");
  const details = document.getElementById("pd-details"), body = document.getElementById("pd-details-body");
  const S = {trace: null, step: 1, details: null};
  const component = {parentElement: root, data: null, setStateValue: (name, value) => moved(name, value)};
  for (const t of cfg.traces) {
    const b = el("button", "pd-btn pd-trace", picker, t.label);
    b.type = "button";
    b.dataset.name = t.name;
    b.onclick = () => { if (S.trace !== t) show(t, t.start); };
  }
  if (cfg.traces.length < 2) picker.hidden = true;
  async function show(t, step) {
    S.trace = t;
    S.details = null;
    for (const b of picker.children) b.setAttribute("aria-pressed", String(b.dataset.name === t.name));
    document.getElementById("pd-caption").textContent = t.caption;
    document.getElementById("pd-lesson").innerHTML = predict ? "" : t.note;
    const key = t.key + (predict ? ".predict" : ""), text = await dataOf(key, predict ? t.predict : t.src);
    if (S.trace !== t) return;  // another trace was chosen meanwhile
    const cut = text.indexOf("\n"), head = JSON.parse(text.slice(0, cut));
    S.step = Math.min(Math.max(1, step), head.n);
    component.data = {key, ns: "site", frames: text.slice(cut + 1), template: TEMPLATE, offset: 0, n: head.n,
                      panels: head.panels, step: S.step, presenter: false, labels: cfg.labels, wait: false,
                      predict: predict ? {page: cfg.page, vote: false} : null};
    mountPlayer(component);
    keepQuery("trace", t.name);
    keepQuery("step", S.step);
    drawDetails();
  }
  function moved(name, value) {  // the player stopped on a step: the URL and the details follow
    if (name !== "step" || !Array.isArray(value)) return;
    S.step = value[0];
    component.data = Object.assign({}, component.data, {step: S.step});
    mountPlayer(component);  // as Streamlit would: the player hears that its step arrived
    keepQuery("step", S.step);
    drawDetails();
  }
  async function drawDetails() {
    if (!details.open || !S.trace) return;
    const t = S.trace;
    if (!S.details) S.details = JSON.parse(await dataOf(t.key + ".details", t.details));
    if (S.trace !== t) return;
    detailsOf(body, cfg.details, S.details, S.step, cfg.details.greedy_of[t.name]);
  }
  details.addEventListener("toggle", drawDetails);
  const asked = byName.get(query.get("trace")) || byName.get(cfg.open);
  show(asked, query.get("trace") === asked.name && Number(query.get("step")) > 0 ? Number(query.get("step"))
    : asked.start);
  quiz(cfg, []);
}

function detailsOf(body, words, all, step, greedy) {  // the microscope at the step's default node, and the KPIs
  const d = all.steps[step - 1];
  body.innerHTML = "";
  el("h4", "", body, fill(words.title, {n: step}));
  const head = el("div", "pd-head", body);
  el("span", "pd-title", head, greedy ? words.greedy : words.microscope);
  for (const b of words.badges.slice(0, 1)) el("span", "pd-badge pd-" + b.kind, head, b.text).title = b.help;
  if (d.story) el("p", "pd-node", body).innerHTML = d.story;
  const row = el("div", "pd-charts", body);
  for (const fig of Object.values(d.figs)) draw(el("div", "pd-plot", row), fig);
  const kpis = el("div", "pd-head", body);
  el("span", "pd-title", kpis, words.kpis);
  for (const b of words.badges) el("span", "pd-badge pd-" + b.kind, kpis, b.text).title = b.help;
  const row2 = el("div", "pd-charts", body);
  for (const fig of [d.kpis.tokens, all.positions, d.kpis.time]) draw(el("div", "pd-plot", row2), fig);
}

function glossaryPage() {
  const box = document.getElementById("pd-search"), rows = document.querySelectorAll("tr.pd-term");
  const filter = () => {
    const text = box.value.trim().toLowerCase();
    for (const r of rows) r.hidden = !!text && !r.textContent.toLowerCase().includes(text);
  };
  box.value = (query.get("term") || "").slice(0, 60);
  box.oninput = filter;
  filter();
}

function boot() {
  const cfg = JSON.parse(document.getElementById("pd-page").textContent);
  keepQuery("lang", null);
  if (cfg.kind === "method") methodPage(cfg);
  if (cfg.kind === "glossary") glossaryPage();
  if (cfg.kind === "roofline") quiz(cfg, query.get("predict") === "1" ? cfg.questions : []);
  lazyCharts(cfg.charts || {});
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
