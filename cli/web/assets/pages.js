// mongomq web: the pages. Each is an async function that reads /api/ for the current
// URL's parameters and returns a node; filters are GET parameters, so every view can
// be bookmarked. Actions are buttons that POST (none in --read-only).
"use strict";

const STATES = ["ready", "leased", "parked", "paused"];

function card(label, value, id) {
  return el("div", {class: "card"}, el("div", {class: "label"}, label), el("div", {class: "value", id}, value));
}

async function overview() {
  const range = Number(MQ.params.get("range")) || 3600;
  const [st, hist] = await Promise.all([api("overview"), api("history", {range}).catch(e => ({error: e.message}))]);
  const g = st.groups || {};
  const root = el("div", {id: "overview"});
  root.appendChild(el("h1", {}, "Queue " + st.queue));
  root.appendChild(el("div", {class: "cards"},
    card("Messages", st.messages, "ov-messages"),
    card("Groups", g.total, "ov-groups"),
    card("Ready", g.ready, "ov-ready"),
    card("Leased", g.leased, "ov-leased"),
    card("Parked", g.parked, "ov-parked"),
    card("Paused", g.paused === undefined ? "–" : g.paused, "ov-paused"),
    card("Dead letters", st.dead, "ov-dead"),
    card("Oldest waiting", fmtDuration(st.oldest_message_age_s), "ov-oldest"),
    card("Published", st.published === undefined ? "–" : st.published, "ov-published")));
  root.appendChild(el("h2", {}, "By priority"));
  const rows = [];
  for (let p = 0; p <= 4; p++) {
    const v = (st.priorities || {})[String(p)] || {};
    rows.push(el("tr", {}, el("td", {class: "num"}, p), el("td", {class: "num"}, v.groups), el("td", {class: "num"}, v.messages)));
  }
  const pt = table(["Priority", "Groups", "Messages"], rows, {id: "priorities"});
  pt.className = "narrow";
  root.appendChild(pt);
  const ranges = [[3600, "1 h"], [6 * 3600, "6 h"], [86400, "24 h"]];
  root.appendChild(el("h2", {}, "Over time ",
    ...ranges.map(([r, n]) => el("a", {href: href("/", {range: r}), class: r === range ? "here" : null, style: null}, " " + n))));
  const live = Number(MQ.params.get("refresh")) || 0;
  root.appendChild(el("p", {class: "muted", id: "live"}, "Live: ",
    ...[[0, "off"], [5, "5 s"], [30, "30 s"]].map(([r, n]) =>
      el("a", {href: href("/", r ? {range, refresh: r} : {range}), class: r === live ? "here" : null}, " " + n))));
  if (hist.error) {
    root.appendChild(el("p", {class: "error"}, "history: " + hist.error));
    return root;
  }
  const s = hist.samples || [];
  const pts = f => s.map(x => [x.t, f(x)]);
  const num = v => (v === null || v === undefined ? null : v);
  const charts = el("div", {class: "charts", id: "charts"},
    MQCharts.line("Depth (events)", [{name: "messages", points: pts(x => num(x.messages))},
      {name: "dead letters", points: pts(x => num(x.dead))}]),
    MQCharts.line("Groups by state", STATES.map(k => ({name: k, points: pts(x => num(x[k]))}))),
    MQCharts.line("Per minute", [
      {name: "published", points: MQCharts.perMinute(s, x => num(x.published))},
      // completed = published − growth of the queue − new dead letters (acked or purged)
      {name: "completed", points: MQCharts.perMinute(s, x => x.published === null || x.published === undefined ? null
        : x.published - x.messages - x.dead)}]),
    MQCharts.line("Oldest waiting event", [{name: "age", points: pts(x => num(x.oldest_age_s))}], {unit: "s"}));
  root.appendChild(charts);
  root.appendChild(el("p", {class: "muted"}, `${s.length} samples in ${hist.collection}` +
    (hist.capped ? " (capped)" : " (trimmed by the dashboard: the server has no capped collections)")));
  return root;
}

function filterForm(p) {
  const input = (name, label, attrs) => el("label", {}, label, el("input", Object.assign({name, id: "f-" + name, value: p.get(name) || ""}, attrs)));
  return el("form", {class: "filters", method: "get", action: "/groups", id: "filters"},
    el("input", {type: "hidden", name: "q", value: MQ.queue}),
    el("label", {}, "State", el("select", {name: "state", id: "f-state"}, el("option", {value: ""}, "any"),
      ...STATES.map(s => el("option", {value: s, selected: p.get("state") === s}, s)))),
    input("prefix", "Group id starts with", {placeholder: "customer-"}),
    el("label", {class: "check"}, el("input", {type: "checkbox", name: "stuck", value: "1", id: "f-stuck", checked: p.get("stuck") === "1"}), "stuck (attempts ≥ 2)"),
    input("held", "Lease held longer than (s)", {type: "number", min: "0", step: "any", size: 6}),
    input("parked", "Not due for more than (s)", {type: "number", min: "0", step: "any", size: 6}),
    el("label", {}, "Sort", el("select", {name: "sort", id: "f-sort"},
      el("option", {value: "id"}, "group id"), el("option", {value: "due", selected: p.get("sort") === "due"}, "due (claim order)"))),
    input("limit", "Rows", {type: "number", min: "1", max: "1000", size: 4, placeholder: "50"}),
    el("button", {type: "submit", id: "f-apply"}, "Filter"),
    el("a", {href: href("/groups"), id: "f-clear"}, "clear"));
}

