// The dashboard: reads the agent's JSON API and renders it. All data goes in
// through textContent, never as HTML: env names and messages come from hosts.
"use strict";

const state = { report: null, plan: null, expanded: new Set(), focus: null, filter: "" };

// A status is told by a symbol and a word, never by colour alone.
const STATUS_SYMBOL = { pass: "✓", fail: "✗", error: "!", skip: "–" };


function statusBadge(status) {
  return el("span", { class: "status " + status }, status);
}

async function getJson(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => ({}));
  return { status: response.status, body };
}

function showProblem(text) {
  const box = document.getElementById("problem");
  box.hidden = !text;
  box.textContent = text || "";
}

function matchesFilter(env) {
  if (!state.filter) return true;
  const needle = state.filter.toLowerCase();
  const haystack = [env.name, env.verdict, env.summary]
    .concat((env.checks || []).map((c) => [c.id, c.status, c.diagnosis ? c.diagnosis.cause : ""].join(" ")))
    .join(" ").toLowerCase();
  return haystack.includes(needle);
}

// The part in which two C++ signatures differ, widened to whole parameters
// (from the separator before it to the one after it), as [start, end] in each.
function differingParts(a, b) {
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (suffix < a.length - prefix && suffix < b.length - prefix &&
    a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix++;
  const widen = (text) => {
    let start = prefix;
    while (start > 0 && !",(<".includes(text[start - 1])) start--;
    while (start < text.length && text[start] === " ") start++;
    let end = text.length - suffix;
    while (end < text.length && !",)>".includes(text[end])) end++;
    return [start, Math.max(start, end)];
  };
  return [widen(a), widen(b)];
}

function markedSignature(text, [start, end]) {
  return el("code", { class: "signature" }, text.slice(0, start),
    end > start ? el("mark", {}, text.slice(start, end)) : null, text.slice(end));
}

function baseName(path) {
  return String(path || "").split("/").pop();
}

// Evidence drawn for people where its shape is known: the two signatures of
// an ABI near miss one above the other, the directories searched for a
// missing library, a hang's threads and stack. Anything else: null.
function drawnEvidence(cause, evidence) {
  if (!evidence) return null;
  if (cause === "abi_signature_mismatch" && evidence.near_miss) {
    const near = evidence.near_miss;
    const [wanted, defined] = differingParts(evidence.demangled || "", near.demangled || "");
    return el("div", { class: "drawn abi" },
      el("div", {}, el("span", { class: "role" }, baseName(evidence.needed_by) + " wants"),
        markedSignature(evidence.demangled || "", wanted)),
      el("div", {}, el("span", { class: "role" }, baseName(near.library) + " defines"),
        markedSignature(near.demangled || "", defined)),
      ...(near.differences || []).map((d) => el("div", { class: "difference" }, d)));
  }
  if (cause === "missing_library" && evidence.missing) {
    const missing = evidence.missing;
    return el("div", { class: "drawn library" },
      el("div", {}, el("code", {}, missing.name || ""), " needed by ", el("code", {}, missing.needed_by || "")),
      el("div", {}, "searched, in the loader's order:"),
      el("ol", { class: "searched" }, ...(missing.searched || []).map((dir) => el("li", {}, el("code", {}, dir)))),
      (missing.other_versions || []).length
        ? el("div", {}, "other versions: ", (missing.other_versions || []).join(", ")) : null);
  }
  if (cause === "hang" && Array.isArray(evidence.threads)) {
    const threads = [...evidence.threads].sort((x, y) => (y.cpu_percent || 0) - (x.cpu_percent || 0));
    const shown = threads.slice(0, 8);
    const table = el("table", { class: "threads" },
      el("thead", {}, el("tr", {}, el("th", {}, "thread"), el("th", {}, "state"), el("th", {}, "CPU"),
        el("th", {}, "waiting in"))),
      el("tbody", {}, ...shown.map((t) => el("tr", { class: t.tid === evidence.busiest_tid ? "spinning" : "" },
        el("td", {}, String(t.tid) + " " + (t.name || "")), el("td", {}, t.state || ""),
        el("td", {}, (t.cpu_percent || 0).toFixed(1) + "%"), el("td", { class: "cause" }, t.wchan || "")))));
    const rest = threads.length - shown.length;
    return el("div", { class: "drawn hang" }, table,
      rest > 0 ? el("div", {}, rest + " more threads, none busier") : null,
      (evidence.native_stack || []).length
        ? el("div", {}, "the spinning thread's stack, innermost first:",
          el("ol", { class: "stack" }, ...evidence.native_stack.slice(0, 16).map((frame) =>
            el("li", {}, el("code", {}, (frame.function || "??") + " (" + (frame.library || "?") + ")")))))
        : null,
      evidence.python_stacks ? el("details", {}, el("summary", {}, "Python stacks"),
        el("pre", { class: "evidence" }, evidence.python_stacks)) : null);
  }
  return null;
}

function checkRows(env) {
  const table = el("table", { class: "checks" },
    el("thead", {}, el("tr", {}, el("th", {}, "check"), el("th", {}, "status"), el("th", {}, "cause"),
      el("th", {}, "summary"), el("th", {}, "since"))));
  const body = el("tbody");
  for (const check of env.checks || []) {
    const diagnosis = check.diagnosis || {};
    const summary = el("td", {}, diagnosis.summary || "");
    const drawn = drawnEvidence(diagnosis.cause, diagnosis.evidence);
    if (drawn) summary.append(drawn);
    if (diagnosis.evidence && Object.keys(diagnosis.evidence).length) {
      summary.append(el("details", {}, el("summary", {}, "evidence"),
        el("div", { class: "evidence" }, JSON.stringify(diagnosis.evidence, null, 1))));
    }
    if (diagnosis.remedy) summary.append(el("div", { class: "remedy" }, "→ " + diagnosis.remedy));
    for (const note of check.notes || []) {
      summary.append(el("div", { class: "remedy" }, "note (" + note.cause + "): " + note.summary));
      const drawnNote = drawnEvidence(note.cause, note.evidence);
      if (drawnNote) summary.append(drawnNote);
    }
    const history = el("a", { class: "history", href: "#" }, "history");
    history.addEventListener("click", (event) => {
      event.preventDefault();
      loadHistory(env.name, check.id);
    });
    const focused = state.focus && state.focus.env === env.name && state.focus.check === check.id;
    body.append(el("tr", { "data-check": check.id, "data-cause": diagnosis.cause || "",
      class: focused ? "focused" : "" },
      el("td", {}, check.id, " ", history),
      el("td", {}, statusBadge(check.status)),
      el("td", { class: "cause" }, diagnosis.cause || ""),
      summary,
      el("td", {}, check.since || "", check.flapping ? el("span", { class: "flapping" }, " flapping") : null)));
  }
  table.append(body);
  return table;
}

// A line diff of two lists (longest common subsequence): [[" ", x], ["-", x], ["+", x]].
function listDiff(before, after) {
  const n = before.length;
  const m = after.length;
  const common = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      common[i][j] = before[i] === after[j] ? common[i + 1][j + 1] + 1
        : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const lines = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && before[i] === after[j]) { lines.push([" ", before[i]]); i++; j++; }
    else if (j < m && (i === n || common[i][j + 1] >= common[i + 1][j])) { lines.push(["+", after[j]]); j++; }
    else { lines.push(["-", before[i]]); i++; }
  }
  return lines;
}

