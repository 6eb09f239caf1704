// The step player, drawn in the browser: buttons, a speed choice, the scrubber, the step's story,
// the token stream and the stage's figures (plotly, on figures precomputed for every step).
// Playing never waits on the server; the step goes back to Python (setStateValue) when it stops,
// and the panels that Python draws below wait, dimmed, until then. Keys, unless the focus is where they
// mean something else: Space plays or pauses, ← and → step, Home and End go to the first and last step.
// Its words come from Python in the visitor's language (data.labels, ui/player.py); these are the English.
// Predict mode (data.predict): a step whose frame has a question ("ask") shows as proposed ("pre") until the
// question is answered (askPanel, learn.js); playing stops there, and the answer reveals the step.
const SPEEDS = [0.5, 1, 2, 4];
const BUTTONS = ["first", "back", "play", "next", "last"];
const LABELS = {first: "« First", first_title: "first step (Home)", back: "‹ Back", back_title: "previous step (←)",
                play: "▶ Play", pause: "❚❚ Pause", play_title: "play / pause (Space)", next: "Next ›",
                next_title: "next step (→)", last: "Last »", last_title: "last step (End)", speed: "steps/s",
                scrubber: "step (← → Home End)", step: "Step {i} of {n}",
                playing: "Playing: the panels below the player catch up with step {i} when you pause.",
                loading: "Loading step {i}…"};
const KEYS = {" ": "play", ArrowLeft: "back", ArrowRight: "next", Home: "first", End: "last"};
// Where keys already mean something (typing, choosing, another button): the player leaves them alone.
const TAKES_KEYS = "input, textarea, select, button, [contenteditable]:not([contenteditable='false']), " +
  "[role=slider], [role=spinbutton], [role=combobox], [role=listbox], [role=textbox], [role=radio], " +
  "[role=checkbox], [role=switch], [role=tab], [role=menuitem], [role=option]";

function fill(text, values) {  // "Step {i} of {n}" with its values
  return text.replace(/\{(\w+)\}/g, (all, name) => (name in values ? String(values[name]) : all));
}

function build(root) {
  const P = {root, i: 1, n: 1, speed: 1, timer: null, frames: [], framesKey: null, pyStep: null, figs: {},
             want: {}, drawn: {}, inView: new Set(), stills: new Map(), width: 0, fit: {}, labels: LABELS};
  P.wrap = el("div", "pd-player", root);
  const bar = el("div", "pd-bar", P.wrap);
  P.buttons = {};
  for (const name of BUTTONS) {
    const b = el("button", "pd-btn pd-" + name, bar);
    b.type = "button";
    P.buttons[name] = b;
  }
  const speeds = el("span", "pd-speeds", bar);
  P.speedLabel = el("span", "pd-speed-label", speeds);
  P.speedButtons = SPEEDS.map((s) => {
    const b = el("button", "pd-btn pd-speed", speeds, String(s));
    b.type = "button";
    b.dataset.speed = s;
    b.onclick = () => setSpeed(P, s);
    return b;
  });
  P.label = el("span", "pd-step-label", bar);
  P.range = el("input", "pd-range", P.wrap);
  P.range.type = "range";
  P.range.min = 1;
  P.note = el("div", "pd-note", P.wrap);
  P.story = el("div", "pd-story", P.wrap);
  P.ask = el("div", "pd-ask", P.wrap);
  P.ask.hidden = true;
  P.answered = new Map();  // step -> the choice given (-1: revealed to a class)
  P.onPoint = (name, e) => pickNode(P, name, e);
  P.stage = el("div", "pd-stage", P.wrap);
  P.buttons.first.onclick = () => jump(P, 1);
  P.buttons.back.onclick = () => jump(P, P.i - 1);
  P.buttons.next.onclick = () => jump(P, P.i + 1);
  P.buttons.last.onclick = () => jump(P, P.n);
  P.buttons.play.onclick = () => (P.timer ? pause(P) : play(P));
  P.range.oninput = () => { stopTimer(P); show(P, Number(P.range.value)); };
  P.range.onchange = () => report(P);
  relabel(P, LABELS);
  watch(P);
  keys(P);
  return P;
}

