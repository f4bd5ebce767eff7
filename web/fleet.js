// The fleet page: reads /api/v1/fleet and renders it. All data goes in
// through textContent, never as HTML: host names, images and causes come
// from agents and Prometheus.
"use strict";

const STATE_SYMBOL = { compliant: "✓", drift: "✗", error: "!", pending: "…", unavailable: "?" };
const FILTERS = ["verdict", "platform", "check", "cause"];
const REFRESH_MS = 30000;
const RETRY_MS = 3000;
const COLUMNS = 8;
// Past this many hosts shown, groups start collapsed: the page stays a
// summary at 1,000 hosts.
const OPEN_GROUPS_UP_TO = 50;
// Rows of the fleet's causes and checks shown before "more".
const SUMMARY_ROWS = 10;
const STATE_ORDER = ["error", "unavailable", "drift", "pending", "compliant"];
// expanded: the hosts people opened; details: their rows, fetched once per
// opening and kept across refreshes. groups: groups people opened (true) or
// closed (false), over the default.
const fleetState = { view: null, expanded: new Set(), details: new Map(), groups: new Map(),
  moreRows: new Set(), asked: 0, timer: null };


// A verdict by symbol and word, never by colour alone.
function stateBadge(state) {
  return el("span", { class: "badge " + state }, (STATE_SYMBOL[state] || "") + " " + state);
}

function showProblem(text) {
  const box = document.getElementById("problem");
  box.hidden = !text;
  box.textContent = text || "";
}

function currentFilters() {
  const params = new URLSearchParams(window.location.search);
  const filters = {};
  for (const name of FILTERS) if (params.get(name)) filters[name] = params.get(name);
  return filters;
}

// How the hosts are grouped: the page's own choice, kept in its address
// beside the filters but never sent to the API.
function currentGrouping() {
  const chosen = new URLSearchParams(window.location.search).get("group");
  return ["cause", "contract", "platform", "none"].includes(chosen) ? chosen : "cause";
}

function setFilters(filters, grouping) {
  const params = new URLSearchParams();
  for (const name of FILTERS) if (filters[name]) params.set(name, filters[name]);
  const group = grouping || currentGrouping();
  if (group !== "cause") params.set("group", group);
  const query = params.toString();
  window.history.replaceState(null, "", query ? "?" + query : window.location.pathname);
  load();
}

// Fills a filter's choices with the fleet's values, keeping the chosen one.
function fillSelect(id, values, chosen) {
  const select = document.getElementById(id);
  const keep = select.querySelector("option[value='']");
  select.replaceChildren(keep);
  const all = new Set(values || []);
  if (chosen) all.add(chosen);
  for (const value of [...all].sort()) select.append(el("option", { value }, value));
  select.value = chosen || "";
}

// Hosts per verdict over time, stacked bars with a tooltip per step.
function trend(history) {
  const points = (history && history.points) || [];
  if (!points.length) {
    return el("p", { class: "legend" }, (history && history.problem) || "no history yet");
  }
  const width = 900;
  const height = 120;
  const most = Math.max(1, ...points.map((p) => p.compliant + p.drift + p.error + p.down));
  const step = width / points.length;
  const bars = [];
  points.forEach((point, i) => {
    let y = height;
    for (const [state, count] of [["compliant", point.compliant], ["drift", point.drift],
      ["error", point.error], ["unavailable", point.down]]) {
      if (!count) continue;
      const h = (count / most) * height;
      y -= h;
      bars.push(svg("rect", { class: "bar " + state, "data-state": state, x: i * step, y,
        width: Math.max(1, step - 1), height: h },
      svg("title", {}, point.time + ": " + count + " " + state)));
    }
  });
  return svg("svg", { class: "trend", viewBox: "0 0 " + width + " " + (height + 16), width,
    height: height + 16, role: "img", "aria-label": "hosts per verdict over time" },
  ...bars,
  svg("text", { x: 0, y: height + 13 }, points[0].time),
  svg("text", { x: width, y: height + 13, "text-anchor": "end" }, points[points.length - 1].time));
}

function filterLink(name, value) {
  return el("a", { href: "#", class: "cause", onclick: (event) => {
    event.preventDefault();
    setFilters({ ...currentFilters(), [name]: value });
  } }, value);
}

async function hostDetails(row) {
  const cell = el("td", { colSpan: COLUMNS }, "asking the agent…");
  const path = "/api/v1/fleet/hosts/" + encodeURIComponent(row.host) + "/report";
  try {
    const response = await fetch(path, { headers: { Accept: "application/json" } });
    const body = await response.json().catch(() => ({}));
    if (response.status !== 200) {
      cell.textContent = body.error || ("HTTP " + response.status);
      return cell;
    }
    const list = el("ul", {});
    for (const env of body.envs || []) {
      list.append(el("li", { class: "env-line" }, stateBadge(env.verdict), " ",
        el("strong", {}, env.name), env.summary ? " — " + env.summary : ""));
    }
    cell.replaceChildren(el("p", {}, "scanned " + (body.scanned_at || "?") + ", " +
      (body.envs || []).length + " envs"), list);
  } catch (error) {
    cell.textContent = "cannot reach the fleet view: " + error;
  }
  return cell;
}

