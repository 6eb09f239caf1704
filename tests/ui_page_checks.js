// Run by tools/ui_check.py --page-js on every page at every size (tests/test_ui_browser.py).
// Problems: text cut by its box, text under 11 px, a badge under 4.5:1; chart text under 11 px as drawn, cut by
// its chart or its plot area, over other chart text, a legend over its chart's title; on every page with a player
// (at its widest and on the projector), the player must keep 3.5 steps/s at 4 steps/s, its step text must equal its
// scrubber, and the details under it must follow when it pauses; on Speculative sampling, a trace that replaces the
// one shown must show, its details after it.
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
  // 1b. Badges (MEASURED, FROM RUN, MODEL...) read at 4.5:1 or more (WCAG AA), text colour against the badge's own
  // background over the page's, as computed from the styles.
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const over = (top, under) => top.length > 3 && top[3] < 1 ? top.slice(0, 3).map((v, k) => v * top[3] +
    under[k] * (1 - top[3])) : top.slice(0, 3);
  const lum = (c) => {
    const l = c.map((v) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4));
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
  };
  const page = over(rgb(getComputedStyle(document.body).backgroundColor), [255, 255, 255]);
  for (const b of main.querySelectorAll(".stMarkdownBadge")) {
    if (!vis(b)) continue;
    const cs = getComputedStyle(b), back = over(rgb(cs.backgroundColor), page), fore = over(rgb(cs.color), back);
    const [hi, lo] = [lum(fore), lum(back)].sort((x, y) => y - x);
    const ratio = (hi + 0.05) / (lo + 0.05);
    if (ratio < 4.5)
      problems.push(`badge "${name(b)}" at ${ratio.toFixed(2)}:1 (${cs.color} on ${cs.backgroundColor})`);
  }
  // 2. Chart text as a person sees it: at least 11 px on screen (plotly shrinks a bar's or a cell's text to fit
  // and scales it by a transform, leaving its font-size as it was), not cut by its chart or its plot area, no
  // two texts over each other, no legend over the title. The player's figures follow their boxes through a
  // ResizeObserver; after the window changes size, measure them once that resize has run, as a person would.
  // They are drawn once plotly.js has loaded, which the app's idle state does not wait for: wait up to 5 s.
  const drawn = () => Array.from(main.querySelectorAll(".pd-stage .pd-fig")).every((f) => f.querySelector(".main-svg"));
  for (let k = 0; k < 50 && !drawn(); k++) await new Promise((r) => setTimeout(r, 100));
  // 0. The first screen of a projector (1024x768), presenting or not: the Play button and the step's drawing (the
  // tree, or the mask) both in view before anything scrolls. A phone (390 px): nothing wider than the screen, and
  // every button at least 44 px tall, a finger's.
  const box = (e) => e.getBoundingClientRect();
  const play = main.querySelector(".pd-play"), drawing = main.querySelector(".pd-drawing .pd-fig");
  if (innerWidth === 1024 && innerHeight === 768 && play && drawing && main.scrollTop === 0) {
    const seen = (e) => box(e).height > 0 && box(e).top >= 0 && box(e).bottom <= innerHeight + 2;
    if (!seen(play) || !seen(drawing))
      problems.push(`first screen: Play at ${Math.round(box(play).top)}-${Math.round(box(play).bottom)} px, the ` +
                    `drawing at ${Math.round(box(drawing).top)}-${Math.round(box(drawing).bottom)} px of ${innerHeight}`);
  }
  if (innerWidth <= 400) {
    const doc = document.documentElement;
    if (doc.scrollWidth > doc.clientWidth + 1 || main.scrollWidth > main.clientWidth + 1)
      problems.push(`the page scrolls sideways at ${innerWidth} px (${Math.max(doc.scrollWidth, main.scrollWidth)} px)`);
    const small = Array.from(document.querySelectorAll("button, [role=button]"))
      .filter((b) => vis(b) && box(b).width > 0 && box(b).height > 0 && box(b).height < 44);
    if (small.length) problems.push(`${small.length} button(s) under 44 px at ${innerWidth} px: ` +
                                    `"${name(small[0]) || small[0].getAttribute("aria-label")}" ${Math.round(box(small[0]).height)} px`);
  }
  if (window.Plotly)
    await Promise.all(Array.from(main.querySelectorAll(".pd-stage .js-plotly-plot"), (gd) =>
      Promise.resolve(window.Plotly.Plots.resize(gd)).catch(() => null)));
  const meet = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2 &&
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2;  // 1-2 px of touching boxes is no overlap
  const corners = (t) => {  // a text's box as drawn: turned with the text (a slanted tick label's box is slanted)
    const b = t.getBBox(), m = t.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => new DOMPoint(x, y).matrixTransform(m));
  };
  const cross = (p, q) => {  // two drawn boxes overlap by more than 2 px along every side's direction
    for (const poly of [p, q])
      for (let k = 0; k < 4; k++) {
        const a = poly[k], b = poly[(k + 1) % 4], len = Math.hypot(b.x - a.x, b.y - a.y) || 1;
        const along = (c) => ((b.y - a.y) * c.x - (b.x - a.x) * c.y) / len;
        const [p0, p1] = [Math.min(...p.map(along)), Math.max(...p.map(along))];
        const [q0, q1] = [Math.min(...q.map(along)), Math.max(...q.map(along))];
        if (Math.min(p1, q1) - Math.max(p0, q0) <= 2) return false;
      }
    return true;
  };
  const within = (r, b) => r.left >= b.left - 2 && r.right <= b.right + 2 && r.top >= b.top - 2 &&
    r.bottom <= b.bottom + 2;
  const hidden = (e, plot) => {  // opacity is not inherited: look up to the chart
    for (; e && e !== plot; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.display === "none" || cs.visibility === "hidden" || cs.opacity === "0") return true;
    }
    return false;
  };
  const onScreen = (t) => {  // font-size times the scale from the text's units to the screen's pixels
    const m = t.getScreenCTM(), scale = m ? Math.hypot(m.a, m.b) : 1;
    return Math.min(...[t, ...t.querySelectorAll("tspan")].map((e) => parseFloat(getComputedStyle(e).fontSize)))
      * scale;
  };
  const clipOf = (t) => {  // the screen box of the clip path around a text (plotly clips a trace to its plot area)
    const g = t.closest("[clip-path]");
    const id = g && /url\(["']?#([^"')]+)/.exec(g.getAttribute("clip-path"));
    const rect = id && document.getElementById(id[1])?.querySelector("rect");
    if (!rect) return null;
    const m = g.getScreenCTM(), at = (k) => parseFloat(rect.getAttribute(k)) || 0;
    const a = new DOMPoint(at("x"), at("y")).matrixTransform(m);
    const b = new DOMPoint(at("x") + at("width"), at("y") + at("height")).matrixTransform(m);
    return {left: Math.min(a.x, b.x), right: Math.max(a.x, b.x), top: Math.min(a.y, b.y), bottom: Math.max(a.y, b.y)};
  };
  const words = (t) => (Array.from(t.querySelectorAll("tspan.line"), (l) => l.textContent).join(" ") ||
    t.textContent || "").trim();  // the lines of a title in two, a space between them
  const chartName = (plot) => {  // its title, else its panel's in the player
    const t = plot.querySelector(".gtitle");
    const s = t ? words(t) : plot.closest(".pd-cell")?.querySelector(".pd-title")?.textContent;
    return `"${(s || "untitled chart").trim().slice(0, 50)}" on ${location.pathname}`;
  };
  const quote = (s) => `"${s.slice(0, 30)}"`;
  for (const plot of main.querySelectorAll(".js-plotly-plot")) {
    if (!vis(plot)) continue;
    const box = plot.getBoundingClientRect(), chart = chartName(plot);
    const texts = [], small = [], cut = [], out = [], over = [];
    for (const t of plot.querySelectorAll(".main-svg text")) {
      const s = words(t), r = t.getBoundingClientRect();
      if (!s || !r.width || hidden(t, plot)) continue;
      const clip = clipOf(t);
      if (clip && !meet(r, clip)) {  // wholly clipped away: not drawn, and a legend entry only seen by scrolling
        if (t.closest(".legend")) cut.push(s);
        continue;
      }
      texts.push([t, r, corners(t), s]);
      const size = onScreen(t);
      if (size < 11) small.push([size, s]);
      if (clip && !within(r, clip)) cut.push(s);
      if (!within(r, box)) out.push(s);
    }
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (texts[i][0] !== texts[j][0] && meet(texts[i][1], texts[j][1]) && cross(texts[i][2], texts[j][2]))
          over.push([texts[i][3], texts[j][3]]);
    if (small.length) {
      const [size, s] = small.reduce((a, b) => (b[0] < a[0] ? b : a));
      problems.push(`chart text ${size.toFixed(1)} px in ${chart} (${small.length} under 11 px): ${quote(s)}`);
    }
    if (over.length)
      problems.push(`overlapping text in ${chart} (${over.length} pairs): ${over[0].map(quote).join(" on ")}`);
    if (cut.length) problems.push(`text cut at the plot or legend edge in ${chart} (${cut.length}): ${quote(cut[0])}`);
    if (out.length) problems.push(`text outside its chart ${chart} (${out.length}): ${quote(out[0])}`);
    const legend = plot.querySelector(".legend .bg"), title = plot.querySelector(".gtitle");
    if (legend && title && vis(legend) && meet(legend.getBoundingClientRect(), title.getBoundingClientRect()))
      problems.push(`legend over the title of ${chart}`);
  }
  // 3. The player, on every page with one, where it draws the most (a window wider than 1024 px) and on the
  // projector (presenter mode): one code plays at every size, a narrower window only draws less. At 4 steps/s, with
  // its tree and mask in view (what it redraws), it keeps at least 3.5 steps/s, counted from its first step change
  // over 2 s or to the end; its step text equals its scrubber; the details under it follow when it pauses.
  const player = main.querySelector(".pd-player");
  const present = new URLSearchParams(location.search).get("present") === "1";
  const details = (k) => Array.from(main.querySelectorAll("h4")).some((h) =>
    new RegExp(`^(Details of step|Détails de l'étape) ${k}(\\D|$)`).test(h.textContent.trim()));  // en, fr
  const running = () => document.querySelector('[data-testid="stApp"]')?.getAttribute("data-test-script-state")
    === "running";
  const info = {title: main.querySelector("h1")?.innerText || ""};  // the page's own title, for the test's language
  if (player && (innerWidth > 1024 || present) && Number(player.querySelector(".pd-range").max) > 2) {
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const range = player.querySelector(".pd-range"), n = Number(range.max);
    const step = () => Number(range.value);
    const label = () => player.querySelector(".pd-step-label").textContent;
    const hasDetails = details("\\d+");
    const scrolled = [];
    for (let e = player.parentElement; e; e = e.parentElement) scrolled.push([e, e.scrollTop]);
    (player.querySelector(".pd-side") || player).scrollIntoView({block: "start"});
    // From the step it opened on when eight steps follow it (the details are drawn there already), else from the
    // first, which the player tells the server: then the server's redraw first.
    const start = n - step() >= 9 ? step() : 1;
    if (start === 1) player.querySelector(".pd-first").click();
    player.querySelector('.pd-speed[data-speed="4"]').click();
    if (start === 1) await sleep(400);  // the player tells the server its step
    for (let k = 0; k < 30 && (running() || (hasDetails && !details(start))); k++) await sleep(100);
    const changes = [], seen = [];
    const onStep = new MutationObserver(() => changes.push([performance.now(), step()]));
    onStep.observe(player.querySelector(".pd-step-label"), {childList: true, characterData: true, subtree: true});
    player.querySelector(".pd-play").click();
    for (const t0 = performance.now(); performance.now() - t0 < 2000 && step() < n;) {
      await sleep(50);
      seen.push([label(), step()]);
    }
    if (player.parentElement.dataset.playing === "1") player.querySelector(".pd-play").click();  // pause
    onStep.disconnect();
    const all = changes.filter(([, s], k) => s !== (k ? changes[k - 1][1] : start));
    // Nothing from the server moves a playing player: a step back is a bug (a late redraw once stopped it, when
    // Streamlit ran the cleanup of a render a newer one had overtaken). The rate counts from the last one.
    const back = all.reduce((b, [, s], k) => (k && s < all[k - 1][1] ? k : b), 0);
    if (back) problems.push(`the playing player went back from step ${all[back - 1][1]} to ${all[back][1]}`);
    const moves = all.slice(back);
    const [first, last] = [moves[0], moves[moves.length - 1]];
    info.moved = last ? last[1] - (back ? first[1] : start) : 0;
    info.rate = moves.length > 1 ? +((last[1] - first[1]) / ((last[0] - first[0]) / 1000)).toFixed(2) : 0;
    info.slowest_ms = Math.round(Math.max(0, ...moves.slice(1).map(([t], k) => t - moves[k][0])));
    if (!(info.rate >= 3.5))
      problems.push(`player at ${info.rate} steps/s at 4 steps/s (${info.moved} steps; slowest ${info.slowest_ms} ms)`);
    for (const [text, value] of seen)
      if (String(text.match(/\d+/g)) !== `${value},${n}`)  // "Step 3 of 9", "Étape 3 sur 9"
        problems.push(`step text "${text}" while the scrubber says ${value}`);
    let followed = !hasDetails;
    for (let k = 0; k < 100 && !followed; k++) {  // the server redraws the details when the player stops
      await sleep(200);
      followed = details(step());
    }
    if (!followed) problems.push(`the details did not follow the paused player to step ${step()}`);
    for (const [e, y] of scrolled) e.scrollTop = y;
  }
  // 4. Presenter mode (?present=1) at a projector's 1024x768: a method page fits in three screens.
  if (player && present && innerWidth <= 1024) {
    info.screens = +(main.scrollHeight / innerHeight).toFixed(2);
    if (info.screens > 3) problems.push(`presenter mode: the page is ${info.screens} screens long (at most 3)`);
  }
  // 5. On Speculative sampling, another recorded trace replaces the one shown: its player comes first, and its
  // details follow once the browser has drawn it (ui/replay.py), within 20 s.
  const SAMPLED = /sampled|échantillonné/;  // the sampled run's name, in either language
  const runs = location.pathname === "/sps" && player && main.querySelector('[class*="st-key-sps-recorded"]');
  const shown = runs && (runs.querySelector("input")?.value || runs.innerText);
  if (runs && !SAMPLED.test(shown)) {  // the run selector: open it, pick the sampled run
    const was = player.parentElement.__pdPlayer.framesKey;
    const ready = () => player.parentElement.__pdPlayer.framesKey !== was && !running() && details("\\d+");
    let other = null;
    for (let k = 0; k < 40 && !other; k++) {  // the page may have redrawn the selector since: find it afresh
      if (k % 10 === 0) main.querySelector('[class*="st-key-sps-recorded"] .react-aria-ComboBox button')?.click();
      await new Promise((r) => setTimeout(r, 100));
      other = Array.from(document.querySelectorAll("[role=option]")).find((o) => SAMPLED.test(o.textContent));
    }
    if (other) other.click();
    else problems.push("the run selector offered no sampled run");
    for (let k = 0; k < 100 && !ready(); k++) await new Promise((r) => setTimeout(r, 200));
    info.replaced = ready();
    if (!info.replaced) problems.push("another recorded trace: its player or its details did not show within 20 s");
  }
  return {problems: Array.from(new Set(problems)).slice(0, 30), info};
}