// What activation changes, bare against activated, as a diff: a search path
// entry by entry (the loader and Python read them in order), any other
// variable as its two values. Told by +/- and words, not colour alone.
function activationBlock(env) {
  const activation = env.activation;
  if (!activation || (!(activation.changes || []).length && !activation.problem)) return null;
  const pre = el("pre", { class: "diff" });
  const line = (sign, text) => pre.append(el("span", {
    class: sign === "+" ? "added" : sign === "-" ? "removed" : "kept" }, sign + " " + text + "\n"));
  for (const change of activation.changes || []) {
    const bare = change.bare;
    const activated = change.activated;
    pre.append(el("span", { class: "variable", "data-variable": change.name }, change.name +
      (bare === null ? " (set by activation)" : activated === null ? " (unset by activation)" : "") + "\n"));
    const split = (value) => (value === null || value === "" ? [] : value.split(":"));
    // Entry by entry for a search path of reasonable length (the diff's
    // table grows with the product of the lengths); whole values otherwise.
    const listed = change.name.endsWith("PATH") &&
      ((bare || "").includes(":") || (activated || "").includes(":")) &&
      split(bare).length <= 256 && split(activated).length <= 256;
    if (listed) {
      for (const [sign, entry] of listDiff(split(bare), split(activated))) line(sign, entry || "(empty: the current directory)");
    } else {
      if (bare !== null) line("-", bare);
      if (activated !== null) line("+", activated);
    }
  }
  const more = activation.more_changes
    ? el("div", { class: "legend" }, activation.more_changes + " more variables differ") : null;
  // Open when a finding is about activation: then it is the evidence.
  const aboutActivation = (env.checks || []).some((check) =>
    ((check.diagnosis || {}).cause === "search_path_mismatch") ||
    (check.notes || []).some((note) => note.cause === "activation_required"));
  return el("details", { class: "activation", "data-activation": env.name, open: aboutActivation || !!activation.problem },
    el("summary", {}, "What activation changes (" + (activation.changes || []).length + " variables; − bare, + activated)"),
    activation.problem ? el("div", { class: "remedy" }, "activation failed: " + activation.problem) : null,
    (activation.scripts || []).length
      ? el("div", {}, "scripts, in order: ", ...activation.scripts.map((s, i) => [i ? ", " : "", el("code", {}, s)]).flat())
      : null,
    pre, more);
}

