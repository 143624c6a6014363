// Interactive charts (explorer/plots.py builds them on the server as plotly.js JSON).
//
// A chart is an element [data-iplot] with the address of its figure (data-plot-url) and of
// plotly.js (data-plotly-js) and our stylesheet for it (data-plotly-css). Nothing is loaded
// until a chart is shown: a chart inside <details data-plots> when the details are opened (its
// tab buttons, [data-plot-tab], switch charts; a form [data-plot-options] sets a chart's
// options, the timeline's data-parallel set-up), one marked data-iplot-auto when it scrolls
// into view. plotly.js (its basic bundle, 1.2 MB) then loads once per page. A point whose customdata
// is an address (a kernel's page) opens it on click.

(() => {
  "use strict";

  let plotly = null;

  // Our stylesheet first, under the id and class plotly.js looks for before it would inject an
  // inline <style> of its own (which the Content-Security-Policy refuses).
  function loadPlotly(chart) {
    if (plotly) return plotly;
    if (!document.getElementById("plotly.js-style-global")) {
      const style = document.createElement("link");
      style.rel = "stylesheet";
      style.id = "plotly.js-style-global";
      style.className = "no-inline-styles";
      style.href = chart.dataset.plotlyCss;
      document.head.append(style);
    }
    plotly = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = chart.dataset.plotlyJs;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => {
        plotly = null;
        reject(new Error("plotly.js did not load"));
      };
      document.head.append(script);
    });
    return plotly;
  }

  function say(chart, text) {
    const message = document.createElement("p");
    message.className = "muted iplot__message";
    message.textContent = text;
    chart.replaceChildren(message);
  }

  // A chart's address with its options: the fields of its group's form for it (the timeline's
  // data-parallel set-up) and the runtime the page shows.
  function address(chart) {
    const query = new URLSearchParams();
    const group = chart.closest("[data-plots]");
    const form = group && group.querySelector(`[data-plot-options="${chart.dataset.chart}"]`);
    if (form) {
      new FormData(form).forEach((value, key) => {
        if (key !== "preset" && String(value).trim()) query.set(key, String(value).trim());
      });
      const results = document.querySelector(".results[data-runtime-shown]");
      if (results) query.set("runtime", results.dataset.runtimeShown);
    }
    const text = query.toString();
    return text ? `${chart.dataset.plotUrl}?${text}` : chart.dataset.plotUrl;
  }

  async function draw(chart) {
    if (chart.dataset.drawn) return;
    chart.dataset.drawn = "pending";
    const fallback = chart.querySelector("[data-iplot-fallback]");
    if (!fallback) say(chart, "Drawing the chart…");
    try {
      const [Plotly, response] = await Promise.all([loadPlotly(chart), fetch(address(chart))]);
      if (!response.ok) throw new Error(`the chart did not load (HTTP ${response.status})`);
      const figure = await response.json();
      if (chart.classList.contains("js-plotly-plot")) Plotly.purge(chart);
      if (figure.empty) {
        say(chart, figure.empty);
      } else {
        chart.replaceChildren();
        await Plotly.newPlot(chart, figure.data, figure.layout,
                             {responsive: true, displaylogo: false,
                              modeBarButtonsToRemove: ["toImage", "lasso2d", "select2d"]});
        chart.on("plotly_click", (event) => {
          const target = event.points.length ? event.points[0].customdata : null;
          if (typeof target === "string" && target.startsWith("/")) window.location.assign(target);
        });
      }
      chart.dataset.drawn = "done";
    } catch (error) {
      chart.dataset.drawn = "";
      if (!fallback) say(chart, `${error.message}.`);
    }
  }

  function redraw(chart) {
    chart.dataset.drawn = "";
    if (!chart.hidden) draw(chart);
  }

  // A chart's options changed: a preset fills the fields, any field draws the chart again.
  document.addEventListener("change", (event) => {
    const form = event.target.closest("[data-plot-options]");
    if (!form) return;
    if (event.target.matches("[data-dp-preset]")) {
      const [world, link] = event.target.value.split(" ");
      form.elements.dp_world.value = world || "";
      if (link) form.elements.interconnect.value = link;
    } else if (form.elements.preset) {
      form.elements.preset.value = [...form.elements.preset.options].some((option) =>
        option.value === `${form.elements.dp_world.value} ${form.elements.interconnect.value}`)
        ? `${form.elements.dp_world.value} ${form.elements.interconnect.value}` : "";
      if (!form.elements.dp_world.value) form.elements.preset.value = "";
    }
    form.closest("[data-plots]").querySelectorAll(
      `[data-iplot][data-chart="${form.dataset.plotOptions}"]`).forEach(redraw);
  });

  // The page's runtime switch (base.js, which has switched it by now): a timeline drawn under
  // the other runtime is drawn again under the one shown.
  document.addEventListener("click", (event) => {
    if (!event.target.closest("[data-runtime-choice]")) return;
    document.querySelectorAll('[data-iplot][data-chart="timeline"][data-drawn="done"]')
      .forEach(redraw);
  });

  function showTab(group, name) {
    group.querySelectorAll("[data-plot-tab]").forEach((tab) => {
      tab.classList.toggle("is-active", tab.dataset.plotTab === name);
    });
    group.querySelectorAll("[data-iplot]").forEach((chart) => {
      chart.hidden = chart.dataset.chart !== name;
      if (!chart.hidden) draw(chart);
    });
    group.querySelectorAll("[data-plot-options]").forEach((form) => {
      form.hidden = form.dataset.plotOptions !== name;
    });
  }

  function openGroup(group) {
    const active = group.querySelector("[data-plot-tab].is-active")
      || group.querySelector("[data-plot-tab]");
    if (active) showTab(group, active.dataset.plotTab);
  }

  // "toggle" does not bubble: listen in the capture phase, for panels loaded later too.
  document.addEventListener("toggle", (event) => {
    const group = event.target;
    if (group.matches && group.matches("details[data-plots]") && group.open) openGroup(group);
  }, true);

  document.addEventListener("click", (event) => {
    const tab = event.target.closest("[data-plot-tab]");
    if (!tab) return;
    const group = tab.closest("[data-plots]");
    if (group) showTab(group, tab.dataset.plotTab);
  });

  const seen = "IntersectionObserver" in window ? new IntersectionObserver((entries) => {
    entries.filter((entry) => entry.isIntersecting).forEach((entry) => {
      seen.unobserve(entry.target);
      draw(entry.target);
    });
  }) : null;

  function watch(root) {
    root.querySelectorAll("[data-iplot][data-iplot-auto]").forEach((chart) => {
      if (seen) seen.observe(chart); else draw(chart);
    });
    root.querySelectorAll("details[data-plots][open]").forEach(openGroup);
  }

  watch(document);
  // Panels and cards that arrive later (a strategy's tab, a finished tuning) bring charts too.
  new MutationObserver((records) => {
    records.forEach((record) => record.addedNodes.forEach((node) => {
      if (node instanceof HTMLElement) watch(node);   // the fusion view's SVG brings none
    }));
  }).observe(document.body, {childList: true, subtree: true});
})();
