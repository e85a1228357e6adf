// Porfiry web console: one EventSource per open session; everything is drawn from the facts the
// runtime publishes (protocol/observe.py). No framework, no build step.
"use strict";
const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...kids) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const kid of kids) node.append(kid);
  return node;
};
const ms = (s) => (s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`);

let view, source, session = new URLSearchParams(location.search).get("session") || "";

function reset() {
  view = { turns: new Map(), order: [], events: new Map(), callTurn: new Map(), background: new Map(),
           state: null, stateAt: 0 };
  $("#hud-text").textContent = ""; $("#hud-text").dataset.state = "empty";
  $("#prompt").textContent = ""; $("#prompt-meta").textContent = "";
  draw();
}

function connect() {
  if (source) source.close();
  reset();
  source = new EventSource("/api/stream?session=" + encodeURIComponent(session));
  source.onopen = () => { $("#link").textContent = "live"; $("#link").className = "link up"; };
  source.onerror = () => { $("#link").textContent = "reconnecting…"; $("#link").className = "link down"; };
  source.onmessage = (msg) => take(JSON.parse(msg.data));
}

function turnOf(id) {
  let turn = view.turns.get(id);
  if (!turn) {
    turn = { id, start: null, end: null, eventIds: [], rows: new Map(), interrupted: false, parallel: false, modelCalls: 0 };
    view.turns.set(id, turn); view.order.push(id);
    while (view.order.length > 50) view.turns.delete(view.order.shift());
  }
  return turn;
}

function take(fact) {
  switch (fact.type) {
    case "Hello":
      if (!session) { session = fact.session; }
      renderPicker(); break;
    case "Sessions": view.sessions = fact.sessions; renderPicker(); renderSessions(); break;
    case "DisplayFact": {
      const hud = $("#hud-text");
      hud.textContent = fact.clear ? "" : fact.text;
      hud.dataset.state = fact.clear ? "empty" : (fact.final ? "final" : "partial");
      break;
    }
    case "EventFact": view.events.set(fact.event_id, fact); schedule(); break;
    case "TurnFact": {
      const turn = turnOf(fact.turn_id);
      turn.parallel = fact.parallel;
      if (fact.phase === "start") { turn.start = fact.ts; turn.eventIds = fact.event_ids; }
      else { turn.end = fact.ts; turn.modelCalls = fact.model_calls; turn.interrupted = fact.interrupted;
             if (fact.event_ids.length) turn.eventIds = fact.event_ids; if (turn.start === null) turn.start = fact.ts; }
      schedule(); break;
    }
    case "ModelCallFact": turnOf(fact.turn_id).rows.set("m" + fact.step + ":" + fact.ts, fact); schedule(); break;
    case "ToolCallFact": {
      const key = fact.call_id || fact.tool + ":" + fact.ts;
      if (fact.turn_id) view.callTurn.set(key, fact.turn_id);
      const turnId = fact.turn_id || view.callTurn.get(key);
      if (fact.outcome === "placeholder") view.background.set(fact.call_id, fact.tool);
      if (fact.outcome === "late") view.background.delete(fact.call_id);
      if (turnId) {
        const turn = turnOf(turnId);
        const rowKey = fact.outcome === "late" ? key + ":late" : key;
        const before = turn.rows.get(rowKey);
        turn.rows.set(rowKey, fact.outcome === "placeholder" && before ? { ...before, outcome: "placeholder" } : fact);
      }
      renderState(); schedule(); break;
    }
    case "StateFact": view.state = fact; view.stateAt = performance.now() / 1000; renderState(); break;
    case "PromptFact": renderPrompt(fact); break;
    case "SessionGoneFact": break;
    case "Dropped": console.warn(fact.detail); break;  // this page read too slowly: older facts are missing
  }
}

// ---- the session picker and list --------------------------------------------------------------
function renderPicker() {
  const picker = $("#session-picker");
  const names = (view.sessions || []).map((s) => s.session);
  if (session && !names.includes(session)) names.unshift(session);
  picker.replaceChildren(...names.map((n) => el("option", { value: n, text: n })));
  picker.value = session;
}
function renderSessions() {
  $("#sessions tbody").replaceChildren(...(view.sessions || []).map((s) => el("tr", {},
    el("td", { text: s.session }), el("td", { text: s.busy ? "yes" : "" }),
    el("td", { text: s.last_active ? new Date(s.last_active * 1000).toLocaleTimeString() : "" }))));
}
function open(name) {
  name = name.trim();
  if (!name || name === session) return;
  session = name;
  history.replaceState(null, "", "?session=" + encodeURIComponent(name));
  connect();
}
$("#session-picker").addEventListener("change", (e) => open(e.target.value));
$("#new-session").addEventListener("keydown", (e) => { if (e.key === "Enter") { open(e.target.value); e.target.value = ""; } });

// ---- talking ---------------------------------------------------------------------------------
async function post(url, body) {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}
async function send(action, text = "") {
  $("#send-error").textContent = "";
  try { await post("/api/send", { session, action, text }); }
  catch (err) { $("#send-error").textContent = err.message; }
}
$("#say-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("#say-input").value.trim();
  if (!text) return;
  $("#say-input").value = "";
  send("text", text);
});
$("#stop").addEventListener("click", () => send("stop"));
for (const b of document.querySelectorAll("#buttons [data-button]")) b.addEventListener("click", () => send("button", b.dataset.button));
for (const b of document.querySelectorAll("#buttons [data-glasses]")) b.addEventListener("click", () => send("glasses", b.dataset.glasses));

// ---- state -----------------------------------------------------------------------------------
function renderState() {
  const s = view.state;
  $("#busy").textContent = s ? (s.busy ? "yes" : "no") : "–";
  $("#skills-version").textContent = s && s.skills_version ? s.skills_version.slice(0, 10) : "–";
  const toolsets = s ? Object.entries(s.active_toolsets) : [];
  $("#toolsets").replaceChildren(...toolsets.map(([name, left]) =>
    el("li", { "data-toolset": name }, name + " ", el("span", { class: "countdown", "data-left": String(left) }))));
  $("#queue").replaceChildren(...(s ? s.queue : []).map((q) => el("li", { text: q })));
  $("#running").replaceChildren(...(s ? s.running_tools : []).map((t) => el("li", { text: t })));
  $("#background").replaceChildren(...[...view.background.values()].map((t) => el("li", { text: t + " (interrupted, result pending)" })));
  $("#timers").replaceChildren(...(s ? s.timers : []).map((t) =>
    el("li", {}, `${t.timer_id}: ${t.text} `, el("span", { class: "countdown", "data-left": String(t.due) }))));
  tick();
}
function tick() {
  const elapsed = performance.now() / 1000 - view.stateAt;
  for (const span of document.querySelectorAll(".countdown")) {
    const left = Math.max(0, Number(span.dataset.left) - elapsed);
    const m = Math.floor(left / 60), sec = Math.floor(left % 60);
    span.textContent = `${m}:${String(sec).padStart(2, "0")} left`;
  }
}
setInterval(tick, 250);

// ---- timeline (a waterfall per turn) -----------------------------------------------------------
let pending = false;
function schedule() { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; draw(); }); } }

function bar(cls, t0, span, ts, duration, label, detail, extra) {
  const lane = el("div", { class: "lane" });
  const left = span > 0 ? ((ts - t0) / span) * 100 : 0;
  const width = span > 0 ? (Math.max(duration, 0) / span) * 100 : 0;
  lane.append(el("div", { class: "bar", style: `left:${Math.min(left, 99.5)}%;width:${Math.min(width, 100 - left)}%` }));
  if (extra) lane.append(extra(left, span));
  const row = el("div", { class: "row " + cls }, el("div", { class: "label", title: label }, label), lane);
  if (detail) row.append(el("div", { class: "detail", text: detail }));
  return row;
}

function draw() {
  const box = $("#timeline");
  if (!view) return;
  const turns = view.order.map((id) => view.turns.get(id)).filter((t) => t && t.start !== null);
  const now = Date.now() / 1000;
  const claimed = new Set(turns.flatMap((t) => t.eventIds));
  const waiting = [...view.events.values()].filter((e) => !claimed.has(e.event_id) && e.strategy !== "parallel");
  const blocks = [];
  if (waiting.length) {
    blocks.push(el("div", { class: "turn waiting" }, el("div", { class: "turn-head" }, "waiting for a safe point"),
      ...waiting.map((e) => el("div", { class: "row event" }, el("div", { class: "label" }, el("span", { class: "badge " + e.strategy, text: e.strategy }), ` ${e.kind}: ${e.content}`)))));
  }
  for (const turn of turns.slice().reverse()) {
    const events = turn.eventIds.map((id) => view.events.get(id)).filter(Boolean);
    const rows = [...turn.rows.values()].sort((a, b) => a.ts - b.ts);
    const t0 = Math.min(turn.start, ...events.map((e) => e.ts));
    const t1 = Math.max(turn.end ?? now, ...rows.map((r) => r.ts + (r.duration_s || 0)));
    const span = Math.max(t1 - t0, 0.001);
    const head = el("div", { class: "turn-head" },
      el("span", { text: new Date(t0 * 1000).toLocaleTimeString() }),
      el("span", { text: turn.end ? ms(turn.end - t0) : "running…" }),
      el("span", { text: `${rows.filter((r) => r.type === "ModelCallFact").length} model call(s)` }));
    if (turn.parallel) head.append(el("span", { class: "badge parallel", text: "parallel" }));
    if (turn.interrupted) head.append(el("span", { class: "interrupted", text: "interrupted" }));
    const body = [];
    for (const e of events) {
      body.push(bar("event", t0, span, e.ts, 0, "", null));
      body[body.length - 1].firstChild.replaceChildren(el("span", { class: "badge " + e.strategy, text: e.strategy }), ` ${e.kind}${e.content ? ": " + e.content : ""}`);
    }
    for (const r of rows) {
      if (r.type === "ModelCallFact") {
        const tokens = r.prompt_tokens ? `${r.prompt_tokens} prompt tok` + (r.reused_tokens >= 0 ? ` (${r.prompt_tokens - r.reused_tokens} evaluated, ${r.reused_tokens} reused)` : "") + `, ${r.completion_tokens} out` : "";
        const label = `model #${r.step}${r.profile ? " " + r.profile : ""} · ${ms(r.duration_s)}` + (r.first_token_s >= 0 ? ` · first token ${ms(r.first_token_s)}` : "") + (r.outcome !== "ok" ? ` · ${r.outcome}` : "");
        body.push(bar("model-call " + r.outcome, t0, span, r.ts, r.duration_s, label, [tokens, r.reply].filter(Boolean).join(" — "),
          r.first_token_s >= 0 ? (left) => el("div", { class: "ttft", style: `left:${left}%;width:${(r.first_token_s / span) * 100}%` }) : null));
      } else {
        const label = `${r.outcome === "late" ? "late result " : ""}${r.tool}${r.args ? "|" + r.args : ""}` + (r.outcome === "running" ? " · running" : ` · ${r.outcome}${r.duration_s ? " · " + ms(r.duration_s) : ""}`);
        body.push(bar("tool-call " + r.outcome, t0, span, r.ts, r.outcome === "running" ? now - r.ts : r.duration_s, label, r.result));
      }
    }
    blocks.push(el("div", { class: "turn", "data-turn": turn.id }, head, ...body));
  }
  box.replaceChildren(...blocks);
}