// The address of an env's diagnoses, and of one check among them.
function envLink(env, check) {
  return "#env=" + encodeURIComponent(env) + (check ? "&check=" + encodeURIComponent(check) : "");
}

// Every env a row, every check of the contract (and the env's own, such as
// import:torch) a column, in the order the report gives them. A cell links
// to the check's diagnosis.
function renderMatrix(report) {
  const envs = (report.envs || []).filter(matchesFilter);
  const columns = [];
  for (const env of report.envs || []) {
    for (const check of env.checks || []) {
      if (!columns.includes(check.id)) columns.push(check.id);
    }
  }
  const table = document.getElementById("matrix");
  document.getElementById("matrix-section").hidden = !(report.envs || []).length;
  const head = el("tr", {}, el("th", { scope: "col" }, "env"),
    ...columns.map((id) => el("th", { scope: "col", class: "column", title: id }, el("span", {}, id))));
  const rows = envs.map((env) => {
    const byId = new Map((env.checks || []).map((check) => [check.id, check]));
    return el("tr", { "data-env": env.name },
      el("th", { scope: "row" }, el("a", { href: envLink(env.name) }, ...envName(env)), " ",
        el("span", { class: "badge " + env.verdict }, env.verdict)),
      ...columns.map((id) => {
        const check = byId.get(id);
        if (!check) return el("td", { class: "cell none", title: id + ": not checked in this env" }, "");
        const diagnosis = check.diagnosis || {};
        const word = check.status === "skip" ? "skipped" : check.status;
        return el("td", { class: "cell " + check.status, "data-env": env.name, "data-check": id,
          "data-status": check.status, title: id + ": " + (diagnosis.summary || word) },
        el("a", { href: envLink(env.name, id) }, (STATUS_SYMBOL[check.status] || "?") + " " + word,
          diagnosis.cause ? el("span", { class: "cell-cause" }, diagnosis.cause) : null));
      }));
  });
  table.replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
}

function renderEnvs(report) {
  const body = document.querySelector("#env-table tbody");
  body.replaceChildren();
  for (const env of report.envs || []) {
    if (!matchesFilter(env)) continue;
    const row = el("tr", { class: "env", "data-env": env.name, title: env.prefix },
      el("td", {}, ...envName(env)), el("td", {}, env.kind), el("td", {}, env.python_version),
      el("td", {}, el("span", { class: "badge " + env.verdict }, env.verdict)),
      el("td", {}, env.summary));
    row.addEventListener("click", () => {
      if (state.expanded.has(env.name)) state.expanded.delete(env.name);
      else state.expanded.add(env.name);
      // The address names the open envs, so a link shows what the sender saw.
      state.focus = null;
      history.replaceState(null, "", state.expanded.size
        ? "#" + [...state.expanded].map((n) => "env=" + encodeURIComponent(n)).join("&") : "#");
      renderEnvs(state.report);
    });
    body.append(row);
    if (state.expanded.has(env.name)) {
      body.append(el("tr", { class: "details", "data-details": env.name },
        el("td", { colSpan: 5 }, checkRows(env), activationBlock(env), planBlock(env.name))));
    }
  }
  // A partial report (the first scan is running): the envs not judged yet.
  for (const name of (report.partial || {}).pending_envs || []) {
    if (state.filter && !name.toLowerCase().includes(state.filter.toLowerCase())) continue;
    body.append(el("tr", { class: "env pending", "data-env": name },
      el("td", {}, name), el("td", {}), el("td", {}),
      el("td", {}, el("span", { class: "badge pending" }, "pending")),
      el("td", {}, "being probed by the first scan")));
  }
}

