// mongomq web: SVG line charts drawn from the history samples (no third-party code).
// MQCharts.line(title, series, opts) returns a <div class="chart"> holding an <svg>;
// a series is {name, points: [[t_epoch_s, value], ...]}; null values break the line.
"use strict";
const MQCharts = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const W = 600, H = 200, L = 48, R = 10, T = 10, B = 24;

  function svg(tag, attrs, text) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // About five round ticks from 0 to the maximum.
  function ticks(max) {
    if (!(max > 0)) return [0, 1];
    const raw = max / 4, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw);
    const out = [];
    for (let v = 0; v <= max + step * 0.001; v += step) out.push(v);
    if (out[out.length - 1] < max) out.push(out[out.length - 1] + step);
    return out;
  }

  function fmtNum(v) {
    if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (Math.abs(v) >= 1e4) return (v / 1e3).toFixed(0) + "k";
    if (Math.abs(v) >= 1e3) return (v / 1e3).toFixed(1) + "k";
    return Number.isInteger(v) ? String(v) : v.toFixed(1);
  }

  function fmtClock(t, seconds) {
    const d = new Date(t * 1000), two = n => String(n).padStart(2, "0");
    return two(d.getHours()) + ":" + two(d.getMinutes()) + (seconds ? ":" + two(d.getSeconds()) : "");
  }

  function line(title, series, opts) {
    opts = opts || {};
    const box = document.createElement("div");
    box.className = "chart";
    const h = document.createElement("h3");
    h.textContent = title;
    box.appendChild(h);
    let t0 = Infinity, t1 = -Infinity, vmax = 0, count = 0;
    for (const s of series)
      for (const [t, v] of s.points) {
        if (v === null || !isFinite(v)) continue;
        t0 = Math.min(t0, t); t1 = Math.max(t1, t); vmax = Math.max(vmax, v); count++;
      }
    const root = svg("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title});
    if (count === 0) {
      root.appendChild(svg("text", {x: W / 2, y: H / 2, "text-anchor": "middle"}, "no samples yet"));
      box.appendChild(root);
      return box;
    }
    if (t1 === t0) { t0 -= 30; t1 += 30; }
    const ys = ticks(vmax), ymax = ys[ys.length - 1] || 1;
    const x = t => L + (t - t0) / (t1 - t0) * (W - L - R);
    const y = v => H - B - v / ymax * (H - T - B);
    for (const v of ys) {
      root.appendChild(svg("line", {class: "grid", x1: L, x2: W - R, y1: y(v), y2: y(v)}));
      root.appendChild(svg("text", {x: L - 6, y: y(v) + 3, "text-anchor": "end"}, fmtNum(v) + (opts.unit || "")));
    }
    const nx = 5;
    for (let i = 0; i <= nx; i++) {
      const t = t0 + (t1 - t0) * i / nx;
      const anchor = i === 0 ? "start" : i === nx ? "end" : "middle";
      root.appendChild(svg("text", {x: x(t), y: H - 6, "text-anchor": anchor}, fmtClock(t, t1 - t0 < 600)));
    }
    root.appendChild(svg("line", {class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B}));
    root.appendChild(svg("line", {class: "axis", x1: L, x2: L, y1: T, y2: H - B}));
    series.forEach((s, i) => {
      let d = "", pen = false;
      for (const [t, v] of s.points) {
        if (v === null || !isFinite(v)) { pen = false; continue; }
        d += (pen ? "L" : "M") + x(t).toFixed(1) + " " + y(v).toFixed(1) + " ";
        pen = true;
      }
      if (d) root.appendChild(svg("path", {class: "line s" + (i % 5), d: d.trim()}));
    });
    box.appendChild(root);
    const legend = document.createElement("div");
    legend.className = "legend";
    series.forEach((s, i) => {
      const e = document.createElement("span");
      e.className = "s" + (i % 5);
      e.textContent = s.name;
      legend.appendChild(e);
    });
    box.appendChild(legend);
    return box;
  }

  // Per-minute rates between consecutive samples of a counter (null across gaps).
  function perMinute(samples, f) {
    const out = [];
    for (let i = 1; i < samples.length; i++) {
      const a = samples[i - 1], b = samples[i], dt = b.t - a.t, va = f(a), vb = f(b);
      out.push([b.t, va === null || vb === null || !(dt > 0) ? null : Math.max(0, (vb - va) / dt * 60)]);
    }
    return out;
  }

  return {line, perMinute, fmtClock};
})();
