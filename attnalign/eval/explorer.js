"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
// viridis at 9 stops (matplotlib's), interpolated
const V = [[68,1,84],[71,44,122],[59,81,139],[44,113,142],[33,144,141],[39,173,129],[92,200,99],
           [170,220,50],[253,231,37]];
function color(w) {
  const x = Math.min(1, Math.max(0, w)) * (V.length - 1), i = Math.min(V.length - 2, Math.floor(x)), f = x - i;
  const c = V[i].map((v, k) => Math.round(v + f * (V[i + 1][k] - v)));
  return [c, (0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]) > 140 ? "#000" : "#fff"];
}
function bytes(b64) { const s = atob(b64), a = new Uint8Array(s.length); for (let i = 0; i < s.length; i++) a[i] = s.charCodeAt(i); return a; }
const key = (i, j) => i + "-" + j;
let cur = 0, view = 0, row = -1, mats = [];
const el = id => document.getElementById(id);
const sel = el("sent");
D.sentences.forEach((s, k) => { const o = document.createElement("option"); o.value = k;
  o.textContent = s.label + ": " + s.src.slice(0, 8).join(" ") + (s.src.length > 8 ? " …" : ""); sel.appendChild(o); });
function sets(s) {
  const sure = new Set((s.sure || []).map(p => key(p[0], p[1]))), pos = new Set((s.possible || []).map(p => key(p[0], p[1])));
  const links = new Set(s.views[view].links.map(p => key(p[0], p[1])));
  return {sure, pos, links, gold: s.sure !== null};
}
function scores(s) {
  const {sure, pos, links, gold} = sets(s);
  if (!gold) { el("scores").textContent = s.views[view].links.length + " links; no gold"; return; }
  let as = 0, ap = 0; links.forEach(l => { if (sure.has(l)) as++; if (pos.has(l)) ap++; });
  const n = links.size, p = n ? ap / n : 1, r = sure.size ? as / sure.size : 1;
  const aer = n + sure.size ? 1 - (as + ap) / (n + sure.size) : 0;
  el("scores").textContent = `${s.views[view].name}: AER ${(100 * aer).toFixed(1)}, precision ${(100 * p).toFixed(1)}, ` +
    `recall ${(100 * r).toFixed(1)} (${n} links, ${sure.size} sure, ${pos.size} possible gold links)`;
}
function thumbs(s) {
  const box = el("views"); box.textContent = "";
  s.views.forEach((v, k) => {
    const d = document.createElement("div"), c = document.createElement("canvas"), T = s.tgt.length, S = s.src.length;
    d.className = "view" + (k === view ? " on" : ""); d.title = v.name; d.tabIndex = 0;
    c.width = S; c.height = T; const ctx = c.getContext("2d"), img = ctx.createImageData(S, T);
    mats[k].forEach((b, n) => { const [rgb] = color(b / 255); img.data.set([...rgb, 255], 4 * n); });
    ctx.putImageData(img, 0, 0); c.style.height = Math.round(120 * T / Math.max(S, 1)) + "px";
    const t = document.createElement("div"); t.textContent = v.name;
    d.append(c, t); d.onclick = () => { view = k; draw(); }; box.appendChild(d);
  });
}
function draw() {
  const s = D.sentences[cur], T = s.tgt.length, S = s.src.length;
  mats = s.views.map(v => bytes(v.m));
  sel.value = cur; thumbs(s); scores(s);
  const m = mats[view], {sure, pos, links} = sets(s);
  const showL = el("links").checked, showG = el("gold").checked, showE = el("errors").checked;
  const t = el("hm"); t.textContent = "";
  const head = t.insertRow(); head.appendChild(document.createElement("th"));
  s.src.forEach((w, i) => { const th = document.createElement("th"); th.className = "s"; th.textContent = w;
    th.dataset.i = i; head.appendChild(th); });
  for (let j = 0; j < T; j++) {
    const tr = t.insertRow(), th = document.createElement("th"); th.textContent = s.tgt[j]; th.dataset.j = j;
    th.style.textAlign = "right"; tr.appendChild(th);
    for (let i = 0; i < S; i++) {
      const td = tr.insertCell(), w = m[j * S + i] / 255, k = key(i, j), [rgb, ink] = color(w);
      td.style.background = s.views[view].shaded ? `rgb(${rgb})` : "#f4f4f4"; td.style.color = s.views[view].shaded ? ink : "#000";
      td.dataset.i = i; td.dataset.j = j;
      if (showG && sure.has(k)) td.classList.add("gs"); else if (showG && pos.has(k)) td.classList.add("gp");
      let mark = "";
      if (showL && links.has(k)) mark = "●";
      if (showE && s.sure !== null) { if (links.has(k) && !pos.has(k)) mark = "✕"; else if (sure.has(k) && !links.has(k)) mark = "○"; }
      td.textContent = mark;
    }
  }
  el("where").textContent = `${cur + 1} / ${D.sentences.length}`;
  if (row >= T) row = -1; if (row >= 0) focusRow(row);
}
function attends(j) {
  const s = D.sentences[cur], S = s.src.length, m = mats[view];
  const top = s.src.map((w, i) => [m[j * S + i] / 255, w]).sort((a, b) => b[0] - a[0]).slice(0, 5);
  return `"${s.tgt[j]}" attends to ` + top.map(([w, x]) => `${x} ${w.toFixed(2)}`).join(", ");
}
function focusRow(j) {
  row = j; const t = el("hm");
  for (const r of t.rows) r.classList.remove("hl");
  if (j >= 0) { t.rows[j + 1].classList.add("hl"); el("info").textContent = attends(j); }
}
function focusCol(i) {
  const s = D.sentences[cur], S = s.src.length, m = mats[view];
  for (const c of el("hm").querySelectorAll(".hlc")) c.classList.remove("hlc");
  if (i < 0) return;
  for (const r of [...el("hm").rows].slice(1)) r.cells[i + 1].classList.add("hlc");
  const top = s.tgt.map((w, j) => [m[j * S + i] / 255, w]).sort((a, b) => b[0] - a[0]).slice(0, 5);
  el("info").textContent = `attention on "${s.src[i]}" from ` + top.map(([w, x]) => `${x} ${w.toFixed(2)}`).join(", ");
}
el("hm").addEventListener("mouseover", e => {
  const c = e.target.closest("td,th"); if (!c) return;
  const s = D.sentences[cur], S = s.src.length;
  if (c.tagName === "TH" && c.dataset.j !== undefined) { focusCol(-1); focusRow(+c.dataset.j); return; }
  if (c.tagName === "TH" && c.dataset.i !== undefined) { focusRow(-1); focusCol(+c.dataset.i); return; }
  if (c.tagName !== "TD") return;
  const i = +c.dataset.i, j = +c.dataset.j, k = key(i, j), {sure, pos, links} = sets(s);
  const gold = s.sure === null ? "" : sure.has(k) ? "; gold: sure" : pos.has(k) ? "; gold: possible" : "; not in the gold";
  el("info").textContent = `"${s.src[i]}" – "${s.tgt[j]}": weight ${(mats[view][j * S + i] / 255).toFixed(2)}; ` +
    (links.has(k) ? "a link" : "no link") + gold;
});
function go(k) { cur = (k + D.sentences.length) % D.sentences.length; view = Math.min(view, D.sentences[cur].views.length - 1); row = -1; draw(); history.replaceState(null, "", "#" + D.sentences[cur].index); }
el("prev").onclick = () => go(cur - 1); el("next").onclick = () => go(cur + 1); sel.onchange = () => go(+sel.value);
for (const id of ["links", "gold", "errors"]) el(id).onchange = draw;
el("zoom").oninput = () => { document.documentElement.style.setProperty("--c", el("zoom").value + "px");
  document.documentElement.style.setProperty("--fs", Math.max(10, Math.min(16, el("zoom").value * 0.6)) + "px"); };
document.addEventListener("keydown", e => {
  if (e.target.tagName === "SELECT" || e.target.tagName === "INPUT") return;
  const T = D.sentences[cur].tgt.length;
  if (e.key === "ArrowRight") go(cur + 1); else if (e.key === "ArrowLeft") go(cur - 1);
  else if (e.key === "ArrowDown") focusRow(Math.min(T - 1, row + 1)); else if (e.key === "ArrowUp") focusRow(Math.max(0, row - 1));
  else return;
  e.preventDefault();
});
const h = location.hash.slice(1), start = D.sentences.findIndex(s => String(s.index) === h);
cur = start >= 0 ? start : 0; draw();