// What would make an env comply (GET /api/v1/plan): its route and ordered
// steps, each with the command to run or what to ask for, and what it fixes.
function planBlock(name) {
  const plan = ((state.plan || {}).envs || []).find((p) => p.env === name);
  if (!plan) return null;
  const steps = (plan.steps || []).map((step) => el("li", { class: step.action, "data-action": step.action },
    el("span", { class: "action" }, step.action.replace(/_/g, " ")), " ",
    step.target, step.value && step.value !== step.target ? " (" + step.value + ")" : "",
    step.command ? el("code", {}, step.command) : null,
    step.ask ? el("div", {}, "ask " + step.ask) : null,
    el("div", { class: "fixes" }, "fixes: " + (step.fixes || []).join(", "))));
  const waiting = (plan.unplanned || []).map((item) => el("li", {}, item.check + ": " + item.why));
  return el("div", { class: "plan", "data-plan": name },
    el("h3", {}, "What would make it comply"),
    el("p", { class: "route" }, plan.route === "fresh_env"
      ? "A new env is the better way: " + plan.route_why : plan.route_why),
    el("ol", {}, ...steps),
    waiting.length ? el("ul", {}, ...waiting) : null);
}

function renderProvisioning() {
  const provisioning = (state.plan || {}).provisioning || {};
  document.getElementById("provision-section").hidden = !provisioning.enabled;
}

function render(report) {
  state.report = report;
  document.getElementById("host").textContent = report.host;
  const verdict = document.getElementById("verdict");
  verdict.textContent = report.verdict;
  verdict.className = "badge " + report.verdict;
  document.title = report.host + ": " + report.verdict + " · envcontract";
  const contract = report.contract || {};
  document.getElementById("meta").textContent =
    "contract " + contract.name + " (" + (contract.sha256 || "").slice(0, 12) + ") · scanned " +
    report.scanned_at + (report.scan_id ? " · scan " + report.scan_id : "") +
    (report.image && report.image.value ? " · image " + report.image.value : "");
  const reasons = document.getElementById("reasons");
  reasons.replaceChildren(...(report.reasons || []).map((r) => el("li", {}, r)));
  if (!(report.reasons || []).length) reasons.append(el("li", {}, "the host complies with its contract"));
  document.getElementById("compliant").textContent =
    "compliant envs: " + ((report.compliant_envs || []).join(", ") || "none");
  const targets = document.querySelector("#target-table tbody");
  targets.replaceChildren();
  for (const target of report.targets || []) {
    const check = (target.checks || [])[0] || {};
    targets.append(el("tr", { "data-target": target.name }, el("td", {}, target.name), el("td", {}, target.image),
      el("td", {}, statusBadge(check.status || "")), el("td", {}, (check.diagnosis || {}).summary || "")));
  }
  renderContainers(report);
  renderMatrix(report);
  renderEnvs(report);
  showFocus();
}

// Container targets: the image each runs, judged against the targets (the
// one that matches, else the first), its envs, or why it was not scanned.
function renderContainers(report) {
  const containers = report.containers || [];
  document.getElementById("container-section").hidden = !containers.length;
  const body = document.querySelector("#container-table tbody");
  body.replaceChildren(...containers.map((container) => {
    const checks = (container.targets || []).map((target) => (target.checks || [])[0] || {});
    const check = checks.find((c) => c.status === "pass") || checks[0] || {};
    const image = container.image || {};
    return el("tr", { "data-container": container.name }, el("td", {}, container.name),
      el("td", {}, image.value || "unknown"),
      el("td", {}, statusBadge(container.problem ? "error" : check.status || "")),
      el("td", {}, (container.envs || []).join(", ")),
      el("td", {}, container.problem || (check.diagnosis || {}).summary || image.problem || ""));
  }));
}

// An env's name, and the container it belongs to.
function envName(env) {
  return env.container ? [env.name, " ", el("span", { class: "container-of" }, "in " + env.container)]
    : [env.name];
}

