// Shared by every page: tabs (data-tab-group / data-tab-panel). The charts are inline SVG
// drawn on the server (explorer/charts.py) and need no script.
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
    const tab = event.target.closest(".tabs__tab");
    if (!tab) return;
    showTab(tab.closest("[data-tab-group]").dataset.tabGroup, tab.dataset.tab);
  });

  return { showTab };
})();
