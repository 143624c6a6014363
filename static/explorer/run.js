// The run page: progress polling until the run is done (and while a measurement runs), the first
// answer while it compiles (the plans explored so far), strategy panels loaded when their tab is
// first opened, sortable kernel tables, the decision filter, and the shown plan in the URL (which
// the fusion view, fusion_view.js, follows).
"use strict";

(() => {
  const POLL_MS = 1000;
  const progress = document.getElementById("progress");
  const measurement = document.getElementById("measurement");

  function showStatus(status) {
    document.getElementById("progress-status").textContent = status.status;
    document.getElementById("progress-stage").textContent = status.stage || "";
    document.getElementById("progress-count").textContent =
      status.progress_total ? `${status.progress_done} / ${status.progress_total}` : "";
    const bar = document.getElementById("progress-bar");
    bar.max = status.progress_total || 1;
    bar.value = status.progress_done || 0;
    const error = document.getElementById("progress-error");
    error.hidden = !status.error;
    error.textContent = status.error ? `${status.error_stage}: ${status.error}` : "";
    document.getElementById("progress-detail").textContent = status.stage_detail || "";
    showStages(status.stages || []);
  }

  // Every stage with its state and time; the running one's time counts up between polls.
  let stagesShownAt = performance.now();
  function showStages(stages) {
    stagesShownAt = performance.now();
    document.getElementById("progress-stages").replaceChildren(...stages.map((stage) => {
      const item = document.createElement("li");
      item.className = `progress__stage is-${stage.state}`;
      item.dataset.state = stage.state;
      item.dataset.seconds = stage.seconds === null ? "" : String(stage.seconds);
      const name = document.createElement("span");
      name.className = "progress__stage-name";
      name.textContent = stage.name;
      const time = document.createElement("span");
      time.className = "progress__stage-time";
      item.append(name, " ", time);
      return item;
    }));
    tick();
  }

  function tick() {
    const since = (performance.now() - stagesShownAt) / 1000;
    document.querySelectorAll("#progress-stages .progress__stage").forEach((item) => {
      if (item.dataset.seconds === "") return;
      const seconds = Number(item.dataset.seconds) + (item.dataset.state === "running" ? since : 0);
      item.querySelector(".progress__stage-time").textContent = `${seconds.toFixed(1)} s`;
    });
  }
  if (document.getElementById("progress-stages")) window.setInterval(tick, 200);

  function showMeasurement(job) {
    const text = document.getElementById("measurement-text");
    if (job.status === "running") {
      text.textContent = `measuring: ${job.stage} ${job.progress_done} / ${job.progress_total}`;
    }
  }

  // Polls the status until the run (or the measurement in progress) ends, then reloads.
  async function poll(url, waitingFor) {
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      if (response.ok) {
        const status = await response.json();
        if (waitingFor === "run") {
          showStatus(status);
          // Reloaded when it ends: the results, or the error with the owner's retry button.
          if (["done", "failed"].includes(status.status)) return window.location.reload();
          await refreshPreview(status);
        } else if (status.measurement) {
          showMeasurement(status.measurement);
          if (["done", "failed"].includes(status.measurement.status)) {
            return window.location.reload();
          }
        }
      }
    } catch (error) {
      // A dropped connection is retried on the next tick.
    }
    window.setTimeout(() => poll(url, waitingFor), POLL_MS);
  }

  // -- the first answer: while the run compiles, the plans explored so far with their explored
  // prices (run_preview.html), fetched again whenever the status says more plans are explored;
  // the final results come with the reload when the run is done.

  let previewAsked = null;

  async function refreshPreview(status) {
    const preview = document.getElementById("preview");
    if (!preview || status.status !== "running") return;
    const shown = Number(preview.dataset.plans);
    const of = Number(preview.dataset.of);
    if (of && shown >= of) return;
    // The explore stage counts the plans explored; once it is over, every plan is.
    let asking = null;
    if (status.stage === "explore") {
      if (status.progress_done > shown) asking = `explore ${status.progress_done}`;
    } else if (!["", "import"].includes(status.stage)) {
      asking = "explored";
    }
    if (asking === null || asking === previewAsked) return;
    previewAsked = asking;
    const response = await fetch(preview.dataset.previewUrl);
    if (!response.ok) {
      previewAsked = null;  // asked again on the next poll
      return;
    }
    const template = document.createElement("template");
    template.innerHTML = (await response.text()).trim();
    const fresh = template.content.querySelector("#preview");
    if (!fresh || Number(fresh.dataset.plans) <= shown) return;
    preview.replaceWith(fresh);
    fresh.querySelectorAll(".strategy:not([data-panel-url])").forEach(setUpPanel);
    Explorer.showAskedRuntime();
    // A plan picked (its tab, kept in the hash) stays in view; else the fastest so far opens.
    showWanted();
  }

  if (progress && document.getElementById("progress-status").textContent !== "failed") {
    window.setTimeout(() => poll(progress.dataset.statusUrl, "run"), POLL_MS);
  }
  if (measurement && ["queued", "running"].includes(measurement.dataset.state)) {
    window.setTimeout(() => poll(measurement.dataset.statusUrl, "measurement"), POLL_MS);
  }

  // -- strategy panels -----------------------------------------------------------------------

  function setUpPanel(panel) {
    setUpDecisions(panel);
  }

  async function loadPanel(placeholder) {
    if (placeholder.dataset.loading) return;
    placeholder.dataset.loading = "1";
    try {
      const response = await fetch(placeholder.dataset.panelUrl);
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
      const template = document.createElement("template");
      template.innerHTML = (await response.text()).trim();
      const panel = template.content.querySelector(".strategy");
      panel.hidden = placeholder.hidden;
      placeholder.replaceWith(panel);
      setUpPanel(panel);
    } catch (error) {
      placeholder.textContent = `The plan could not be loaded (${error.message}); reload the page.`;
      delete placeholder.dataset.loading;
    }
  }

  document.querySelectorAll(".strategy:not([data-panel-url])").forEach(setUpPanel);
  document.addEventListener("click", (event) => {
    const tab = event.target.closest(".tabs__tab");
    if (!tab) return;
    const group = tab.closest("[data-tab-group]").dataset.tabGroup;
    document.querySelectorAll(
      `[data-tab-panel="${group}"][data-tab="${tab.dataset.tab}"][data-panel-url]`,
    ).forEach(loadPanel);
  });

  // -- kernel tables: a click on a column's header sorts the rows by it (again: the other way);
  // numbers by their cell's data-value (cells without one last), text by its words.

  function sortTable(header) {
    const table = header.closest("table");
    const column = Array.from(header.parentNode.children).indexOf(header);
    const ascending = header.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach((th) => th.removeAttribute("aria-sort"));
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    const numeric = header.dataset.sort === "number";
    const key = (row) => {
      const cell = row.children[column];
      if (!numeric) return cell.textContent.trim();
      const value = cell.dataset.value;
      return value === undefined || value === "" ? null : Number(value);
    };
    const body = table.tBodies[0];
    const rows = Array.from(body.rows).map((row, index) => [key(row), index, row]);
    rows.sort(([a, i], [b, j]) => {
      if (a === null || b === null) return a === b ? i - j : (a === null ? 1 : -1);
      const order = numeric ? a - b : a.localeCompare(b, undefined, {numeric: true});
      return (ascending ? order : -order) || i - j;
    });
    rows.forEach(([, , row]) => body.appendChild(row));
  }

  // A big plan's table holds its first rows; "show all" (or sorting, which needs them all)
  // fetches the panel with every row and takes its table body.
  async function completeTable(table) {
    if (table.dataset.complete !== "false") return;
    const more = table.closest(".strategy").querySelector(".kernels__more");
    const button = more.querySelector("[data-show-all]");
    button.disabled = true;
    button.textContent = "Loading…";
    const response = await fetch(more.dataset.moreUrl);
    if (!response.ok) {
      button.disabled = false;
      button.textContent = `Could not load them (${response.status}); try again`;
      return;
    }
    const template = document.createElement("template");
    template.innerHTML = (await response.text()).trim();
    table.tBodies[0].replaceWith(template.content.querySelector("table.kernels tbody"));
    table.dataset.complete = "true";
    more.remove();
  }

  document.addEventListener("click", async (event) => {
    const showAll = event.target.closest("[data-show-all]");
    if (showAll) {
      await completeTable(showAll.closest(".strategy").querySelector("table.kernels"));
      return;
    }
    const header = event.target.closest("table[data-sortable] th[data-sort]");
    if (!header) return;
    await completeTable(header.closest("table"));
    sortTable(header);
  });

  // -- decisions: filter by action and by any text (of the node names, the kernels they are in,
  // the reason); the page holds the first rows, the filter searches every decision (fetched
  // once, on first use).

  const DECISIONS_SHOWN = 500;

  function setUpDecisions(panel) {
    const action = panel.querySelector("[data-decision-action]");
    const text = panel.querySelector("[data-decision-text]");
    if (!action) return;
    const body = panel.querySelector(".decisions tbody");
    const shown = panel.querySelector("[data-decision-shown]");
    const total = Number(panel.dataset.decisionCount);
    let all = null;

    async function everyDecision() {
      if (all === null) {
        const response = await fetch(panel.dataset.decisionsUrl);
        all = (await response.json()).decisions;
      }
      return all;
    }

    // A tuned plan measured on a GPU has a column of each move's measured gain.
    const measuredColumn = panel.querySelector(".decisions th[data-measured]") !== null;
    const micros = (value) => value === null ? "–" : `${value.toFixed(2)} µs`;

    function row([act, subject, reason, gain, kernels, measured, why]) {
      const tr = document.createElement("tr");
      tr.dataset.action = act;
      const cells = [act, subject, kernels.join(", ") || "–", reason, micros(gain)];
      if (measuredColumn) cells.push(micros(measured));
      cells.forEach((value, index) => {
        const td = document.createElement("td");
        if (index === 1 || index === 2) {
          const code = document.createElement("code");
          code.textContent = value;
          td.append(code);
        } else {
          td.textContent = value;
        }
        if (index >= 4) td.className = "num";
        if (index === 5 && why) td.title = why;
        tr.append(td);
      });
      return tr;
    }

    async function filter() {
      const needle = text.value.trim().toLowerCase();
      const decisions = await everyDecision();
      const matches = decisions.filter(([act, subject, reason, , kernels]) =>
        (!action.value || act === action.value) &&
        (!needle || `${act} ${subject} ${kernels.join(" ")} ${reason}`.toLowerCase()
          .includes(needle)));
      body.replaceChildren(...matches.slice(0, DECISIONS_SHOWN).map(row));
      shown.textContent = matches.length > DECISIONS_SHOWN
        ? `showing the first ${DECISIONS_SHOWN} of ${matches.length} matches (of ${total})`
        : `${matches.length} of ${total}`;
    }
    action.addEventListener("change", filter);
    text.addEventListener("input", filter);
  }

  // -- URL state: the device and strategy shown live in the location's hash (#h100/xla), so a
  // link reproduces the view; opening the page with one shows (and loads) that plan.

  function activeTab(group) {
    const tab = document.querySelector(`[data-tab-group="${group}"] .tabs__tab.is-active`);
    return tab ? tab.dataset.tab : null;
  }

  function shownPlan() {
    const section = document.querySelector('section.device:not([hidden])');
    if (!section) return null;
    const device = section.dataset.tab;
    const strategy = activeTab(`strategy-${device}`);
    return strategy ? `${device}/${strategy}` : null;
  }

  // The fusion view (fusion_view.js) follows the plan shown: "explorer:plan" says which.
  function announce(device, strategy, kernel = null) {
    window.dispatchEvent(new CustomEvent("explorer:plan", { detail: { device, strategy, kernel } }));
  }

  // The fusion view's other plan while side by side: "~h100/xla" at the hash's end.
  const besides = () => (/~[\w.-]+\/[\w.:-]+$/.exec(window.location.hash) || [""])[0];

  document.addEventListener("click", (event) => {
    if (!event.target.closest(".tabs__tab")) return;
    const plan = shownPlan();  // base.js has switched the tab: this listener comes after it
    if (!plan) return;
    history.replaceState(null, "", `#${plan}${besides()}`);
    announce(...plan.split("/"));
  });

  // #h100/xla, or #h100/xla/loop.3 with the kernel picked in the fusion view (either perhaps
  // followed by the side-by-side plan, ~h100/cost).
  function showWanted() {
    const wanted = /^#([\w.-]+)\/([\w.:-]+)(?:\/([^~]+))?(?:~.*)?$/.exec(window.location.hash);
    if (!wanted) return;
    const [, device, strategy, kernel] = wanted;
    const tabs = [
      document.querySelector(`[data-tab-group="device"] .tabs__tab[data-tab="${device}"]`),
      document.querySelector(
        `[data-tab-group="strategy-${device}"] .tabs__tab[data-tab="${strategy}"]`),
    ];
    tabs.forEach((tab) => { if (tab) tab.click(); });
    announce(device, strategy, kernel ? decodeURIComponent(kernel) : null);
  }
  showWanted();
  // A link to a plan of this page (a saved plan's, say) shows it as opening the page would.
  document.addEventListener("click", (event) => {
    const link = event.target.closest('a[href^="#"]');
    if (link && /^#[\w.-]+\/[\w.:-]+/.test(link.getAttribute("href"))) {
      window.setTimeout(showWanted, 0);
    }
  });
})();
