// What-if in the fusion view (explorer/plan_edits.py): the plan shown is edited (merge, split,
// split an op out, forbid a fusion, split every kernel of a kind), each edit priced at once by
// the server, the edited plan redrawn, undone and redone, and saved as a plan of the run.
//
// The page keeps the list of edits made since the stored plan, and every request sends it
// whole: undo is the list less its last edit, redo puts it back. The server answers the
// plan's totals, each edit's kernels before and after and why it pays or not (by cause), and,
// in a second request (a big graph takes a second or more to lay out), the edited plan's
// fusion view object, which the main pane draws.
"use strict";

(() => {
  const panel = document.getElementById("plan-edit");
  const root = document.getElementById("fusion-graph");
  const toggle = document.getElementById("fusion-edit");
  if (!panel || !root || !toggle) return;
  const $ = (id) => document.getElementById(id);
  const pane = () => root.fusionPane;

  let base = null;          // {device, strategy}: the stored plan being edited
  let edits = [];           // the edits made since, in order
  let undone = [];          // edits undone, the last undone last
  let answer = null;        // the server's latest answer
  let ticket = 0;           // the latest request: older answers are dropped
  let cuda = null;          // the kernel whose CUDA is shown

  const csrf = () => {
    const cookie = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
    return cookie ? decodeURIComponent(cookie.split("=")[1]) : "";
  };
  const url = (template) => panel.dataset[template]
    .replace("DEVICE", encodeURIComponent(base.device))
    .replace("STRATEGY", encodeURIComponent(base.strategy));

  async function post(target, body) {
    const response = await fetch(target, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json",
                 "X-CSRFToken": csrf() },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
    return { ok: response.ok, status: response.status, data };
  }

  function time(us) {
    if (us === null || us === undefined || Number.isNaN(us)) return "–";
    return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(us < 10 ? 3 : 2)} µs`;
  }
  function delta(before, after) {
    if (before === null || after === null || before === undefined || after === undefined) return "";
    const change = after - before;
    const sign = change > 0 ? "+" : change < 0 ? "−" : "±";
    const percent = before ? ` (${sign}${Math.abs(100 * change / before).toFixed(1)} %)` : "";
    return `${sign}${time(Math.abs(change))}${percent}`;
  }
  const element = (tag, text, className) => {
    const made = document.createElement(tag);
    if (text !== undefined && text !== null) made.textContent = text;
    if (className) made.className = className;
    return made;
  };

  // -- opening and closing --------------------------------------------------------------------

  function start() {
    const plan = pane() && pane().plan();
    if (!plan) return;
    const [device, strategy] = plan.split("/");
    base = { device, strategy };
    edits = [];
    undone = [];
    cuda = null;
    $("plan-edit-plan").textContent = `${strategy} on ${device}`;
    $("plan-edit-cuda").hidden = true;
    $("plan-edit-saved").textContent = "";
    panel.hidden = false;
    toggle.setAttribute("aria-pressed", "true");
    send(null, { redraw: false });
  }

  function stop() {
    panel.hidden = true;
    toggle.setAttribute("aria-pressed", "false");
    // The stored plan again, as the pickers show it.
    if (base && edits.length) pane().load(base.device, base.strategy);
    base = null;
  }

  toggle.addEventListener("click", () => (panel.hidden ? start() : stop()));
  // Another plan picked: editing starts over on it.
  window.addEventListener("explorer:plan", () => {
    if (!panel.hidden) window.setTimeout(start, 0);
  });

  // -- edits ----------------------------------------------------------------------------------

  // Sends `edits` (with `edit` after them when given) and shows the answer; a refused edit
  // leaves the list as it was and says why.
  async function send(edit, { redraw = true } = {}) {
    const mine = ++ticket;
    const list = edit ? [...edits, edit] : [...edits];
    $("plan-edit-busy").textContent = "pricing…";
    let reply;
    try {
      reply = await post(url("whatifUrl"), { edits: list });
    } catch (error) {
      $("plan-edit-busy").textContent = "the server could not be reached";
      return;
    }
    if (mine !== ticket) return;
    $("plan-edit-busy").textContent = "";
    const refusal = $("plan-edit-refused");
    if (!reply.ok) {
      refusal.hidden = false;
      refusal.textContent = reply.data.error || `HTTP ${reply.status}`;
      return;
    }
    answer = reply.data;
    if (answer.refused) {
      refusal.hidden = false;
      refusal.textContent = `Refused: ${answer.refused.reason}`;
      render();
      return;
    }
    refusal.hidden = true;
    if (edit) { edits = list; undone = []; }
    render();
    if (redraw) drawEdited(mine);
  }

  async function drawEdited(mine) {
    $("plan-edit-busy").textContent = "drawing the edited plan…";
    let reply;
    try {
      reply = await post(url("whatifUrl"), { edits, graph: true });
    } catch (error) {
      return;
    }
    if (mine !== ticket || !reply.ok) return;
    $("plan-edit-busy").textContent = "";
    pane().show(reply.data.graph);
  }

  function undo() {
    if (!edits.length) return;
    undone.push(edits.pop());
    send(null);
  }
  function redo() {
    if (!undone.length) return;
    edits.push(undone.pop());
    send(null);
  }
  function reset() {
    undone = [...undone, ...edits.reverse()];
    edits = [];
    send(null);
  }

  $("plan-edit-undo").addEventListener("click", undo);
  $("plan-edit-redo").addEventListener("click", redo);
  $("plan-edit-reset").addEventListener("click", reset);
  $("plan-edit-merge").addEventListener("click", () => {
    send({ op: "merge", kernels: pane().selection() });
  });
  $("plan-edit-split").addEventListener("click", () => {
    const picked = pane().picked();
    if (picked && picked.type === "kernel") send({ op: "split", kernel: picked.id });
  });
  $("plan-edit-split-op").addEventListener("click", () => {
    const picked = pane().picked();
    if (picked && picked.type === "op") send({ op: "split", kernel: picked.kernel, ops: [picked.id] });
  });
  $("plan-edit-split-kind").addEventListener("click", () => {
    const kind = $("plan-edit-kind").value;
    if (kind) send({ op: "split_kind", kind });
  });
  document.addEventListener("keydown", (event) => {
    if (panel.hidden || !(event.ctrlKey || event.metaKey)) return;
    if (event.target.closest("input, textarea, select")) return;
    if (event.key === "z" && !event.shiftKey) { event.preventDefault(); undo(); }
    if (event.key === "y" || (event.key === "z" && event.shiftKey)) {
      event.preventDefault();
      redo();
    }
  });

  // What the pick allows: merge needs two chosen kernels, a split a picked kernel, an op
  // picked inside its kernel can be split out, or its fusion with an operand of that kernel
  // forbidden.
  root.addEventListener("fusion:pick", () => { if (!panel.hidden) actions(); });

  function actions() {
    const shown = pane();
    const picked = shown ? shown.picked() : null;
    const chosen = shown ? shown.selection() : [];
    $("plan-edit-merge").disabled = chosen.length < 2;
    $("plan-edit-merge").textContent = chosen.length >= 2 ? `Merge ${chosen.length} kernels`
      : "Merge chosen";
    $("plan-edit-split").disabled = !(picked && picked.type === "kernel");
    $("plan-edit-split-op").disabled = !(picked && picked.type === "op");
    $("plan-edit-undo").disabled = !edits.length;
    $("plan-edit-redo").disabled = !undone.length;
    $("plan-edit-reset").disabled = !edits.length;
    const forbid = $("plan-edit-forbid");
    forbid.replaceChildren();
    if (picked && picked.type === "op" && shown.data()) {
      const data = shown.data();
      const inside = new Set(data.nodes.filter((n) => n.kernel === picked.kernel).map((n) => n.id));
      const operands = data.edges.filter(([from, to]) => to === picked.id && inside.has(from))
        .map(([from]) => from);
      for (const operand of operands.slice(0, 4)) {
        const button = element("button", `Forbid ${operand} → ${picked.id}`,
                                "button button--small");
        button.type = "button";
        button.addEventListener("click", () => send({ op: "forbid", producer: operand,
                                                      consumer: picked.id }));
        forbid.append(button);
      }
    }
  }

  // -- the answer -----------------------------------------------------------------------------

  function render() {
    const { base: before, now } = answer;
    const totals = $("plan-edit-totals");
    const rows = [["projected", before.proj_us, now.proj_us], ["SOL", before.sol_us, now.sol_us]];
    if (answer.learned_model) rows.push(["learned", before.learned_us, now.learned_us]);
    const table = element("table", null, "table plan-edit__totals-table");
    const head = element("tr");
    ["", "stored plan", "edited", "change"].forEach((text) => head.append(element("th", text)));
    table.append(head);
    for (const [label, a, b] of rows) {
      const row = element("tr");
      row.append(element("th", label), element("td", time(a), "num"), element("td", time(b), "num"),
                 element("td", delta(a, b), `num ${b < a ? "is-better" : b > a ? "is-worse" : ""}`));
      row.dataset.total = label;
      table.append(row);
    }
    const kernels = element("tr");
    kernels.append(element("th", "kernels"), element("td", String(before.kernels), "num"),
                   element("td", String(now.kernels), "num"),
                   element("td", `${now.kernels > before.kernels ? "+" : ""}` +
                                 `${now.kernels - before.kernels}`, "num"));
    table.append(kernels);
    totals.replaceChildren(table, element("p", `Priced by ${answer.priced_by}` +
      `${answer.runtime ? `, launches as ${answer.runtime === "graph" ? "a CUDA graph"
        : "a stream"}` : ""}.`, "muted"));

    const log = $("plan-edit-log");
    log.replaceChildren(...answer.edits.map((entry) => {
      const item = element("li", `${entry.describe}: `);
      item.append(element("span", delta(entry.before_us, entry.after_us),
                          entry.gain_us > 0 ? "is-better" : entry.gain_us < 0 ? "is-worse" : ""));
      return item;
    }));
    $("plan-edit-log-empty").hidden = answer.edits.length > 0;
    renderLast(answer.edits[answer.edits.length - 1]);
    const kinds = [...new Set(answer.kernels.map((k) => k.kind))].filter((k) => k !== "library");
    const kind = $("plan-edit-kind");
    const chosen = kind.value;
    kind.replaceChildren(...kinds.map((name) => element("option", name)));
    if (kinds.includes(chosen)) kind.value = chosen;
    actions();
  }

  const FIELDS = [["kernel", (k) => k.name], ["kind", (k) => k.kind], ["ops", (k) => k.nodes],
                  ["SOL", (k) => time(k.sol_us)], ["projected", (k) => time(k.proj_us)],
                  ["device", (k) => time(k.device_us)], ["launch", (k) => time(k.launch_us)],
                  ["limiter", (k) => k.limiter || "–"],
                  ["occupancy", (k) => (k.occupancy === null ? "–"
                    : `${(100 * k.occupancy).toFixed(0)} %`)],
                  ["learned", (k) => time(k.learned_us)]];

  function renderLast(entry) {
    const last = $("plan-edit-last");
    if (!entry) { last.replaceChildren(); return; }
    // The learned column only where a learned model prices the device's kernels.
    const fields = FIELDS.filter(([label]) => label !== "learned" || answer.learned_model);
    const title = element("h4", `Last edit: ${entry.describe}`);
    const table = element("table", null, "table plan-edit__kernels");
    const head = element("tr");
    head.append(element("th", ""));
    fields.forEach(([label]) => head.append(element("th", label)));
    head.append(element("th", ""));
    table.append(head);
    const add = (kernel, side) => {
      const row = element("tr");
      row.dataset.side = side;
      row.append(element("td", side === "before" ? "before" : "after", "muted"));
      fields.forEach(([, value]) => row.append(element("td", String(value(kernel)))));
      const cell = element("td");
      if (side === "after") {
        const button = element("button", "CUDA", "link-button");
        button.type = "button";
        button.addEventListener("click", () => showCuda(kernel.name));
        cell.append(button);
      }
      row.append(cell);
      table.append(row);
    };
    entry.removed.forEach((kernel) => add(kernel, "before"));
    entry.added.forEach((kernel) => add(kernel, "after"));
    const parts = [title, table];
    const more = entry.removed_count - entry.removed.length + entry.added_count - entry.added.length;
    if (more > 0) parts.push(element("p", `and ${more} more kernels`, "muted"));
    if (entry.explanation) {
      parts.push(element("p", `Why: ${time(entry.explanation.a_us)} → ` +
        `${time(entry.explanation.b_us)} for the kernels it touched, by cause:`));
      const causes = element("ul", null, "plan-edit__causes");
      for (const cause of entry.explanation.causes) {
        if (Math.abs(cause.delta_us) < 5e-4) continue;
        const item = element("li", `${cause.label}: ${delta(cause.a_us, cause.b_us)}`);
        item.dataset.cause = cause.cause;
        causes.append(item);
      }
      parts.push(causes);
    }
    last.replaceChildren(...parts);
  }

  async function showCuda(kernel) {
    const shown = $("plan-edit-cuda");
    cuda = kernel;
    shown.hidden = false;
    shown.textContent = `// generating ${kernel}…`;
    const reply = await post(url("cudaUrl"), { edits, kernel });
    if (cuda !== kernel) return;
    shown.textContent = !reply.ok ? `// ${reply.data.error}`
      : reply.data.source || `// ${kernel}: ${reply.data.error || "a library call: no CUDA of ours"}`;
  }

  // -- saving ---------------------------------------------------------------------------------

  $("plan-edit-save").addEventListener("submit", async (event) => {
    event.preventDefault();
    const said = $("plan-edit-saved");
    if (panel.dataset.loggedIn !== "true") {
      said.replaceChildren(element("span", "Log in to save a plan: "));
      const link = element("a", "log in");
      link.href = panel.dataset.loginUrl;
      said.append(link);
      return;
    }
    said.textContent = "saving…";
    const reply = await post(panel.dataset.saveUrl, {
      name: $("plan-edit-name").value, device: base.device, strategy: base.strategy, edits });
    if (!reply.ok) {
      said.textContent = reply.data.error || `HTTP ${reply.status}`;
      said.className = "plan-edit__error";
      return;
    }
    said.className = "";
    const link = element("a", reply.data.own_run ? "your copy of this run" : reply.data.url);
    link.href = reply.data.url;
    said.replaceChildren(element("span", reply.data.own_run
      ? "Saved on a run of your own (you may not change this one): "
      : "Saved; it is being compiled and will be listed as "), link);
    said.dataset.url = reply.data.url;
  });
})();

