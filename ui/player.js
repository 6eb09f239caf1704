// The step player, drawn in the browser: buttons, a speed choice, the scrubber, the step's story,
// the token stream and the stage's figures (Plotly.react on figures precomputed for every step).
// Playing never waits on the server; the step goes back to Python (setStateValue) when it stops,
// and the panels that Python draws below wait, dimmed, until then.
const SPEEDS = [0.5, 1, 2, 4];

function el(tag, cls, parent, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function build(root) {
  const P = {root, i: 1, n: 1, speed: 1, timer: null, frames: [], framesKey: null, pyStep: null, figs: {}};
  const wrap = el("div", "pd-player", root);
  const bar = el("div", "pd-bar", wrap);
  P.buttons = {};
  for (const [name, text, title] of [["first", "« First", "first step"], ["back", "‹ Back", "previous step"],
                                      ["play", "▶ Play", "play / pause"], ["next", "Next ›", "next step"],
                                      ["last", "Last »", "last step"]]) {
    const b = el("button", "pd-btn pd-" + name, bar, text);
    b.title = title;
    b.type = "button";
    P.buttons[name] = b;
  }
  const speeds = el("span", "pd-speeds", bar);
  el("span", "pd-speed-label", speeds, "steps/s");
  P.speedButtons = SPEEDS.map((s) => {
    const b = el("button", "pd-btn pd-speed", speeds, String(s));
    b.type = "button";
    b.dataset.speed = s;
    b.onclick = () => setSpeed(P, s);
    return b;
  });
  P.label = el("span", "pd-step-label", bar);
  P.range = el("input", "pd-range", wrap);
  P.range.type = "range";
  P.range.min = 1;
  P.range.setAttribute("aria-label", "step");
  P.note = el("div", "pd-note", wrap);
  P.story = el("div", "pd-story", wrap);
  P.stage = el("div", "pd-stage", wrap);
  // Keep the figures as wide as their boxes when the window (or the sidebar) changes size.
  new ResizeObserver(() => {
    if (!window.Plotly) return;
    for (const gd of Object.values(P.figs)) if (gd.classList.contains("js-plotly-plot")) window.Plotly.Plots.resize(gd);
  }).observe(P.stage);
  P.buttons.first.onclick = () => jump(P, 1);
  P.buttons.back.onclick = () => jump(P, P.i - 1);
  P.buttons.next.onclick = () => jump(P, P.i + 1);
  P.buttons.last.onclick = () => jump(P, P.n);
  P.buttons.play.onclick = () => (P.timer ? pause(P) : play(P));
  P.range.oninput = () => { stopTimer(P); show(P, Number(P.range.value)); };
  P.range.onchange = () => report(P);
  return P;
}

function setSpeed(P, s) {
  P.speed = s;
  P.speedButtons.forEach((b) => b.classList.toggle("pd-on", Number(b.dataset.speed) === s));
  if (P.timer) { stopTimer(P); play(P); }
}

function jump(P, i) {
  stopTimer(P);
  show(P, i);
  report(P);
}

function play(P) {
  if (P.i >= P.n) show(P, 1);  // play from the start once the end is reached
  const every = 1000 / P.speed;
  let due = performance.now() + every;
  const tick = () => {
    if (P.i >= P.n) { pause(P); return; }
    show(P, P.i + 1);
    due += every;  // keep to the chosen speed: a slow frame shortens the next wait
    P.timer = setTimeout(tick, Math.max(0, due - performance.now()));
  };
  P.timer = setTimeout(tick, every);
  playing(P, true);
}

function pause(P) {
  stopTimer(P);
  report(P);
}

function stopTimer(P) {
  if (P.timer) clearTimeout(P.timer);
  P.timer = null;
  playing(P, false);
}

function playing(P, on) {
  P.buttons.play.textContent = on ? "❚❚ Pause" : "▶ Play";
  P.root.dataset.playing = on ? "1" : "0";
  document.querySelectorAll(".st-key-pd-details-" + P.ns).forEach((d) => d.classList.toggle("pd-dim", on));
  note(P);
}

function note(P) {
  const behind = P.pyStep !== P.i;
  P.note.textContent = behind && !P.timer ? "" : P.timer
    ? `Playing: the panels below the player catch up with step ${P.i} when you pause.` : "";
}

function report(P) {
  clearTimeout(P.reportTimer);  // a burst of clicks sends one step back to Python
  P.reportTimer = setTimeout(() => {
    if (P.pyStep !== P.i && P.setState) P.setState("step", [P.i, Date.now()]);
  }, 250);
}

function show(P, i) {
  i = Math.min(Math.max(1, i), P.n);
  P.i = i;
  P.range.value = i;
  P.label.textContent = `Step ${i} of ${P.n}`;
  P.root.dataset.step = i;
  P.buttons.first.disabled = P.buttons.back.disabled = i === 1;
  P.buttons.next.disabled = P.buttons.last.disabled = i === P.n;
  const f = P.frames[i - 1 - P.offset];
  if (!f) {  // a long trace comes in windows of steps: ask Python for the one with this step
    P.resume = !!P.timer;
    stopTimer(P);
    P.story.textContent = `Loading step ${i}…`;
    if (P.setState) P.setState("step", [i, Date.now()]);
    return;
  }
  P.story.innerHTML = f.story;
  for (const [name, html] of Object.entries(f.html || {})) P.figs[name].innerHTML = html;
  for (const [name, fig] of Object.entries(f.figs || {})) draw(P, name, fig);
  note(P);
}

function draw(P, name, fig) {
  const gd = P.figs[name];
  if (!window.Plotly) { P.waiting = true; return; }  // Streamlit loads plotly.js with its first chart
  const layout = Object.assign({}, fig.layout, {template: P.template, autosize: true});
  // The box keeps the figure's height: a redraw after a resize had left it 0 px tall, the figure spilling
  // over what follows.
  if (layout.height) gd.style.minHeight = `${layout.height}px`;
  window.Plotly.react(gd, fig.data, layout, {displaylogo: false, responsive: true});
}

function stageLayout(P, panels) {
  P.stage.innerHTML = "";
  P.figs = {};
  for (const row of panels) {
    const r = el("div", "pd-row", P.stage);
    r.style.gridTemplateColumns = row.map((p) => p.width + "fr").join(" ");
    for (const p of row) {
      const cell = el("div", "pd-cell", r);
      const h = el("div", "pd-head", cell);
      el("span", "pd-title", h, p.title);
      for (const b of p.badges) el("span", "pd-badge pd-" + b.kind, h, b.text).title = b.help;
      if (p.help) el("span", "pd-help", h, "?").title = p.help;
      P.figs[p.name] = el("div", p.html ? "pd-html" : "pd-fig", cell);
      if (p.caption) el("div", "pd-caption", cell, p.caption);
    }
  }
}

function waitForPlotly(P) {
  if (!P.waiting) return;
  const t0 = performance.now();
  const poll = () => {
    if (window.Plotly) { P.waiting = false; show(P, P.i); return; }
    if (performance.now() - t0 < 20000) setTimeout(poll, 100);
  };
  poll();
}

export default function (component) {
  const {data, parentElement, setStateValue} = component;
  let P = parentElement.__pdPlayer;
  if (!P) {
    P = parentElement.__pdPlayer = build(parentElement);
    setSpeed(P, 1);
  }
  P.setState = setStateValue;
  P.ns = data.ns;
  if (data.key !== P.framesKey) {  // a new trace, or other stage panels: rebuild
    stopTimer(P);
    P.framesKey = data.key;
    P.frames = JSON.parse(data.frames);
    P.template = data.template ? JSON.parse(data.template) : undefined;
    P.offset = data.offset || 0;  // frames[0] is step offset + 1
    P.n = data.n || P.frames.length;
    P.range.max = P.n;
    P.range.disabled = P.n === 1;
    P.buttons.play.disabled = P.n === 1;
    if (P.framesLayout !== JSON.stringify(data.panels)) {
      P.framesLayout = JSON.stringify(data.panels);
      stageLayout(P, data.panels);
    }
    P.pyStep = null;
  }
  if (data.override) P.frames[data.step - 1 - P.offset] = data.override;  // the node picked below, this step
  if (data.step !== P.pyStep) {  // Python moved (the URL, a link, a pause that came back): follow it
    P.pyStep = data.step;
    if (!P.timer) show(P, data.step);
  } else if (!P.timer) {
    show(P, P.i);
  }
  if (P.resume && P.frames[P.i - 1 - P.offset]) {  // the next window arrived while playing: play on
    P.resume = false;
    play(P);
  }
  waitForPlotly(P);
  return () => stopTimer(P);
}