// Brings the focused check (a matrix cell's link) into view.
function showFocus() {
  if (!state.focus) return;
  const details = [...document.querySelectorAll("tr.details")]
    .find((row) => row.getAttribute("data-details") === state.focus.env);
  const row = details && [...details.querySelectorAll("tr[data-check]")]
    .find((r) => r.getAttribute("data-check") === state.focus.check);
  if (row) row.scrollIntoView({ block: "center" });
  // Opening a check shows its history too.
  loadHistory(state.focus.env, state.focus.check, false);
}


// A check's history as a bar over time: one segment per status, from each
// transition to the next (the last one to now), each with its status as a
// word in its tooltip and a colour; many short segments show flapping.
function timeline(transitions) {
  const width = 800;
  const times = transitions.map((t) => Date.parse(t.at)).filter((t) => !Number.isNaN(t));
  if (!times.length) return null;
  const start = times[0];
  const end = Math.max(Date.now(), times[times.length - 1] + 1000);
  const x = (time) => Math.round(((time - start) / (end - start)) * width);
  const segments = transitions.map((t, i) => {
    const from = x(Date.parse(t.at));
    const to = i + 1 < transitions.length ? x(Date.parse(transitions[i + 1].at)) : width;
    return svg("rect", { class: "segment " + t.status, "data-status": t.status, x: from, y: 0,
      width: Math.max(2, to - from), height: 18 },
    svg("title", {}, t.status + " since " + t.at + (t.cause ? " (" + t.cause + ")" : "")));
  });
  return svg("svg", { class: "timeline", viewBox: "0 0 " + width + " 34", width, height: 34,
    role: "img", "aria-label": "status over time" },
  ...segments,
  svg("text", { x: 0, y: 31 }, transitions[0].at),
  svg("text", { x: width, y: 31, "text-anchor": "end" }, "now"));
}

async function loadHistory(env, check, scroll = true) {
  // As many transitions as the API gives (10,000, oldest first; the store
  // keeps history_retention_days of them), so the latest is among them.
  const query = new URLSearchParams({ env, check, limit: "10000" });
  const section = document.getElementById("history");
  section.hidden = false;
  document.getElementById("history-title").textContent = "History of " + check + " in " + env;
  document.getElementById("timeline").replaceChildren();
  const rows = document.querySelector("#history-table tbody");
  rows.replaceChildren();
  let answer;
  try {
    answer = await getJson("/api/v1/history?" + query);
  } catch (error) {
    answer = { status: 0, body: { error: "cannot reach the agent: " + error } };
  }
  const { status, body } = answer;
  if (status !== 200) {
    rows.append(el("tr", {}, el("td", { colSpan: 4 }, body.error || "history unavailable")));
    return;
  }
  for (const t of body.transitions || []) {
    rows.append(el("tr", {}, el("td", {}, t.at), el("td", {}, statusBadge(t.status)),
      el("td", { class: "cause" }, t.cause), el("td", {}, t.summary)));
  }
  document.getElementById("timeline").replaceChildren(timeline(body.transitions || []) || "");
  if (scroll) section.scrollIntoView();
}

async function refresh() {
  try {
    const { status, body } = await getJson("/api/v1/report");
    if (status === 200) {
      showProblem("");
      // A partial report changes without a new scan id: drawn each time.
      if (!state.report || body.partial || state.report.partial ||
          state.report.scan_id !== body.scan_id || state.report.scanned_at !== body.scanned_at) {
        render(body);
      }
      // While the first scan runs, each env shows up as soon as it is judged.
      if (body.partial && !state.soon) {
        state.soon = true;
        setTimeout(() => { state.soon = false; refresh(); }, 2000);
      }
    } else {
      showProblem(body.error || "no report yet (HTTP " + status + ")");
    }
    const plan = await getJson("/api/v1/plan");
    if (plan.status === 200 && JSON.stringify(plan.body) !== JSON.stringify(state.plan)) {
      state.plan = plan.body;
      renderProvisioning();
      if (state.report) renderEnvs(state.report);
    }
    const contract = await getJson("/api/v1/contract");
    if (contract.status === 200 && contract.body.reload_error) {
      showProblem("The contract file is invalid; the last good contract stays in force:\n" + contract.body.reload_error);
    }
  } catch (error) {
    showProblem("cannot reach the agent: " + error);
  }
}

