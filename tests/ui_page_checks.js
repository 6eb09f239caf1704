// Run by tools/ui_check.py --page-js on every page at every size (tests/test_ui_browser.py).
// Problems: text cut by its box, text under 11 px, chart text outside its chart; on the Medusa page the
// player must move at least 3 steps in 1.5 s at 4 steps/s, its step text must equal its scrubber, and the
// details under it must follow when it pauses.
async () => {
  const problems = [];
  const vis = (e) => e.getClientRects().length && getComputedStyle(e).visibility !== "hidden";
  const main = document.querySelector('[data-testid="stMain"]');
  const name = (e) => (e.innerText || e.textContent || "").trim().slice(0, 60);
  // 1. HTML text: a box that hides what overflows must not hide its own text; nothing under 11 px.
  for (const e of main.querySelectorAll("p, span, label, button, h1, h2, h3, h4, h5, a, td, th, div")) {
    if (!vis(e) || e.closest(".js-plotly-plot, [data-testid='stCode'], [data-testid='stDataFrame']")) continue;
    const own = Array.from(e.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const cs = getComputedStyle(e);
    if (parseFloat(cs.fontSize) < 11) problems.push(`text under 11 px (${cs.fontSize}): "${name(e)}"`);
    for (let box = e, up = 0; box && up < 3; box = box.parentElement, up++) {  // its box, or one just around it
      const bs = getComputedStyle(box);
      const hides = /hidden|clip/.test(bs.overflowX) || bs.textOverflow === "ellipsis";
      if (hides && box.scrollWidth > box.clientWidth + 2) {
        problems.push(`text cut by its box: "${name(e)}"`);
        break;
      }
    }
  }
  // 2. Chart text: inside its chart, and at least 11 px. The player's figures follow their boxes through a
  // ResizeObserver; after the window changes size, measure them once that resize has run, as a person would.
  if (window.Plotly)
    await Promise.all(Array.from(main.querySelectorAll(".pd-stage .js-plotly-plot"), (gd) =>
      Promise.resolve(window.Plotly.Plots.resize(gd)).catch(() => null)));
  for (const plot of main.querySelectorAll(".js-plotly-plot")) {
    if (!vis(plot)) continue;
    const box = plot.getBoundingClientRect();
    for (const t of plot.querySelectorAll(".main-svg text")) {
      const s = (t.textContent || "").trim();
      if (!s || t.closest(".modebar")) continue;
      const r = t.getBoundingClientRect();
      if (!r.width) continue;
      const size = parseFloat(t.style.fontSize || getComputedStyle(t).fontSize);
      if (size < 11) problems.push(`chart text under 11 px (${size}px): "${s.slice(0, 40)}"`);
      if (r.left < box.left - 2 || r.right > box.right + 2 || r.top < box.top - 2 || r.bottom > box.bottom + 2)
        problems.push(`chart text outside its chart: "${s.slice(0, 40)}"`);
    }
  }
  // 3. The player, on one page: speed, step text = scrubber, the details follow.
  const player = main.querySelector(".pd-player");
  const info = {};
  if (player && location.pathname === "/medusa") {
    const step = () => Number(player.querySelector(".pd-range").value);
    const label = () => player.querySelector(".pd-step-label").textContent;
    player.querySelector(".pd-first").click();
    player.querySelector('.pd-speed[data-speed="4"]').click();
    const start = step();
    player.querySelector(".pd-play").click();
    const seen = [];
    for (let k = 0; k < 15; k++) {
      await new Promise((r) => setTimeout(r, 100));
      seen.push([label(), step()]);
    }
    player.querySelector(".pd-play").click();  // pause
    info.moved = step() - start;
    if (info.moved < 3) problems.push(`player moved ${info.moved} steps in 1.5 s at 4 steps/s`);
    for (const [text, value] of seen)
      if (text !== `Step ${value} of ${player.querySelector(".pd-range").max}`)
        problems.push(`step text "${text}" while the scrubber says ${value}`);
    const want = `Details of step ${step()}`;
    let followed = false;
    for (let k = 0; k < 100 && !followed; k++) {  // the server redraws the details when the player stops
      await new Promise((r) => setTimeout(r, 200));
      followed = Array.from(main.querySelectorAll("h4")).some((h) => h.textContent.trim().startsWith(want));
    }
    if (!followed) problems.push(`the details did not follow the paused player to step ${step()}`);
  }
  return {problems: Array.from(new Set(problems)).slice(0, 30), info};
}