// The run's saved plans (templates/explorer/saved_plans.html): the page is reloaded once those
// compiling are done; a plan is deleted; a plan file is applied.
(() => {
  const section = document.getElementById("saved-plans");
  if (!section) return;
  const csrf = () => {
    const cookie = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
    return cookie ? decodeURIComponent(cookie.split("=")[1]) : "";
  };
  const post = (target, body) => fetch(target, {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json",
               "X-CSRFToken": csrf() },
    body: body === undefined ? "{}" : JSON.stringify(body),
  });

  // The tuning card's progress line, while a tuning runs.
  const tuningState = document.getElementById("tuning-state");
  const waiting = (job) => Boolean(job) && ["queued", "running"].includes(job.status);
  async function poll() {
    try {
      const response = await fetch(section.dataset.statusUrl, { headers: { Accept: "application/json" } });
      if (response.ok) {
        const status = await response.json();
        const pending = (status.saved_plans || []).some(waiting) || waiting(status.tuning);
        if (tuningState && waiting(status.tuning) && status.tuning.stage_detail) {
          tuningState.textContent = `Tuning the ${status.tuning.device} plans: ` +
            `${status.tuning.status}, ${status.tuning.stage_detail}`;
        }
        if (!pending) { window.location.reload(); return; }
      }
    } catch (error) {
      // retried on the next tick
    }
    window.setTimeout(poll, 1500);
  }
  const tuning = document.getElementById("tuning");
  if (section.dataset.pending === "true" || (tuning && tuning.dataset.pending === "true")) {
    window.setTimeout(poll, 1500);
  }

  section.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-delete-url]");
    if (!button) return;
    const response = await post(button.dataset.deleteUrl);
    if (response.ok) window.location.reload();
  });

  const form = document.getElementById("apply-plan-file");
  if (!form) return;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const result = document.getElementById("apply-plan-file-result");
    const file = document.getElementById("apply-plan-file-input").files[0];
    if (!file) return;
    let plan;
    try {
      plan = JSON.parse(await file.text());
    } catch (error) {
      result.textContent = `${file.name} is not JSON: ${error.message}`;
      return;
    }
    const saveUrl = document.getElementById("plan-edit").dataset.saveUrl;
    const response = await post(saveUrl, {
      name: document.getElementById("apply-plan-file-name").value, plan });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      result.textContent = body.error || `HTTP ${response.status}`;
      return;
    }
    if (body.own_run) window.location.assign(body.url);
    else window.location.reload();
  });
})();
