// Shared by every page: tabs (data-tab-group / data-tab-panel) and the runtime switch of the
// run and compare pages. Most charts are inline SVG drawn on the server (explorer/charts.py)
// and need no script; the interactive ones are plots.js's, with tabs of their own.
"use strict";

const Explorer = (() => {
  function showTab(group, name) {
    document.querySelectorAll(`[data-tab-group="${group}"] .tabs__tab`).forEach((tab) => {
      tab.classList.toggle("is-active", tab.dataset.tab === name);
    });
    document.querySelectorAll(`[data-tab-panel="${group}"]`).forEach((panel) => {
      panel.hidden = panel.dataset.tab !== name;
    });
  }

  document.addEventListener("click", (event) => {
    const tab = event.target.closest("[data-tab-group] .tabs__tab");
    if (!tab) return;
    showTab(tab.closest("[data-tab-group]").dataset.tabGroup, tab.dataset.tab);
  });

  // The runtime switch: every time that depends on how the kernels are launched is on the
  // page once per runtime, and the results show the chosen one's (base.css). The choice lives in
  // the query (?runtime=stream), so a link reproduces it; without one, the run's own runtime.
  // The results are looked up each time: a compiling run's preview replaces them as it grows.

  function showRuntime(runtime) {
    const results = document.querySelector(".results[data-runtime-shown]");
    if (!results || !results.querySelector(`[data-runtime-choice="${runtime}"]`)) return;
    results.dataset.runtimeShown = runtime;
    results.querySelectorAll("[data-runtime-choice]").forEach((button) => {
      button.setAttribute("aria-pressed", String(button.dataset.runtimeChoice === runtime));
    });
  }

  document.addEventListener("click", (event) => {
    const choice = event.target.closest("[data-runtime-choice]");
    if (!choice) return;
    showRuntime(choice.dataset.runtimeChoice);
    const url = new URL(window.location.href);
    url.searchParams.set("runtime", choice.dataset.runtimeChoice);
    history.replaceState(null, "", url);
  });
  function showAskedRuntime() {
    const asked = new URLSearchParams(window.location.search).get("runtime");
    if (asked) showRuntime(asked);
  }
  showAskedRuntime();

  return { showTab, showAskedRuntime };
})();