// ---- prompt -----------------------------------------------------------------------------------
function renderPrompt(fact) {
  $("#prompt-meta").textContent = `(step ${fact.step}, ${fact.messages.length} messages, tools: ${fact.tools.join(", ")})`;
  const marks = new Map();
  for (const d of fact.dynamic) { if (!marks.has(d.message)) marks.set(d.message, []); marks.get(d.message).push(d); }
  $("#prompt").replaceChildren(...fact.messages.map((m, i) => {
    const pre = el("pre");
    let at = 0;
    for (const d of (marks.get(i) || []).sort((a, b) => a.start - b.start)) {
      pre.append(m.content.slice(at, d.start), el("mark", { "data-label": d.label, text: m.content.slice(d.start, d.end) }));
      at = d.end;
    }
    pre.append(m.content.slice(at));
    return el("div", { class: "msg " + m.role }, el("div", { class: "role", text: m.role + (m.name ? " · " + m.name : "") }), pre);
  }));
}

// ---- admin --------------------------------------------------------------------------------------
async function loadAdmin() {
  const data = await (await fetch("/api/admin")).json();
  const select = $("#profile");
  select.replaceChildren(...data.profiles.map((p) => el("option", { value: p, text: p })));
  if (data.llm) { select.value = data.llm.active; $("#llm-status").textContent = `${data.llm.active} · ${data.llm.healthy ? "healthy" : "NOT healthy"} · ${data.llm.in_flight} in flight`; }
  $("#skills").textContent = data.skills;
}
$("#admin-panel").addEventListener("toggle", (e) => { if (e.target.open) loadAdmin(); });
$("#use-profile").addEventListener("click", async () => {
  try { const r = await post("/api/admin/profile", { profile: $("#profile").value }); $("#llm-status").textContent = r.detail; }
  catch (err) { $("#llm-status").textContent = err.message; }
  loadAdmin();
});
for (const b of document.querySelectorAll("[data-skills]")) b.addEventListener("click", async () => {
  try { const r = await post("/api/admin/skills", { op: b.dataset.skills, name: $("#skill-name").value, target: $("#skill-target").value }); $("#skills-reply").textContent = r.text; }
  catch (err) { $("#skills-reply").textContent = err.message; }
  loadAdmin();
});

connect();