async function groups() {
  const p = MQ.params;
  const keys = ["state", "prefix", "stuck", "held", "parked", "sort", "after", "limit"];
  const args = {};
  for (const k of keys) if (p.get(k)) args[k] = p.get(k);
  const page = await api("groups", args);
  const root = el("div", {id: "groups-page"}, el("h1", {}, "Groups"), filterForm(p));
  const sortLink = (label, sort) => el("a", {href: href("/groups", Object.assign({}, args, {sort, after: ""})), id: "sort-" + sort}, label);
  const rows = page.groups.map(g => el("tr", {"data-group": g.group},
    el("td", {}, el("a", {href: href("/group", {id: g.group})}, g.group)),
    el("td", {}, stateBadge(g.state)),
    el("td", {}, g.holder === null ? "–" : g.holder),
    el("td", {}, fmtDuration(g.held_for_s)),
    el("td", {}, fmtTime(g.lease_deadline)),
    el("td", {class: "num"}, g.attempts),
    el("td", {class: "num"}, g.priority),
    el("td", {class: "num"}, g.backlog),
    el("td", {class: "num"}, g.head === null ? "–" : g.head),
    el("td", {}, fmtDuration(g.head_age_s)),
    el("td", {}, fmtTime(g.available_at))));
  root.appendChild(table([sortLink("Group", "id"), "State", "Holder", "Held for", "Lease deadline", "Attempts", "Priority",
    "Backlog", "Head", "Head age", sortLink("Due", "due")], rows, {id: "groups"}));
  if (page.groups.length === 0) root.appendChild(el("p", {class: "muted", id: "no-groups"}, "No group matches."));
  root.appendChild(el("div", {class: "pager"},
    p.get("after") ? el("a", {href: href("/groups", Object.assign({}, args, {after: ""})), id: "first-page"}, "« first page") : null,
    page.next ? el("a", {href: href("/groups", Object.assign({}, args, {after: page.next})), id: "next-page"}, "next page »") : null,
    el("span", {class: "muted"}, page.groups.length + " rows")));
  return root;
}