function relabel(P, labels) {  // the player's words, in the visitor's language (English where Python sent none)
  P.labels = Object.assign({}, LABELS, labels || {});
  for (const name of BUTTONS) {
    P.buttons[name].textContent = P.labels[name];
    P.buttons[name].title = P.labels[name + "_title"];
  }
  P.speedLabel.textContent = P.labels.speed;
  P.range.setAttribute("aria-label", P.labels.scrubber);
  P.labelsText = JSON.stringify(labels || {});
}

function keys(P) {
  let ate = false;  // a Space the player used must not also press the focused button when it comes up
  const down = (e) => {
    if (!P.root.isConnected) { document.removeEventListener("keydown", down); return; }
    const name = KEYS[e.key];
    if (!name || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented || elsewhere(P, e)) return;
    if (document.querySelector(".pd-player") !== P.wrap) return;  // a page's first player takes the keys
    e.preventDefault();
    ate = e.key === " ";
    if (!(name === "play" && e.repeat) && !P.buttons[name].disabled) P.buttons[name].click();  // held: once
  };
  document.addEventListener("keydown", down);
  P.wrap.addEventListener("keyup", (e) => { if (ate && e.key === " ") e.preventDefault(); ate = false; });
}

function elsewhere(P, e) {  // the focus is where the key means something else
  const t = e.target;
  if (t === P.range) return e.key !== " ";  // the scrubber moves by itself on arrows, Home and End
  if (!(t instanceof Element) || P.wrap.contains(t)) return false;
  return t.matches(TAKES_KEYS) || !!t.closest("[role=listbox], [role=menu], [role=dialog]");
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

function frameAt(P, i) {
  return P.frames[i - 1 - P.offset];
}

function asking(P, i) {  // step i waits for its question's answer
  const f = frameAt(P, i);
  return !!(P.predict && f && f.ask && !P.answered.has(i));
}

function play(P) {
  if (asking(P, P.i)) return;  // the reveal waits for the answer
  if (P.i >= P.n) show(P, 1);  // play from the start once the end is reached
  const every = 1000 / P.speed;
  let due = performance.now() + every;
  const tick = () => {
    if (!P.root.isConnected) { stopTimer(P); return; }  // the page went on without this player
    if (P.i >= P.n) { pause(P); return; }
    show(P, P.i + 1);
    if (asking(P, P.i)) { pause(P); return; }
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
  later(P);
}

function playing(P, on) {
  P.buttons.play.textContent = on ? P.labels.pause : P.labels.play;
  P.root.dataset.playing = on ? "1" : "0";
  document.querySelectorAll(".st-key-pd-details-" + P.ns).forEach((d) => d.classList.toggle("pd-dim", on));
  note(P);
}

function note(P) {
  P.note.textContent = P.timer ? fill(P.labels.playing, {i: P.i}) : "";
}

function report(P) {
  clearTimeout(P.reportTimer);  // a burst of clicks sends one step back to Python
  P.reportTimer = setTimeout(() => {
    if (P.pyStep !== P.i && P.setState) P.setState("step", [P.sent = P.i, Date.now()]);
  }, 250);
}

function show(P, i) {
  i = Math.min(Math.max(1, i), P.n);
  P.i = i;
  P.range.value = i;
  P.label.textContent = fill(P.labels.step, {i, n: P.n});
  P.root.dataset.step = i;
  P.buttons.first.disabled = P.buttons.back.disabled = i === 1;
  P.buttons.next.disabled = P.buttons.last.disabled = i === P.n;
  const f = P.frames[i - 1 - P.offset];
  if (!f) {  // a long trace comes in windows of steps: ask Python for the one with this step
    P.resume = !!P.timer;
    stopTimer(P);
    P.story.textContent = fill(P.labels.loading, {i});
    P.storyOf = null;
    if (P.setState) P.setState("step", [i, Date.now()]);
    return;
  }
  const pre = asking(P, i) ? f.pre : null, shown = pre || f;
  if (P.storyOf !== shown) P.story.innerHTML = shown.story;
  P.storyOf = shown;
  P.want = Object.assign({}, shown.html, shown.figs);
  for (const [name, text] of Object.entries(shown.alt || {})) {  // what a figure shows at this step, in words
    if (P.figs[name]) { P.figs[name].setAttribute("role", "img"); P.figs[name].setAttribute("aria-label", text); }
  }
  veil(P, pre);
  ask(P, f, i);
  paint(P);
  later(P);
  note(P);
}

function veil(P, pre) {  // while a question waits: what the step's outcome would tell is blurred
  P.wrap.classList.toggle("pd-asking", !!pre);
  for (const [name, box] of Object.entries(P.figs))
    box.parentElement.classList.toggle("pd-veil", !!pre && !(name in pre.html || name in pre.figs));
  // the details under the player (CSS: learn.css); a page has one player, and the body outlives a page
  if (pre) document.body.dataset.pdAsking = P.ns;
  else delete document.body.dataset.pdAsking;
}

function ask(P, f, i) {
  if (!P.predict || !f.ask) { P.ask.hidden = true; P.ask.innerHTML = ""; return; }
  askPanel(P.ask, f.ask, {labels: Object.assign({}, LEARN_LABELS, P.labels), page: P.predict.page,
                          vote: P.predict.vote, chosen: P.answered.get(i), onAnswer: (k) => answer(P, i, f.ask, k)});
}

function answer(P, i, q, k) {  // a choice (or -1: the presenter reveals to the class); the step shows whole
  if (P.answered.has(i)) return;
  P.answered.set(i, k);
  if (k === -1) { if (P.setState) P.setState("reveal", [i, Date.now()]); }
  else scoreAdd(P.predict.page, k === q.answer);
  if (P.i === i) show(P, i);
}

function pickNode(P, name, e) {  // a node clicked in the drawn tree answers with its branch
  const f = frameAt(P, P.i), node = e && e.points && e.points[0] ? e.points[0].customdata : -1;
  if (name !== "tree" || !asking(P, P.i) || !f.ask.pick || P.predict.vote || !(node >= 0)) return;
  answer(P, P.i, f.ask, f.ask.pick[node]);
}

function load(P, data) {  // a new trace, or other stage panels
  stopTimer(P);
  P.framesText = data.frames;
  P.frames = JSON.parse(data.frames);
  P.frames.forEach((f, k) => {  // a figure the same as the step before's comes as null
    for (const name of Object.keys(f.figs || {})) if (f.figs[name] === null) f.figs[name] = P.frames[k - 1].figs[name];
  });
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
  forget(P);
  P.answered = new Map();
  P.pyStep = null;
  P.picked = P.override = null;
}

function pick(P, data) {  // the node picked below, highlighted in its step's frame; unpicked, the frame as sent
  const override = data.override ? JSON.stringify(data.override) : null;
  if (override === P.override) return;
  if (P.picked) P.frames[P.picked.k] = P.picked.frame;
  P.override = override;
  P.picked = override ? {k: data.step - 1 - P.offset, frame: P.frames[data.step - 1 - P.offset]} : null;
  if (P.picked) P.frames[P.picked.k] = data.override;
}

export default function mountPlayer(component) {
  const {data, parentElement, setStateValue} = component;
  let P = parentElement.__pdPlayer;
  if (!P) {
    P = parentElement.__pdPlayer = build(parentElement);
    setSpeed(P, 1);
  }
  P.setState = setStateValue;
  P.ns = data.ns;
  P.predict = data.predict || null;
  if (JSON.stringify(data.labels || {}) !== P.labelsText) {  // another language: the new words, playing or not
    relabel(P, data.labels);
    playing(P, !!P.timer);
  }
  // A new key is a new trace, unless its steps are the very ones shown (a page that rebuilt its trace object):
  // then playing goes on.
  const fresh = data.key !== P.framesKey && (data.frames !== P.framesText || JSON.stringify(data.panels) !==
    P.framesLayout);
  if (fresh) load(P, data);
  P.framesKey = data.key;
  present(P, data.presenter, fresh);
  pick(P, data);
  if (data.step !== P.pyStep) {  // Python moved (the URL, a link, a new window of steps): follow it
    P.pyStep = data.step;
    const echo = data.step === P.sent && !fresh;  // the step this player sent, which it may have left since
    if (!P.timer && !echo) show(P, data.step);
  } else if (!P.timer) {
    show(P, P.i);
  }
  if (P.resume && P.frames[P.i - 1 - P.offset]) {  // the next window arrived while playing: play on
    P.resume = false;
    play(P);
  }
  if (data.wait && P.waitedOn !== data.key) {  // the page drew no details for this trace: ask for them once it shows
    P.waitedOn = data.key;
    requestAnimationFrame(() => setTimeout(() => P.setState("drawn", [data.key, Date.now()]), 0));  // after paint
  }
  // Streamlit also calls this when a newer rerun overtook this one before it got here (the player lives on).
  return () => { if (!P.root.isConnected) stopTimer(P); };
}
