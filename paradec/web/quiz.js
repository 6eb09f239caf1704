// The quiz (ui/quiz.py puts learn.js before this file, in one module): a page's predict questions that stand
// without a player (the Roofline page's) and a method page's exercises, answered and checked in the browser.
export default function mountQuiz(component) {
  const {data, parentElement} = component;
  const key = JSON.stringify(data);
  if (parentElement.__pdQuiz === key) return;  // a rerun with the same items keeps what the learner typed
  parentElement.__pdQuiz = key;
  parentElement.innerHTML = "";
  const labels = Object.assign({}, LEARN_LABELS, data.labels || {});
  const root = learnEl("div", "pd-quiz", parentElement);
  for (const q of data.questions || []) {
    const box = learnEl("div", "pd-ask", root);
    const draw = (chosen) => askPanel(box, q, {labels, page: data.page, vote: false, chosen, onAnswer: (k) => {
      scoreAdd(data.page, k === q.answer);
      draw(k);
    }});
    draw(undefined);
  }
  for (const ex of data.exercises || []) exercisePanel(root, ex, labels);
}