async function group() {
  const id = MQ.params.get("id") || "";
  const g = await api("group", {id});
  const root = el("div", {id: "group-page"}, el("h1", {}, "Group ", el("code", {id: "group-id"}, visible(g.group))));
  const lock = g.lock;
  if (lock === null) {
    root.appendChild(el("p", {class: "muted", id: "no-lock"}, "No lock: the group has no events (or was purged)."));
  } else {
    const kv = [["State", stateBadge(lock.state)], ["Holder", lock.holder === null ? "–" : lock.holder],
      ["Held for", fmtDuration(lock.held_for_s)], ["Lease deadline", fmtTime(lock.lease_deadline)],
      ["Due", fmtTime(lock.available_at)], ["Attempts of the head", lock.attempts], ["Priority", lock.priority],
      ["Backlog", lock.backlog], ["Head seq", lock.head === null ? "–" : lock.head], ["Head age", fmtDuration(lock.head_age_s)],
      ["Paused", lock.paused ? "yes" : "no"]];
    root.appendChild(el("dl", {class: "kv", id: "lock"}, ...kv.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
  }
  if (!MQ.session.read_only) {
    const paused = lock !== null && lock.paused;
    root.appendChild(el("div", {class: "actions"},
      paused ? actionButton("Resume", "resume", () => act("group/resume", {id}))
        : actionButton("Pause", "pause", () => act("group/pause", {id})),
      actionButton("Purge the group", "purge", () => act("group/purge", {id}),
        {danger: true, confirm: `Delete every event of the group ${id}? Its dead letters stay.`})));
  }
  root.appendChild(el("h2", {}, "Oldest events"));
  const rows = g.events.map(e => el("tr", {},
    el("td", {class: "num"}, e.seq), el("td", {class: "num"}, e.priority),
    // A message carries no attempts: its group's lock counts the head's deliveries.
    el("td", {class: "num"}, e.attempts !== undefined ? e.attempts : lock !== null && lock.head === e.seq ? lock.attempts : "–"),
    el("td", {}, fmtTime(e.published_at)), el("td", {}, fmtTime(e.not_before)), el("td", {}, eventCell(e.event)),
    el("td", {}, attrsCell(e.attrs))));
  root.appendChild(table(["Seq", "Priority", "Attempts", "Published", "Not before", "Event", "Attributes"], rows, {id: "events"}));
  if (g.events.length === 0) root.appendChild(el("p", {class: "muted"}, "No events."));
  return root;
}

async function dead() {
  const offset = Number(MQ.params.get("offset")) || 0, limit = Number(MQ.params.get("limit")) || 50;
  const page = await api("dead", {offset, limit});
  const root = el("div", {id: "dead-page"}, el("h1", {}, "Dead letters ", el("span", {class: "muted", id: "dead-total"}, String(page.total))));
  const ro = MQ.session.read_only;
  if (!ro) {
    root.appendChild(el("div", {class: "actions"},
      actionButton("Requeue selected", "requeue-selected", () => {
        const seqs = [...document.querySelectorAll("input.pick:checked")].map(c => c.value);
        if (seqs.length === 0) throw new Error("select some first");
        return act("dead/requeue", {seq: seqs});
      }, {done: r => `requeued ${r.requeued.length}`}),
      actionButton("Requeue all", "requeue-all", () => act("dead/requeue", {all: "1"}),
        {confirm: "Requeue every dead letter?", done: r => `requeued ${r.requeued.length}`}),
      actionButton("Purge all", "purge-dead", () => act("dead/purge"),
        {danger: true, confirm: "Delete every dead letter?", done: r => `purged ${r.purged}`})));
  }
  const rows = page.letters.map(d => el("tr", {"data-seq": d.seq},
    ro ? null : el("td", {}, el("input", {type: "checkbox", class: "pick", value: d.seq, "aria-label": "select " + d.seq})),
    el("td", {class: "num"}, d.seq),
    el("td", {}, el("a", {href: href("/group", {id: d.group})}, d.group)),
    el("td", {class: "num"}, d.priority), el("td", {class: "num"}, d.attempts), el("td", {}, fmtTime(d.dead_at)),
    el("td", {}, eventCell(d.event)),
    el("td", {}, attrsCell(d.attrs)),
    ro ? null : el("td", {}, actionButton("Requeue", "requeue-" + d.seq, () => act("dead/requeue", {seq: d.seq}),
      {done: r => `requeued ${d.seq} as ${r.requeued[0].new_seq}`}))));
  const headers = ["Seq", "Group", "Priority", "Attempts", "Dead at", "Event", "Attributes"];
  root.appendChild(table(ro ? headers : [""].concat(headers, [""]), rows, {id: "dead"}));
  if (page.letters.length === 0) root.appendChild(el("p", {class: "muted", id: "no-dead"}, "No dead letters."));
  root.appendChild(el("div", {class: "pager"},
    offset > 0 ? el("a", {href: href("/dead", {offset: Math.max(0, offset - limit), limit}), id: "prev-page"}, "« newer") : null,
    offset + page.letters.length < page.total ? el("a", {href: href("/dead", {offset: offset + limit, limit}), id: "next-page"}, "older »") : null,
    el("span", {class: "muted"}, `${page.letters.length ? offset + 1 : 0}–${offset + page.letters.length} of ${page.total}`)));
  return root;
}

async function workers() {
  const w = await api("workers");
  const root = el("div", {id: "workers-page"}, el("h1", {}, "Workers"),
    el("p", {class: "muted"}, `${w.leased_groups} leased groups, held by ${w.workers.length} workers` + (w.truncated ? " (the first 10000 groups)" : "")));
  w.workers.sort((a, b) => (a.holder < b.holder ? -1 : a.holder > b.holder ? 1 : 0));
  if (w.workers.length) {
    const t = table(["Worker", "Groups held"], w.workers.map(k => el("tr", {},
      el("td", {}, k.holder === "" ? "(no worker id)" : k.holder), el("td", {class: "num"}, k.count))), {id: "worker-counts"});
    t.className = "narrow";
    root.appendChild(t);
    root.appendChild(el("h2", {}, "What each holds"));
  }
  const rows = [];
  w.workers.sort((a, b) => (a.holder < b.holder ? -1 : a.holder > b.holder ? 1 : 0));
  for (const k of w.workers)
    for (const g of k.groups)
      rows.push(el("tr", {"data-holder": k.holder},
        el("td", {}, k.holder === "" ? "(no worker id)" : k.holder),
        el("td", {}, el("a", {href: href("/group", {id: g.group})}, g.group)),
        el("td", {}, fmtDuration(g.held_for_s)), el("td", {}, fmtTime(g.lease_deadline)), el("td", {class: "num"}, g.attempts)));
  root.appendChild(table(["Worker", "Group", "Held for", "Lease deadline", "Attempts"], rows, {id: "workers"}));
  if (rows.length === 0) root.appendChild(el("p", {class: "muted", id: "no-workers"}, "Nobody holds a group now."));
  return root;
}

const MQPages = {"/": overview, "/groups": groups, "/group": group, "/dead": dead, "/workers": workers};
