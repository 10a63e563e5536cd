// mongomq web: the shell's behaviour. The session (CSRF token, read-only, queues) from
// /api/session, the header (pages, the queue picker), the helpers every page uses
// (DOM building with textContent only: event bytes never become markup; fetch with
// errors shown; POST with the CSRF token), then the page for location.pathname.
"use strict";

const WAIT_MS = 60000; // every request is abandoned after this long (the server's own calls are bounded too)
const MQ = {session: null, queue: null, params: new URLSearchParams(location.search)};

// el("td", {class: "num"}, "text", child, ...): attributes, then text or nodes.
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) {
    const v = attrs[k];
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of kids) {
    if (kid === null || kid === undefined) continue;
    e.appendChild(typeof kid === "object" ? kid : document.createTextNode(String(kid)));
  }
  return e;
}

// A URL of this dashboard: path plus parameters (empty ones left out), q kept.
function href(path, params) {
  const p = new URLSearchParams();
  if (MQ.queue) p.set("q", MQ.queue);
  for (const k in params || {}) if (params[k] !== undefined && params[k] !== null && params[k] !== "") p.set(k, params[k]);
  const s = p.toString();
  return path + (s ? "?" + s : "");
}

function banner(text, ok) {
  const b = document.getElementById("banner");
  b.textContent = text;
  b.className = ok ? "banner ok" : "banner";
  b.hidden = !text;
}

async function api(path, params) {
  const r = await fetch(href("/api/" + path, params), {credentials: "same-origin", headers: {Accept: "application/json"},
    signal: AbortSignal.timeout(WAIT_MS)});
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (!r.ok) throw new Error((body && body.error) || ("HTTP " + r.status));
  return body;
}

// An action: a POST with the CSRF token; fields may repeat (arrays).
async function act(path, fields) {
  const f = new URLSearchParams();
  f.set("q", MQ.queue);
  for (const k in fields || {})
    for (const v of [].concat(fields[k])) f.append(k, v);
  const r = await fetch("/api/" + path, {
    method: "POST", credentials: "same-origin", body: f, signal: AbortSignal.timeout(WAIT_MS),
    headers: {"X-CSRF-Token": MQ.session.csrf, Accept: "application/json"},
  });
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (!r.ok) throw new Error((body && body.error) || ("HTTP " + r.status));
  return body;
}

// A button that runs an action, shows the outcome and then reloads the page's data.
function actionButton(label, id, run, opts) {
  opts = opts || {};
  return el("button", {id, class: opts.danger ? "danger" : null, onclick: async ev => {
    if (opts.confirm && !window.confirm(opts.confirm)) return;
    ev.target.disabled = true;
    try {
      const res = await run();
      banner(opts.done ? opts.done(res) : label + ": done", true);
      await MQ.render();
    } catch (e) {
      banner(label + ": " + e.message);
    } finally {
      ev.target.disabled = false;
    }
  }}, label);
}

function fmtDuration(s) {
  if (s === null || s === undefined || !isFinite(s)) return "–";
  const a = Math.abs(s), sign = s < 0 ? "-" : "";
  if (a < 1) return sign + Math.round(a * 1000) + "ms";
  if (a < 60) return sign + a.toFixed(1) + "s";
  if (a < 3600) return sign + Math.floor(a / 60) + "m" + String(Math.floor(a % 60)).padStart(2, "0") + "s";
  if (a < 86400) return sign + Math.floor(a / 3600) + "h" + String(Math.floor(a % 3600 / 60)).padStart(2, "0") + "m";
  return sign + Math.floor(a / 86400) + "d" + String(Math.floor(a % 86400 / 3600)).padStart(2, "0") + "h";
}

function fmtTime(t) {
  if (t === null || t === undefined || !isFinite(t) || t <= 0) return "–";
  return new Date(t * 1000).toISOString().replace(".000Z", "Z");
}

// Control characters shown as \xNN (the bytes are the event's: never markup).
function visible(text) {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, c => "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"));
}