async function openDetails(tr, row) {
  const kept = fleetState.details.get(row.host);
  if (kept) {
    tr.after(kept);
    return;
  }
  const details = el("tr", { class: "details", "data-host": row.host });
  fleetState.details.set(row.host, details);
  tr.after(details);
  details.append(await hostDetails(row));
}

function hostRow(row) {
  const agent = row.agent_url
    ? el("a", { href: row.agent_url, class: "agent-link",
      onclick: (event) => event.stopPropagation() }, row.up ? "up" : "down")
    : el("span", { class: "agent-link" }, row.up ? "up" : "down");
  const causes = el("span", {});
  for (const cause of row.top_causes || []) {
    if (causes.childNodes.length) causes.append(", ");
    causes.append(filterLink("cause", cause.cause), " " + cause.count);
  }
  const verdict = el("td", {}, stateBadge(row.state));
  if (row.error) {
    verdict.append(el("div", { class: "host-error" }, row.error));
  }
  if (!row.up && row.last_seen) {
    verdict.append(el("div", { class: "host-error" }, "last seen " + row.last_seen +
      (row.last_verdict ? " (" + row.last_verdict + ")" : "")));
  }
  if (row.last_known) {
    // Contract, platform, causes and last scan are not today's: say so.
    verdict.append(el("div", { class: "host-error last-known" },
      "last known, from " + (row.last_known_from || "an earlier read")));
  }
  // The image's tag is what differs between hosts: the whole name is in its title.
  const image = el("td", { class: "cause image", title: row.image },
    row.image.length > 48 ? "…" + row.image.slice(-47) : row.image);
  const tr = el("tr", { class: "host", "data-host": row.host, "data-state": row.state },
    el("th", { scope: "row" }, row.host, " ", agent), verdict,
    el("td", {}, row.contract), el("td", {}, row.platform), image,
    el("td", {}, row.envs ? row.drifting_envs + " of " + row.envs : ""), el("td", {}, causes),
    el("td", { class: "when" }, row.last_scan || ""));
  tr.addEventListener("click", () => {
    const next = tr.nextSibling;
    if (next && next.classList && next.classList.contains("details")) {
      next.remove();
      fleetState.expanded.delete(row.host);
      fleetState.details.delete(row.host);
      return;
    }
    fleetState.expanded.add(row.host);
    openDetails(tr, row);
  });
  return tr;
}

// The fleet's causes or checks, most hosts first: the first SUMMARY_ROWS,
// and a row that shows the rest.
function countRows(tableId, entries, key) {
  const body = document.querySelector("#" + tableId + " tbody");
  body.replaceChildren();
  const all = entries || [];
  const shown = fleetState.moreRows.has(tableId) ? all : all.slice(0, SUMMARY_ROWS);
  for (const entry of shown) {
    body.append(el("tr", { "data-key": entry[key] }, el("td", {}, filterLink(key, entry[key])),
      el("td", {}, entry.hosts), el("td", {}, entry.envs)));
  }
  if (shown.length < all.length) {
    body.append(el("tr", { class: "more" }, el("td", { colSpan: 3 },
      el("button", { type: "button", onclick: () => {
        fleetState.moreRows.add(tableId);
        countRows(tableId, entries, key);
      } }, (all.length - shown.length) + " more"))));
  }
  if (!all.length) body.append(el("tr", {}, el("td", { colSpan: 3 }, "none")));
}

// The group a host is listed under: its main cause (a hang first, then the
// cause of most envs), its contract or its platform.
function groupOf(row, grouping) {
  if (grouping === "none") return "all hosts";
  if (grouping === "contract") return row.contract || "(no contract known)";
  if (grouping === "platform") return row.platform || "(no platform)";
  if (row.top_causes && row.top_causes.length) return row.top_causes[0].cause;
  if (row.state === "compliant") return "(complies)";
  if (row.state === "unavailable") return "(down, no cause known)";
  if (row.state === "pending") return "(first scan running)";
  return "(no failing check known)";
}

// The hosts in groups, worst first (by the worst verdict in each, then size).
function groupedRows(rows, grouping) {
  const groups = new Map();
  for (const row of rows) {
    const name = groupOf(row, grouping);
    if (!groups.has(name)) groups.set(name, []);
    groups.get(name).push(row);
  }
  const worst = (list) => Math.min(...list.map((row) => {
    const rank = STATE_ORDER.indexOf(row.state);
    return rank < 0 ? 0 : rank;
  }));
  // A hang's group leads, as a hang leads every list of causes.
  const first = (name) => (grouping === "cause" && name === "hang" ? 0 : 1);
  return [...groups.entries()].sort((a, b) => first(a[0]) - first(b[0]) ||
    worst(a[1]) - worst(b[1]) || b[1].length - a[1].length || a[0].localeCompare(b[0]));
}

