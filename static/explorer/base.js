// Shared by every page: tabs (data-tab-group / data-tab-panel) and Plotly figures embedded as
// JSON (<script id="figures">, drawn into each .plot[data-figure] when it first becomes visible).
"use strict";

const Explorer = (() => {
  const figures = (() => {
    const holder = document.getElementById("figures");
    return holder ? JSON.parse(holder.textContent) : {};
  })();
  const plotConfig = { responsive: true, displaylogo: false };

  function isVisible(element) {
    return element.offsetParent !== null;
  }

  function draw(element, key) {
    const figure = figures[key || element.dataset.figure];
    if (!figure || typeof Plotly === "undefined") return false;
    Plotly.react(element, figure.data, figure.layout, plotConfig);
    element.dataset.drawn = key || element.dataset.figure;
    element.dispatchEvent(new CustomEvent("explorer:drawn"));
    return true;
  }

  // Plotly sizes a plot from its container, so hidden plots are drawn when shown.
  function drawVisible(root) {
    (root || document).querySelectorAll(".plot[data-figure]").forEach((element) => {
      if (element.dataset.drawn !== element.dataset.figure && isVisible(element)) {
        draw(element);
      }
    });
  }

  function showTab(group, name) {
    document.querySelectorAll(`[data-tab-group="${group}"] .tabs__tab`).forEach((tab) => {
      tab.classList.toggle("is-active", tab.dataset.tab === name);
    });
    document.querySelectorAll(`[data-tab-panel="${group}"]`).forEach((panel) => {
      panel.hidden = panel.dataset.tab !== name;
    });
    drawVisible();
  }

  document.addEventListener("click", (event) => {
    const tab = event.target.closest(".tabs__tab");
    if (!tab) return;
    showTab(tab.closest("[data-tab-group]").dataset.tabGroup, tab.dataset.tab);
  });
  window.addEventListener("DOMContentLoaded", () => drawVisible());

  return { figures, draw, drawVisible, showTab };
})();