// An event preview from the API: {text|hex, size, truncated}.
function eventCell(p) {
  if (!p) return el("span", {class: "muted"}, "–");
  const more = p.truncated ? ` … (${p.size} bytes)` : "";
  if (p.hex !== undefined) return el("code", {class: "ev hex", title: "binary: hex"}, "hex " + p.hex + more);
  return el("code", {class: "ev"}, visible(p.text) + more);
}

// An event's attributes (0.7.0: {key: value}) as key=value items, text only.
function attrsCell(a) {
  const entries = a ? Object.entries(a) : [];
  if (entries.length === 0) return el("span", {class: "muted"}, "–");
  return el("span", {class: "attrs"}, ...entries.map(([k, v]) => el("code", {class: "attr"}, k + "=" + visible(v))));
}

function stateBadge(s) {
  return el("span", {class: "state " + s}, s);
}

function table(headers, rows, opts) {
  opts = opts || {};
  const thead = el("thead", {}, el("tr", {}, ...headers.map(h => typeof h === "object" && h.nodeType ? el("th", {}, h)
    : el("th", {class: /^(attempts|priority|backlog|head|seq|count|groups|groups held|messages)$/i.test(h) ? "num" : null}, h))));
  const tbody = el("tbody", {}, ...rows);
  return el("table", {id: opts.id}, thead, tbody);
}

function renderHeader() {
  const nav = document.getElementById("nav");
  nav.textContent = "";
  const here = location.pathname;
  for (const [path, name] of [["/", "Overview"], ["/groups", "Groups"], ["/dead", "Dead letters"], ["/workers", "Workers"]])
    nav.appendChild(el("a", {href: href(path), class: here === path || (path === "/groups" && here === "/group") ? "here" : null}, name));
  const picker = document.getElementById("queue-picker");
  picker.textContent = "";
  const sel = el("select", {id: "queue", "aria-label": "queue", onchange: e => {
    MQ.queue = e.target.value;
    location.href = href(location.pathname === "/group" ? "/groups" : location.pathname);
  }}, ...MQ.session.queues.map(q => el("option", {value: q, selected: q === MQ.queue}, q)));
  picker.appendChild(sel);
  document.getElementById("mode").textContent = MQ.session.read_only ? "read-only" : "";
  document.getElementById("footer").textContent = "libmongomq " + MQ.session.version +
    " · history: a sample every " + MQ.session.history_interval_s + " s, " + MQ.session.history_keep + " kept";
}

MQ.render = async function () {
  const page = MQPages[location.pathname] || MQPages["/"];
  const main = document.getElementById("main");
  try {
    const node = await page();
    main.textContent = "";
    main.appendChild(node);
  } catch (e) {
    main.textContent = "";
    main.appendChild(el("p", {class: "error", id: "page-error"}, e.message));
  }
  document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
  scheduleRefresh();
};

// A page with ?refresh=S (the overview's "Live" links) renders itself again every S
// seconds (1..3600) while the tab is visible, without reloading: each time its /api/
// reads, which the dashboard serves from its stats cache. Without the parameter a
// page stays as it was loaded.
function scheduleRefresh() {
  clearTimeout(MQ.refreshTimer);
  const s = Number(MQ.params.get("refresh"));
  if (!(s >= 1 && s <= 3600)) return;
  MQ.refreshTimer = setTimeout(() => (document.hidden ? scheduleRefresh() : MQ.render()), s * 1000);
}

(async function start() {
  try {
    const r = await fetch("/api/session", {credentials: "same-origin", signal: AbortSignal.timeout(WAIT_MS)});
    if (r.status === 401) { location.href = "/login"; return; }
    MQ.session = await r.json();
  } catch (e) {
    document.getElementById("main").textContent = "The dashboard is unreachable: " + e.message;
    return;
  }
  const q = MQ.params.get("q");
  MQ.queue = q && MQ.session.queues.includes(q) ? q : MQ.session.queues[0];
  renderHeader();
  if (q && !MQ.session.queues.includes(q)) banner("No queue " + q + " here: showing " + MQ.queue);
  await MQ.render();
  document.body.setAttribute("data-ready", "1"); // the browser tests wait for it
})();
