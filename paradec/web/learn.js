// Questions and exercises in the browser (paradec.learn's JSON, in the visitor's language: paradec/stage/learn.py): the
// step player (ui/player.js) asks its predict questions with askPanel, the quiz (ui/quiz.js) shows a page's
// questions and exercises. Nothing goes back to a server: the checker is here (paradec.learn.exercises.check is
// the same in Python), and the scores live in the browser's sessionStorage, per page and for the session.
const LEARN_LABELS = {score: "This page: {right} of {asked} predicted right · this session: {sright} of {sasked}",
                      right: "Right.", wrong: "Not quite: the answer was {answer}.", why: "Why:", terms: "Words:",
                      check: "Check", hint: "Hint:", solved: "Right!", giveup: "Show the answer", answer: "Answer:",
                      wait: "Answer to see the verify pass.", reveal: "Reveal to the class",
                      class: "The class is voting: reveal when the votes are in.", revealed: "The answer: {answer}.",
                      placeholder: "your answer", again: "Try again."};
const SCORE_KEY = "paradec.predict";
const LETTER = "ABCDEFGHIJKLMNOP";

function learnFill(text, values) {
  return text.replace(/\{(\w+)\}/g, (all, name) => (name in values ? String(values[name]) : all));
}

function learnEl(tag, cls, parent, html) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (html !== undefined) e.innerHTML = html;
  if (parent) parent.appendChild(e);
  return e;
}

function scoreRead() {
  try {
    const s = JSON.parse(sessionStorage.getItem(SCORE_KEY));
    if (s && typeof s.asked === "number" && s.pages) return s;
  } catch (e) { /* no storage (a sandbox), or not ours: start afresh */ }
  return {asked: 0, right: 0, pages: {}};
}

function scoreAdd(page, right) {
  const s = scoreRead(), p = s.pages[page] || {asked: 0, right: 0};
  s.asked += 1; p.asked += 1;
  if (right) { s.right += 1; p.right += 1; }
  s.pages[page] = p;
  try { sessionStorage.setItem(SCORE_KEY, JSON.stringify(s)); } catch (e) { /* kept for this view only */ }
  return s;
}

function scoreLine(box, labels, page) {
  const s = scoreRead(), p = s.pages[page] || {asked: 0, right: 0};
  const line = learnEl("div", "pd-score", box);
  line.textContent = learnFill(labels.score, {right: p.right, asked: p.asked, sright: s.right, sasked: s.asked});
  line.dataset.asked = p.asked;
  line.dataset.right = p.right;
  line.dataset.sessionAsked = s.asked;
}

function termLine(box, labels, terms) {
  if (!terms || !terms.length) return;
  const line = learnEl("div", "pd-terms", box);
  learnEl("span", "", line).textContent = labels.terms + " ";
  terms.forEach((t, k) => {
    const a = learnEl("a", "", line);
    a.href = t.href;
    a.target = "_blank";
    a.textContent = t.text;
    a.title = t.title || "";
    if (k < terms.length - 1) line.appendChild(document.createTextNode(" · "));
  });
}

// A predict question in box. opts: labels, page (the scores' page), vote (a class answers: the presenter reveals),
// chosen (undefined: not answered yet; a choice's index; -1: revealed to a class), onAnswer(choice).
function askPanel(box, q, opts) {
  const L = opts.labels;
  box.innerHTML = "";
  box.hidden = false;
  box.dataset.kind = q.kind;
  const answered = opts.chosen !== undefined && opts.chosen !== null;
  box.dataset.answered = answered ? "1" : "0";
  learnEl("div", "pd-q", box, q.text);
  const row = learnEl("div", "pd-choices", box);
  q.choices.forEach((c, k) => {
    const b = learnEl(opts.vote || answered ? "span" : "button", "pd-choice", row, `${LETTER[k]}. ${c}`);
    if (b.tagName === "BUTTON") { b.type = "button"; b.onclick = () => opts.onAnswer(k); }
    if (answered) b.classList.toggle("pd-right", k === q.answer);
    if (answered) b.classList.toggle("pd-picked", k === opts.chosen && k !== q.answer);
  });
  if (!answered && opts.vote) {
    learnEl("span", "pd-wait", row, "").textContent = L.class;
    const r = learnEl("button", "pd-btn pd-reveal", row);
    r.type = "button";
    r.textContent = L.reveal;
    r.onclick = () => opts.onAnswer(-1);
  } else if (!answered) {
    learnEl("span", "pd-wait", row).textContent = L.wait;
  }
  if (answered) {
    const good = opts.chosen === q.answer, out = learnEl("div", "pd-why " + (good ? "pd-good" : "pd-bad"), box);
    const answer = `${LETTER[q.answer]}. ${q.choices[q.answer]}`;
    const verdict = opts.chosen === -1 ? learnFill(L.revealed, {answer}) : good ? L.right : learnFill(L.wrong, {answer});
    out.innerHTML = `${verdict} <b>${L.why}</b> ${q.why}`;
    if (opts.chosen !== -1) scoreLine(box, L, opts.page);
  }
  termLine(box, L, q.terms);
}

// Exercises: a number within its tolerance (a decimal comma is a point), or the right choice.
function checkExercise(ex, given) {
  if (ex.kind === "choice") return Number(given) === ex.answer;
  const x = Number(String(given).trim().slice(0, 40).replace(",", "."));
  return String(given).trim() !== "" && Number.isFinite(x) && Math.abs(x - ex.answer) <= ex.tolerance + 1e-9;
}

function exercisePanel(box, ex, labels) {
  const L = labels, item = learnEl("div", "pd-ex", box);
  item.dataset.id = ex.id;
  learnEl("div", "pd-q", item, ex.text);
  const row = learnEl("div", "pd-choices", item), out = learnEl("div", "pd-ex-out", item);
  let tries = 0;
  const done = (good) => {
    item.dataset.solved = good ? "1" : "0";
    out.className = "pd-ex-out pd-why " + (good ? "pd-good" : "pd-bad");
    out.innerHTML = (good ? `<b>${L.solved}</b> ` : `<b>${L.answer}</b> `) + ex.why;
    row.querySelectorAll("button, input").forEach((x) => { x.disabled = true; });
  };
  const answer = (given) => {
    if (checkExercise(ex, given)) return done(true);
    tries += 1;
    item.dataset.tries = tries;
    out.className = "pd-ex-out pd-why pd-bad";
    out.innerHTML = `${L.again} <b>${L.hint}</b> ${ex.hint}`;
    if (tries >= 2 && !row.querySelector(".pd-giveup")) {
      const g = learnEl("button", "pd-btn pd-giveup", row);
      g.type = "button";
      g.textContent = L.giveup;
      g.onclick = () => done(false);
    }
  };
  if (ex.kind === "choice") {
    ex.choices.forEach((c, k) => {
      const b = learnEl("button", "pd-choice", row, `${LETTER[k]}. ${c}`);
      b.type = "button";
      b.onclick = () => answer(k);
    });
  } else {
    const input = learnEl("input", "pd-input", row);
    input.inputMode = "decimal";
    input.placeholder = L.placeholder;
    input.setAttribute("aria-label", L.placeholder);
    const b = learnEl("button", "pd-btn pd-check", row);
    b.type = "button";
    b.textContent = L.check;
    b.onclick = () => answer(input.value);
    input.onkeydown = (e) => { if (e.key === "Enter") answer(input.value); };
  }
}
