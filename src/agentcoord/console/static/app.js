// The console's page (docs/console.md): plain JavaScript, no build step, no library, served by
// the daemon with a CSP that allows only its own files. It reads /console/api/state every few
// seconds and the live audit stream, draws the overview or (at /console/agents/<name>) one
// agent's page, and answers from the keyboard.
"use strict";

const API = "/console/api";
const $ = (id) => document.getElementById(id);
const esc = (v) => String(v ?? "").replace(/[&<>"']/g, (c) => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));
// A name, key or path: escaped, and breakable after its separators only (never inside a word).
const brk = (v) => esc(v).replace(/([\/:_@.-])/g, "$1<wbr>");
const PILLS = {online:"ok",running:"ok",Running:"ok",working:"ok",Open:"ok",write:"bad",idle:"warn",degraded:"warn",Pending:"warn",read:"ok",intent:"warn"};
const pill = (s) => `<span class="pill ${PILLS[s] || (String(s).startsWith("waiting") ? "bad" : "")}">${esc(s)}</span>`;
const stateText = (st) => String(st).startsWith("waiting") ? `<span class="waitstate">${esc(st)}</span>` : pill(st);
const agentLink = (name) => `<a href="/console/agents/${encodeURIComponent(name)}">${brk(name)}</a>`;

function table(rows, cols) {
  if (!rows || !rows.length) return '<div class="empty">none</div>';
  return "<table><tr>" + cols.map(c => `<th>${esc(c[0])}</th>`).join("") + "</tr>" +
    rows.map(r => "<tr>" + cols.map(c => `<td${c[2] ? ` class="${c[2]}"` : ""}>${c[1](r)}</td>`).join("") + "</tr>").join("") + "</table>";
}

function toast(text) {
  let t = $("toast");
  if (!t) { t = document.createElement("div"); t.id = "toast"; document.body.append(t); }
  t.textContent = text; t.hidden = false;
  setTimeout(() => { t.hidden = true; }, 6000);
}

async function post(path, body) {
  const r = await fetch(API + path, {
    method: "POST", credentials: "same-origin",
    headers: {"content-type": "application/json", "x-agentcoord": "1"},
    body: JSON.stringify(body || {}),
  });
  if (!r.ok) { toast("not done: " + await r.text()); return false; }
  refresh();
  return true;
}

// ---- filters (docs/console.md "Search and filters") -------------------------------------------
const filters = () => ({q: $("q").value.trim().toLowerCase(), agent: $("f-agent").value, repo: $("f-repo").value, type: $("f-type").value});
const hasText = (f, ...texts) => !f.q || texts.some(t => String(t ?? "").toLowerCase().includes(f.q));
const agentOk = (a, f) => (!f.agent || a.name === f.agent) && (!f.repo || a.repo === f.repo || (a.claims || []).some(k => k.startsWith(f.repo + ":"))) && hasText(f, a.name, a.focus, a.state, a.repo, ...(a.claims || []));
const claimOk = (c, f) => (!f.agent || c.agent === f.agent) && (!f.repo || c.repo === f.repo) && hasText(f, c.key, c.agent, c.purpose);
const auditOk = (e, f) => (!f.agent || (e.names || [e.agent]).includes(f.agent)) && (!f.repo || (e.repos || []).includes(f.repo) || String(e.text).includes(f.repo + ":")) && (!f.type || e.type === f.type) && hasText(f, e.text);

function fillSelect(id, values) {
  const sel = $(id), keep = sel.value, first = sel.options[0].outerHTML;
  const want = [...new Set(values.filter(Boolean))].sort();
  const now = [...sel.options].slice(1).map(o => o.value);
  if (want.join("\n") === now.join("\n")) return;
  sel.innerHTML = first + want.map(v => `<option>${esc(v)}</option>`).join("");
  sel.value = want.includes(keep) ? keep : "";
}

// ---- the queue (docs/console.md "The queue") ---------------------------------------------------
let queue = [];
let selected = null; // the id of the selected queue item

function queueItem(it, i) {
  const sel = it.id === selected ? " selected" : "";
  const n = i < 9 ? `<kbd>${i + 1}</kbd> ` : "";
  if (it.type === "prompt") {
    const who = `<div class="who">${n}${agentLink(it.agent)} asks (${esc(it.kind || "notify")}) · ${esc(it.since)}</div>`;
    const q = `<div class="q">${esc(it.question)}</div>`;
    // The agent's context, whole, under its question (docs/messaging.md "For the human").
    const ctx = it.context ? `<div class="ctx"><span class="who">context</span>${esc(it.context)}</div>` : "";
    let acts;
    if (it.kind === "approval") {
      acts = `<button class="approve" data-answer="approve">Approve <kbd>y</kbd></button><button class="deny" data-answer="deny">Deny <kbd>n</kbd></button>`;
    } else if (it.kind === "choice" && it.choices.length) {
      acts = it.choices.map((c, k) => `<button class="plain" data-answer="${esc(c)}">${k < 9 ? `<kbd>${k + 1}</kbd> ` : ""}${esc(c)}</button>`).join("");
    } else {
      acts = `<textarea rows="2" placeholder="Your answer (Ctrl+Enter sends)" aria-label="answer"></textarea><button data-send="1">Answer</button>`;
    }
    // A relayed permission dialog: allow it and grant its rule, as `answer --allow-for` does.
    if (it.rule) acts += `<button class="approve" data-allowfor="repo">Allow, and allow ${esc(it.rule)} in its repository for 1h <kbd>r</kbd></button>` +
      `<button class="plain" data-allowfor="all">Allow, and allow ${esc(it.rule)} for every session (1h) <kbd>A</kbd></button>`;
    return `<div class="item prompt${sel}" data-id="${esc(it.id)}">${who}${q}${ctx}<div class="acts">${acts}</div></div>`;
  }
  const who = `<div class="who">${n}${agentLink(it.agent)}${it.repo ? ` in ${brk(it.repo)}` : ""} · since ${esc(it.since)}</div>`;
  // A held dialog (docs/approvals.md "Answering an open dialog") is answered from here, and a
  // grant answers it too; any other is answered in the session, and a grant covers the
  // session's next such call, not this one.
  let acts = it.held ? `<button class="approve" data-held="allow">Allow once <kbd>y</kbd></button><button class="deny" data-held="deny">Deny <kbd>n</kbd></button>` : "";
  if (it.rule) {
    const then = it.held ? "" : " from its next call";
    acts += `<button class="approve" data-grant="repo">Allow ${esc(it.rule)} in ${esc(it.repo || "its repository")} for 1h${then} <kbd>r</kbd></button>` +
      `<button class="plain" data-grant="all">Allow ${esc(it.rule)} for every session (1h)${then} <kbd>A</kbd></button>`;
  }
  if (!it.held && it.type === "permission") acts += `<span class="who">this dialog is answered in the session</span>`;
  else if (!it.held) acts = `<span class="who">answer it in the session</span>`;
  return `<div class="item ${it.type}${sel}" data-id="${esc(it.id)}">${who}<div class="q">${esc(it.state)}</div><div class="acts">${acts}</div></div>`;
}

function drawQueue() {
  if (!queue.some(it => it.id === selected)) selected = queue.length ? queue[0].id : null;
  $("queue-n").textContent = queue.length;
  // A field being written in is not redrawn under the writer's hands.
  const active = document.activeElement;
  if (active && active.closest && active.closest("#queue textarea")) return;
  $("queue").innerHTML = queue.length ? queue.map(queueItem).join("") : '<div class="empty">nothing is waiting for you</div>';
}

const current = () => queue.find(it => it.id === selected);

async function answer(it, text) {
  if (!it || it.type !== "prompt") return;
  if (await post(`/prompts/${encodeURIComponent(it.prompt)}/answer`, {answer: text})) {
    queue = queue.filter(x => x.id !== it.id);
    drawQueue();
  }
}

function allowFor(it, scope) {
  if (!it || it.type !== "prompt" || !it.rule) return;
  post(`/prompts/${encodeURIComponent(it.prompt)}/allow-for`, {scope, duration: "1h"});
}

function answerHeld(it, verdict) {
  if (!it || !it.held) return;
  post(`/held/${encodeURIComponent(it.agent)}`, {answer: verdict});
}

function grant(it, where) {
  if (!it || !it.rule) return;
  const body = {rule: it.rule, duration: "1h"};
  if (where === "repo") body.repo_of = it.agent; // the daemon reads the session's directory
  post("/approvals", body);
}

function move(step) {
  if (!queue.length) return;
  const i = Math.max(0, queue.findIndex(it => it.id === selected));
  selected = queue[Math.min(queue.length - 1, Math.max(0, i + step))].id;
  drawQueue();
  document.querySelector("#queue .selected")?.scrollIntoView({block: "nearest"});
}

document.addEventListener("click", (ev) => {
  const item = ev.target.closest("#queue .item");
  if (item && !ev.target.closest("a")) { selected = item.dataset.id; }
  const it = item ? queue.find(x => x.id === item.dataset.id) : null;
  const b = ev.target.closest("button");
  if (it && b) {
    if (b.dataset.answer !== undefined) answer(it, b.dataset.answer);
    else if (b.dataset.send) answer(it, item.querySelector("textarea").value);
    else if (b.dataset.grant) grant(it, b.dataset.grant);
    else if (b.dataset.allowfor) allowFor(it, b.dataset.allowfor);
    else if (b.dataset.held) answerHeld(it, b.dataset.held);
    return;
  }
  if (item) drawQueue();
  const x = ev.target.closest("button[data-revoke]");
  if (x) post(`/approvals/${encodeURIComponent(x.dataset.revoke)}/revoke`);
});

document.addEventListener("keydown", (ev) => {
  const inField = ev.target.closest && ev.target.closest("input, textarea, select");
  if (ev.key === "Escape") { if (inField) ev.target.blur(); $("help").open && $("help").close(); return; }
  if (inField) {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && ev.target.closest("#queue textarea")) {
      ev.preventDefault(); answer(current(), ev.target.value);
    }
    return;
  }
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const it = current();
  const key = ev.key;
  let done = true;
  if (key === "j" || key === "ArrowDown") move(1);
  else if (key === "k" || key === "ArrowUp") move(-1);
  else if (key === "/") $("q").focus();
  else if (key === "?") $("help").showModal();
  else if ((key === "y" || key === "a") && it?.kind === "approval") answer(it, "approve");
  else if ((key === "n" || key === "d") && it?.kind === "approval") answer(it, "deny");
  else if (/^[1-9]$/.test(key) && it?.kind === "choice" && it.choices[+key - 1] !== undefined) answer(it, it.choices[+key - 1]);
  else if (key === "Enter" && it?.type === "prompt") document.querySelector("#queue .selected textarea")?.focus();
  else if ((key === "y" || key === "a") && it?.held) answerHeld(it, "allow");
  else if ((key === "n" || key === "d") && it?.held) answerHeld(it, "deny");
  else if (key === "r" && it?.rule && it.type === "prompt") allowFor(it, "repo");
  else if (key === "A" && it?.rule && it.type === "prompt") allowFor(it, "all");
  else if (key === "r" && it?.rule) grant(it, "repo");
  else if (key === "A" && it?.rule) grant(it, "all");
  else if (key === "o" && it) location.href = `/console/agents/${encodeURIComponent(it.agent)}`;
  else done = false;
  if (done) ev.preventDefault();
});

// ---- the overview --------------------------------------------------------------------------
let state = {};
let audit = []; // newest last
let auditLoaded = false;

function claimsTable(claims) {
  if (!claims.length) return '<div class="empty">none</div>';
  const groups = new Map();
  for (const c of claims) { const g = c.repo || "other keys"; if (!groups.has(g)) groups.set(g, []); groups.get(g).push(c); }
  let html = "<table><tr><th>repo:path</th><th>holder</th><th>mode</th><th>expires</th></tr>";
  for (const [repo, rows] of groups) {
    html += `<tr class="repo"><th colspan="4">${brk(repo)} (${rows.length})</th></tr>`;
    html += rows.map(c => `<tr><td>${brk(c.key)}${c.purpose ? ` <span class="meta">${esc(c.purpose)}</span>` : ""}</td><td>${agentLink(c.agent)}</td><td>${pill(c.mode)}</td><td class="time">${esc(c.expires_at)}</td></tr>`).join("");
  }
  return html + "</table>";
}

function drawAudit() {
  const f = filters();
  const rows = audit.filter(e => auditOk(e, f));
  $("audit-n").textContent = rows.length;
  const box = $("audit");
  box.replaceChildren(...rows.slice(-300).reverse().map(e => {
    const line = document.createElement("div");
    line.textContent = e.text || "";  // the CLI's line (agentcoord.text.events), as is
    return line;
  }));
}

function drawOverview() {
  const s = state, f = filters();
  $("meta").textContent = `daemon pid ${s.status?.pid ?? "?"} \u00b7 up ${Math.round(s.status?.uptime_s ?? 0)}s \u00b7 ${s.status?.health ?? ""}`;
  // Budgets (docs/budgets.md): what is used of each ceiling; over or at one is flagged.
  const b = s.budgets || {};
  const cell = (name, v, fmt) => !v ? "" : `<span class="${v.ceiling && v.used >= v.ceiling ? "waitstate" : ""}">${name} ${fmt(v.used)}${v.ceiling ? "/" + fmt(v.ceiling) : ""}</span>`;
  $("budgets").innerHTML = [cell("sessions", b.sessions, String), cell("agents", b.agents, String),
    cell("spend", b.spend_usd, (x) => "$" + Number(x).toFixed(2))].filter(Boolean).join(" \u00b7 ");
  queue = s.queue || [];
  drawQueue();
  const every = s.agents || [];
  const claims = s.claims || [];
  fillSelect("f-agent", every.map(a => a.name));
  fillSelect("f-repo", [...every.map(a => a.repo), ...claims.map(c => c.repo)]);
  fillSelect("f-type", audit.map(e => e.type));
  // Live agents by default; ended sessions when the box is ticked (docs/localagents.md).
  const ended = every.filter(a => a.ended);
  const agents = ($("show-ended").checked ? every : every.filter(a => !a.ended)).filter(a => agentOk(a, f));
  $("agents-n").textContent = every.length - ended.length;
  $("ended-n").textContent = `(${ended.length})`;
  $("agents").innerHTML = table(agents, [
    ["agent", a => `<b>${agentLink(a.name)}</b>${a.repo ? ` <span class="meta">${brk(a.repo)}</span>` : ""}`],
    ["status", a => (a.state && !a.ended ? stateText(a.state) + ` <span class="meta">since ${esc(a.state_since)}</span>` : pill(a.status || "")) + (a.ended ? ` ${esc(a.ended_at)} ${esc(a.reason)}` : "")],
    ["focus", a => esc(a.focus || "")], ["claims", a => (a.claims || []).map(brk).join(", ")]]);
  const shown = claims.filter(c => claimOk(c, f));
  $("claims-n").textContent = claims.length;
  $("claims").innerHTML = claimsTable(shown);
  const conflicts = (s.conflicts || []).filter(c => !f.repo || c.repo === f.repo);
  $("conflicts-n").textContent = conflicts.length;
  $("conflicts").innerHTML = table(conflicts, [
    ["repository", c => brk(c.repo)],
    ["worktrees", c => [c.a, c.b].map(t => `${brk(t.worktree)} <span class="meta">(${brk(t.branch)})</span>${t.sessions ? " " + t.sessions.split(", ").map(agentLink).join(", ") : ""}`).join(" and ")],
    ["both change", c => c.files.map(brk).join(", ")], ["git says", c => esc(c.verdict)],
    ["since", c => esc(c.since || ""), "time"]]);
  const waits = s.waits || [];
  $("waits-n").textContent = waits.length;
  $("waits").innerHTML = table(waits, [["who", w => brk(w.waiter)], ["waits on", w => brk(w.on)], ["for", w => brk(w.kind)], ["since", w => esc(w.since || ""), "time"]]);
  const approvals = s.approvals || [];
  $("approvals-n").textContent = approvals.length;
  $("approvals").innerHTML = table(approvals, [
    ["rule", r => brk(r.rule)],
    ["scope", r => r.scope === "all" ? "all sessions" : `${esc(r.scope)} ${brk(r.label)}`],
    ["until", r => esc(r.until), "time"], ["uses", r => esc(r.uses)],
    ["", r => `<button class="deny" data-revoke="${esc(r.id)}">Revoke</button>`]]);
  const channels = s.channels || [];
  $("channels-n").textContent = channels.length;
  $("channels").innerHTML = table(channels, [["channel", c => brk(c.name)], ["phase", c => pill(c.phase)], ["participants", c => (c.participants || []).map(agentLink).join(", ")]]);
  drawAudit();
}

let refreshing = false;
async function refresh() {
  if (agentName) return refreshAgent();
  if (refreshing) return; refreshing = true;
  try {
    const r = await fetch(auditLoaded ? `${API}/state` : `${API}/state?audit=1`, {credentials: "same-origin"});
    if (!r.ok) return;
    state = await r.json();
    if (!auditLoaded && Array.isArray(state.audit)) { auditLoaded = true; audit = state.audit.concat(audit); }
    drawOverview();
  } finally { refreshing = false; }
}

function tail() {
  const es = new EventSource(`${API}/events`);
  es.onopen = () => { $("live").textContent = "live"; $("live").classList.add("on"); };
  es.onerror = () => { $("live").textContent = "reconnecting"; $("live").classList.remove("on"); };
  es.onmessage = (ev) => {
    let e; try { e = JSON.parse(ev.data); } catch { e = {text: ev.data}; }
    audit.push(e);
    if (audit.length > 2000) audit.splice(0, audit.length - 2000);
    refresh();
  };
}

// ---- one agent's page (docs/console.md "An agent's page") ---------------------------------------
const agentName = (() => {
  const m = location.pathname.match(/^\/console\/agents\/([^/]+)$/);
  return m ? decodeURIComponent(m[1]) : null;
})();

const lines = (rows) => rows.length ? rows.slice().reverse().map(e => `<div>${esc(e.text)}</div>`).join("") : '<div class="empty">none</div>';

async function refreshAgent() {
  const r = await fetch(`${API}/agents/${encodeURIComponent(agentName)}`, {credentials: "same-origin"});
  if (r.status === 404) { $("agent-state").innerHTML = `<div class="empty">${esc((await r.json()).error)}</div>`; return; }
  if (!r.ok) return;
  const a = await r.json();
  const facts = [
    ["state", a.ended_at ? `ended ${esc(a.ended_at)} ${esc(a.reason)}` : (a.state ? stateText(a.state) + ` <span class="meta">since ${esc(a.state_since)}</span>` : pill(a.phase || "unknown"))],
    ["focus", esc(a.focus || "none")],
    ["files", (a.files || []).map(brk).join(", ") || "none"],
    ["directory", a.cwd ? brk(a.cwd) : '<span class="meta">not known (no live session)</span>'],
    ["session", a.session_id ? brk(a.session_id) : '<span class="meta">none</span>'],
  ];
  $("agent-state").innerHTML = `<dl class="facts">${facts.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join("")}</dl>`;
  $("agent-claims-n").textContent = a.claims.length;
  $("agent-claims").innerHTML = claimsTable(a.claims);
  $("agent-messages-n").textContent = a.messages.length;
  $("agent-messages").innerHTML = lines(a.messages);
  $("agent-audit-n").textContent = a.audit.length;
  $("agent-audit").innerHTML = lines(a.audit);
  $("agent-turns").innerHTML = a.turns.length
    ? a.turns.map(t => `<div class="turn ${esc(t.role)}"><span class="who">${esc(t.role)} ${esc(t.ts)}</span>${esc(t.text)}</div>`).join("")
    : `<div class="empty">${a.transcript ? "no text turns yet" : "no transcript known (a Claude Code session's shows here while it runs)"}</div>`;
}

// ---- start ---------------------------------------------------------------------------------
for (const id of ["q", "f-agent", "f-repo", "f-type"]) $(id).addEventListener("input", () => agentName ? null : drawOverview());
$("filters").addEventListener("submit", (ev) => ev.preventDefault());
$("show-ended").addEventListener("change", drawOverview);
$("grant").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const body = {rule: $("grant-rule").value.trim(), session: $("grant-session").value.trim(), duration: $("grant-for").value.trim()};
  if (await post("/approvals", body)) { $("grant-rule").value = ""; }
});
if (agentName) {
  $("overview").hidden = true;
  $("agent-page").hidden = false;
  $("filters").hidden = true;
  $("agent-name").textContent = agentName;
  document.title = `${agentName} \u00b7 agentcoord`;
}
refresh(); tail(); setInterval(refresh, 3000);