async function scanNow() {
  const label = document.getElementById("scan-state");
  const response = await fetch("/api/v1/scan", {
    method: "POST",
    headers: { "X-Requested-By": "dashboard" },
  });
  const body = await response.json().catch(() => ({}));
  if (response.status !== 202) {
    label.textContent = body.error || "scan refused (HTTP " + response.status + ")";
    return;
  }
  label.textContent = "scan " + body.id + " queued";
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const ticket = await getJson("/api/v1/scans/" + body.id);
    label.textContent = "scan " + body.id + ": " + (ticket.body.state || "?");
    if (ticket.body.state === "done" || ticket.body.state === "failed") break;
  }
  await refresh();
}

// A provision or promotion: POST with the token the person typed (never
// stored), then the job's lines as they come, once a second.
async function runJob(path) {
  const label = document.getElementById("provision-state");
  const log = document.getElementById("provision-log");
  const token = document.getElementById("provision-token").value.trim();
  label.setAttribute("data-state", "asked");
  label.removeAttribute("data-exit");
  const headers = { "X-Requested-By": "dashboard" };
  if (token) headers.Authorization = "Bearer " + token;
  let response;
  try {
    response = await fetch(path, { method: "POST", headers });
  } catch (error) {
    label.textContent = "cannot reach the agent: " + error;
    return null;
  }
  const body = await response.json().catch(() => ({}));
  if (response.status !== 202) {
    label.textContent = body.error || "refused (HTTP " + response.status + ")";
    return null;
  }
  log.hidden = false;
  for (;;) {
    const job = await getJson(body.url);
    if (job.status !== 200) {
      label.textContent = job.body.error || "the job is gone (HTTP " + job.status + ")";
      return null;
    }
    log.textContent = (job.body.lines || []).join("\n");
    log.scrollTop = log.scrollHeight;
    label.textContent = job.body.action + " " + job.body.name + ": " + job.body.state;
    label.setAttribute("data-state", job.body.state);
    if (job.body.state === "done") {
      label.setAttribute("data-exit", String(job.body.exit_code));
      return job.body;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function provisionNow(event) {
  event.preventDefault();
  const name = document.getElementById("provision-name").value.trim();
  document.getElementById("promote-form").hidden = true;
  const job = await runJob("/api/v1/provision?" + new URLSearchParams({ name }));
  if (!job) return;
  const label = document.getElementById("provision-state");
  if (job.exit_code === 0) {
    label.textContent = name + " complies: promote it to make it the env people and CI activate";
    document.getElementById("promote-form").hidden = false;
    state.provisioned = name;
  } else {
    label.textContent = name + (job.exit_code === 1
      ? " was built but does not comply: it cannot be promoted (see above)"
      : ": provisioning failed (see above)");
  }
}

async function promoteNow(event) {
  event.preventDefault();
  const as = document.getElementById("promote-as").value.trim();
  const job = await runJob("/api/v1/promote?" + new URLSearchParams({ env: state.provisioned || "", as }));
  if (job) {
    document.getElementById("provision-state").textContent = job.exit_code === 0
      ? "promoted: " + as + " now points to " + state.provisioned : "promotion refused (see above)";
  }
}

// The fragment is anyone's to write (a link in a chat): a malformed part
// (decodeURIComponent throws on "%zz") is ignored, never fatal to the page.
// "env=" parts open envs; a "check=" part after one focuses that check.
function readAddress() {
  state.expanded = new Set();
  state.focus = null;
  let last = null;
  for (const part of location.hash.replace(/^#/, "").split("&")) {
    const [key, value] = [part.slice(0, part.indexOf("=")), part.slice(part.indexOf("=") + 1)];
    if (key !== "env" && key !== "check") continue;
    try {
      const text = decodeURIComponent(value);
      if (key === "env") {
        state.expanded.add(text);
        last = text;
      } else if (last !== null) {
        state.focus = { env: last, check: text };
      }
    } catch (error) {
      console.warn("ignoring a malformed part of the address: " + part);
    }
  }
}
readAddress();
// A matrix cell is a link: following it opens that env at that check.
window.addEventListener("hashchange", () => {
  readAddress();
  if (state.report) {
    renderEnvs(state.report);
    showFocus();
  }
});
document.getElementById("filter").addEventListener("input", (event) => {
  state.filter = event.target.value;
  if (state.report) {
    renderMatrix(state.report);
    renderEnvs(state.report);
  }
});
document.getElementById("scan").addEventListener("click", scanNow);
document.getElementById("provision-form").addEventListener("submit", provisionNow);
document.getElementById("promote-form").addEventListener("submit", promoteNow);
refresh();
setInterval(refresh, 15000);
