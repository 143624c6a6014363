// The run page: progress polling until the run is done, the plan DAG's colour switch and
// kernel links, and the decision filter.
"use strict";

(() => {
  const POLL_MS = 1000;
  const progress = document.getElementById("progress");

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
  }

  async function poll() {
    try {
      const response = await fetch(progress.dataset.statusUrl, {
        headers: { Accept: "application/json" },
      });
      if (response.ok) {
        const status = await response.json();
        showStatus(status);
        if (status.status === "done") {
          window.location.reload();
          return;
        }
        if (status.status === "failed") return;
      }
    } catch (error) {
      // A dropped connection is retried on the next tick.
    }
    window.setTimeout(poll, POLL_MS);
  }

  if (progress && document.getElementById("progress-status").textContent !== "failed") {
    window.setTimeout(poll, POLL_MS);
  }

  // The DAG: colour by projected time or limiter; clicking a kernel opens its page.
  document.querySelectorAll("[data-dag-colour]").forEach((radio) => {
    radio.addEventListener("change", () => {
      const plot = radio.closest(".strategy").querySelector(".plot--dag");
      plot.dataset.figure = `${plot.dataset.figureBase}/${radio.value}`;
      Explorer.draw(plot);
    });
  });
  document.querySelectorAll(".plot--dag").forEach((plot) => {
    plot.addEventListener("explorer:drawn", () => {
      if (plot.dataset.clickBound) return;
      plot.dataset.clickBound = "1";
      plot.on("plotly_click", (event) => {
        const kernel = event.points[0] && event.points[0].customdata;
        if (kernel) {
          window.location.href = plot.dataset.kernelUrl.replace(
            "KERNEL", encodeURIComponent(kernel));
        }
      });
    });
  });

  // Decisions: filter by action and by any text in the row.
  document.querySelectorAll(".strategy").forEach((panel) => {
    const action = panel.querySelector("[data-decision-action]");
    const text = panel.querySelector("[data-decision-text]");
    if (!action) return;
    const filter = () => {
      const needle = text.value.trim().toLowerCase();
      panel.querySelectorAll(".decisions tbody tr").forEach((row) => {
        const actionOk = !action.value || row.dataset.action === action.value;
        const textOk = !needle || row.textContent.toLowerCase().includes(needle);
        row.hidden = !(actionOk && textOk);
      });
    };
    action.addEventListener("change", filter);
    text.addEventListener("input", filter);
  });
})();