function groupBody(name, rows, open, grouping) {
  const body = el("tbody", { class: "group", "data-group": name });
  const counts = el("span", { class: "group-counts" });
  for (const state of STATE_ORDER) {
    const count = rows.filter((row) => row.state === state).length;
    if (count) counts.append(" ", stateBadge(state), " " + count);
  }
  const head = el("tr", { class: "group-head", "aria-expanded": String(open) },
    el("th", { colSpan: COLUMNS },
      el("span", { class: "toggle" }, open ? "▾ " : "▸ "),
      el("span", { class: grouping === "cause" ? "cause" : "" }, name),
      " · " + rows.length + (rows.length === 1 ? " host" : " hosts"), counts));
  head.addEventListener("click", () => {
    fleetState.groups.set(name, !open);
    body.replaceWith(groupBody(name, rows, !open, grouping));
  });
  body.append(head);
  if (open) {
    for (const row of rows) {
      const tr = hostRow(row);
      body.append(tr);
      // A refresh keeps the hosts people opened open.
      if (fleetState.expanded.has(row.host)) openDetails(tr, row);
    }
  }
  return body;
}

function render(view) {
  const counts = document.getElementById("counts");
  counts.replaceChildren();
  for (const state of ["compliant", "drift", "error", "pending", "unavailable"]) {
    if (view.counts[state]) {
      counts.append(el("span", { class: "badge " + state, "data-count": state },
        STATE_SYMBOL[state] + " " + view.counts[state] + " " + state), " ");
    }
  }
  document.getElementById("meta").textContent = view.counts.hosts + " of " + view.total_hosts +
    " hosts shown · " + view.source + " · as of " + view.as_of +
    (view.age_seconds !== undefined ? " (" + Math.floor(view.age_seconds) + " s old)" : "");
  // Hosts older than the view's refresh are never shown as if current.
  showProblem(view.problem || (view.stale
    ? "These hosts are " + Math.floor(view.age_seconds) + " s old: " + view.stale : ""));
  const filters = currentFilters();
  document.getElementById("verdict").value = filters.verdict || "";
  fillSelect("platform", view.platforms, filters.platform);
  fillSelect("check", view.checks_known, filters.check);
  fillSelect("cause", view.causes_known, filters.cause);
  document.getElementById("trend").replaceChildren(trend(view.history));
  document.getElementById("trend-scope").textContent =
    view.history && view.history.scope ? "· " + view.history.scope : "";
  countRows("cause-table", view.causes, "cause");
  countRows("check-table", view.checks, "check");

  const grouping = currentGrouping();
  document.getElementById("group").value = grouping;
  const table = document.getElementById("host-table");
  for (const old of table.querySelectorAll("tbody")) old.remove();
  const groups = groupedRows(view.hosts, grouping);
  document.getElementById("host-count").textContent = "· " + view.hosts.length + " in " +
    groups.length + (groups.length === 1 ? " group" : " groups");
  const openByDefault = view.hosts.length <= OPEN_GROUPS_UP_TO || groups.length === 1;
  for (const [name, rows] of groups) {
    const chosen = fleetState.groups.get(name);
    table.append(groupBody(name, rows, chosen === undefined ? openByDefault : chosen, grouping));
  }
  if (!view.hosts.length) {
    table.append(el("tbody", {}, el("tr", {}, el("td", { colSpan: COLUMNS }, "no host matches"))));
  }
}

// Asks for the fleet now and again after REFRESH_MS (RETRY_MS after a
// failure); an answer that arrives after a newer request's is dropped.
async function load() {
  clearTimeout(fleetState.timer);
  const asked = ++fleetState.asked;
  const query = new URLSearchParams(currentFilters()).toString();
  let ok = false;
  try {
    const response = await fetch("/api/v1/fleet" + (query ? "?" + query : ""),
      { headers: { Accept: "application/json" } });
    const body = await response.json().catch(() => ({}));
    if (asked !== fleetState.asked) return;
    if (response.status !== 200) {
      showProblem(body.error || ("HTTP " + response.status));
    } else {
      fleetState.view = body;
      try {
        render(body);
        ok = true;
      } catch (error) {
        showProblem("cannot draw the fleet: " + error);
      }
    }
  } catch (error) {
    if (asked !== fleetState.asked) return;
    showProblem("cannot reach the fleet view: " + error);
  }
  fleetState.timer = setTimeout(load, ok ? REFRESH_MS : RETRY_MS);
}

for (const name of FILTERS) {
  document.getElementById(name).addEventListener("change", (event) => {
    setFilters({ ...currentFilters(), [name]: event.target.value });
  });
}
document.getElementById("clear").addEventListener("click", () => setFilters({}));
document.getElementById("group").addEventListener("change", (event) => {
  fleetState.groups.clear();
  setFilters(currentFilters(), event.target.value);
});
load();
