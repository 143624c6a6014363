// The fusion view (run page, #fusion-graph): the uploaded op graph with one plan's kernels drawn
// as boxes around their ops, on a canvas.
//
// The server lays the graph out once per plan (compiler/stages/graph_layout.py): the plan level,
// with layers and x positions for each kernel and each node no kernel computes; and the same
// inside each kernel, for its ops. This file turns those into pixels with each box's size, so
// expanding a kernel only moves boxes, without a new layout; a layer too wide for the screen
// (an optimizer step's hundreds of parameters) is folded onto rows here. A plan opens fitted to
// the canvas, at a zoom its labels can be read at. It draws only what is on screen, and text
// no smaller than 11 px (none where a box is too small for it), so a 16,000-node training step
// pans smoothly. A card names the kernel or op under the pointer.
//
// It follows the plan the page shows: run.js sends "explorer:plan" when a device or strategy
// tab is picked (and for the plan in the URL's hash), and the view keeps its viewport when the
// plan changes, so two plans of one graph can be flipped between. Its own pickers click those
// tabs. A picked kernel goes into the hash (#h100/cost/loop.3), so a link reopens it.
//
// Side by side (the "side by side with" switch): a second pane draws another plan of the same
// graph. Each kernel is coloured by what became of its ops in the other plan (the same kernel,
// several kernels merged, a piece of a larger kernel, regrouped), panning or zooming one pane
// brings the other to the same ops, and a kernel picked in one is marked in the other. The
// other plan goes into the hash after a "~" (#h100/cost~h100/xla).
"use strict";

(() => {
  const root = document.getElementById("fusion-graph");
  if (!root) return;
  const otherRoot = document.getElementById("fusion-graph-b");
  const search = document.getElementById("fusion-search");
  const results = document.getElementById("fusion-results");
  const colourPicker = document.getElementById("fusion-colour");
  const legend = document.getElementById("fusion-legend");
  const sideBySide = document.getElementById("fusion-side-by-side");

  // Sizes in graph units (pixels at zoom 1).
  const BOX = { w: 210, h: 44 };          // a collapsed kernel
  const OP = { w: 176, h: 36 };           // an op inside a kernel, or a node outside all
  const GAP = { x: 44, y: 64 };           // between plan-level boxes
  const INNER = { x: 18, y: 30, pad: 12, head: 30 };
  // Text is never drawn smaller than this on screen: zoomed out, labels keep this size (the
  // title alone when a box is too short for two lines) and go only when a box is too small.
  const TEXT_MIN_PX = 11;
  const READABLE = 0.8;                   // the zoom a search result is shown at, at least
  // The zoom a graph opens at, at least: a plan-level op's title fits at TEXT_MIN_PX, and a
  // name of a dozen characters in its width.
  const OPEN_SCALE = 0.5;
  // A layer wider than this many boxes is folded onto several rows, as a long line of text
  // wraps (Graphviz's `unflatten` staggers wide layers for the same reason): a 48-tensor
  // optimizer step has 200 nodes side by side in one layer. At OPEN_SCALE a row of them is
  // about a full-width canvas.
  const ROW_BOXES = 9;
  const ROW_SPAN = ROW_BOXES * (BOX.w + GAP.x);
  // An edge across more layers than this (a backward pass reading a forward value) is drawn
  // faint, unless it touches the picked box: a training step has thousands.
  const LONG_EDGE = 6;
  const FONT = "system-ui, sans-serif";

  const LIMITER_COLOURS = {
    dram: "#3b6fd8", l2: "#6a8fe0", latency: "#d98c1f", fma: "#c2412d", alu: "#b8336a",
    xu: "#8e44ad", fp32: "#c2412d", fp64: "#7f1d1d", lsu: "#1f9e89", shfl: "#2c7a7b",
    conv: "#6b7280", library: "#4b5563", launch: "#a16207",
  };
  const CATEGORY_COLOURS = {
    elementwise: "#dbe7fb", reduction: "#fde2c4", "data movement": "#e3f2e1",
    "dot / conv": "#f6d5de", "parameter / constant": "#eceef2", other: "#f2f2f2",
  };
  // What became of a kernel's ops in the other plan of the side-by-side view (`relate`).
  const CHANGE_COLOURS = {
    same: "#e4e7ed", merged: "#b5e0bd", split: "#f8cf9c", regrouped: "#d5c4f0", alone: "#f4b4b4",
  };
  const CHANGE_LABELS = {
    same: "the same kernel there", merged: "merges kernels of the other plan",
    split: "a piece of a larger kernel there", regrouped: "regrouped (merged and split)",
    alone: "ops no kernel there computes",
  };
  const PARTNERS_LISTED = 6;   // kernels of the other plan named in the info panel
  const MOVEMENT = new Set(["broadcast", "reshape", "transpose", "slice", "concatenate", "pad",
    "bitcast", "copy", "gather", "scatter", "dynamic-slice", "dynamic-update-slice", "reverse",
    "iota", "get-tuple-element", "tuple"]);


  // -- a pane: one plan drawn on one canvas ---------------------------------------------------

  // `parts`: the pane's canvas, minimap, info panel, status line and device and strategy
  // pickers; `primary`: the page's main pane (its plan follows the page's tabs and the hash).
  function createPane(root, parts) {
    const { canvas, minimap, info, status, devicePicker, strategyPicker, primary } = parts;
    let data = null;            // the API's object for the plan shown
    let scene = null;           // boxes, ops and edges in graph units
    const expanded = new Set(); // kernel names drawn with their ops
    const view = { x: 0, y: 0, scale: 1 };
    let placed = false;         // the viewport was set once: plan switches keep it
    let picked = null;          // {type: "kernel"|"op"|"node", id, kernel}
    const selection = new Set(); // kernels chosen together (shift- or ctrl-click): an edit's
    let found = new Set();      // ids of boxes and ops matching the search
    let marked = new Set();     // kernels holding the ops of the kernel picked in the other pane
    let plan = null;            // "device/strategy" of the data
    let loading = 0;
    let pane = null;            // this pane's object (returned below), for the other pane
    let partner = null;         // the other pane while side by side, else null

    // -- the plan: fetched, then laid out in pixels --------------------------------------------

    async function load(device, strategy, kernel) {
      const ticket = ++loading;
      root.dataset.ready = "false";
      status.textContent = "loading the graph…";
      const query = new URLSearchParams();
      if (device) query.set("device", device);
      if (strategy) query.set("strategy", strategy);
      let response;
      try {
        response = await fetch(`${root.dataset.graphUrl}?${query}`,
                               { headers: { Accept: "application/json" } });
      } catch (error) {
        status.textContent = "the graph could not be loaded (network error)";
        return;
      }
      const body = await response.json().catch(() => ({}));
      if (ticket !== loading) return;       // a later plan was asked for meanwhile
      if (!response.ok) {
        status.textContent = `the graph cannot be shown: ${body.error || response.status}`;
        return;
      }
      show(body, kernel);
    }

    // Draws a plan's object (the graph API's, or an edited plan's from the what-if:
    // plan_edit.js), keeping the viewport.
    function show(body, kernel) {
      data = body;
      selection.clear();
      plan = `${data.device}/${data.strategy}`;
      devicePicker.value = data.device;
      strategyPicker.value = data.strategy;
      index();
      layout();
      if (!placed) { place(); placed = true; }
      status.textContent = `${data.strategy}${data.edited ? " (edited)" : ""} on ` +
        `${data.device}: ${data.kernels.length} kernels, ${data.nodes.length} nodes`;
      found = matching(search.value);
      marked = new Set();
      if (primary) showResults();
      if (partner) { relate(); partner.relate(); }
      if (primary) drawLegend();
      if (kernel && data.kernelIndex.has(kernel)) pick({ type: "kernel", id: kernel }, true);
      else if (picked) pick(null);
      draw();
      // Side by side, the other pane keeps to the main one's ops.
      if (partner && partner.ready()) { if (primary) partner.meet(pane); else meet(partner); }
      root.dataset.device = data.device;
      root.dataset.strategy = data.strategy;
      root.dataset.edited = data.edited ? "true" : "false";
      root.dataset.ready = "true";
      if (!root.dataset.readyMs) root.dataset.readyMs = String(Math.round(performance.now()));
    }

    function index() {
      data.nodeIndex = new Map(data.nodes.map((node) => [node.id, node]));
      data.kernelIndex = new Map(data.kernels.map((kernel) => [kernel.name, kernel]));
      data.owned = new Map(data.kernels.map((kernel) => [kernel.name, []]));
      for (const node of data.nodes) if (node.kernel) data.owned.get(node.kernel).push(node.id);
      data.spans = {};
      data.relations = null;
    }

    // Pixels from the server's layers and x positions: each box no nearer its left neighbour
    // than GAP.x, then each layer folded at ROW_SPAN onto as many rows as it needs (`fold`),
    // each row as tall as its tallest box.
    function layout() {
      const boxes = new Map();
      const rows = new Map();
      for (const entry of data.layout.top) {
        const size = boxSize(entry);
        const box = { id: entry.id, kernel: entry.kernel, layer: entry.layer, ux: entry.x,
                      w: size.w, h: size.h, x: 0, y: 0 };
        boxes.set(entry.id, box);
        if (!rows.has(entry.layer)) rows.set(entry.layer, []);
        rows.get(entry.layer).push(box);
      }
      let y = 0;
      let width = 0;
      for (let layer = 0; layer < data.layout.layers; layer += 1) {
        const row = (rows.get(layer) || []).sort((a, b) => a.ux - b.ux);
        let right = -GAP.x;
        for (const box of row) {
          box.x = Math.max(box.ux * (BOX.w + GAP.x), right + GAP.x);
          right = box.x + box.w;
        }
        for (const folded of fold(row)) {
          let height = 0;
          for (const box of folded) {
            box.y = y;
            height = Math.max(height, box.h);
            width = Math.max(width, box.x + box.w);
          }
          y += height + GAP.y;
        }
      }
      const ops = new Map();     // "kernel|node" -> rectangle of an op inside an expanded kernel
      for (const name of expanded) {
        const box = boxes.get(name);
        const inner = data.layout.inner[name];
        if (!box || !inner) continue;
        for (const [id, [ux, layer]] of Object.entries(inner.nodes)) {
          ops.set(`${name}|${id}`, {
            kernel: name, id, w: OP.w, h: OP.h, layer: box.layer,
            x: box.x + INNER.pad + ux * (OP.w + INNER.x),
            y: box.y + INNER.head + INNER.pad + layer * (OP.h + INNER.y),
          });
        }
      }
      scene = { boxes, ops, width, height: y, edges: edges(boxes, ops) };
    }

    // A laid-out layer (boxes left to right) on rows: each box moved left by whole ROW_SPANs
    // (so boxes one above the other before stay so after) onto the first row where it clears
    // the box before it; a layer narrower than ROW_SPAN stays one row, as it was.
    function fold(row) {
      const folded = [];
      for (const box of row) {
        box.x -= Math.floor(box.x / ROW_SPAN) * ROW_SPAN;
        const free = folded.find((boxes) => {
          const last = boxes[boxes.length - 1];
          return last.x + last.w + GAP.x <= box.x;
        });
        if (free) free.push(box); else folded.push([box]);
      }
      return folded;
    }

    function boxSize(entry) {
      if (!entry.kernel) return { w: OP.w, h: OP.h };
      const inner = data.layout.inner[entry.id];
      if (!expanded.has(entry.id) || !inner) return BOX;
      return {
        w: Math.max(BOX.w, 2 * INNER.pad + inner.width * (OP.w + INNER.x) - INNER.x),
        h: INNER.head + 2 * INNER.pad + inner.layers * (OP.h + INNER.y) - INNER.y,
      };
    }

    // Each value a node reads, from where it is drawn to where it is read: between two ops of
    // one expanded kernel (on chip), or from the box or op that writes it to the box or op that
    // reads it (through memory). Edges between the same two collapsed boxes are drawn once.
    function edges(boxes, ops) {
      const list = [];
      const seen = new Set();
      data.edges.forEach(([source, target], i) => {
        const node = data.nodeIndex.get(target);
        const readers = node.kernel ? [node.kernel, ...node.also_in] : node.also_in;
        if (!readers.length && boxes.has(target)) readers.push(null);
        for (const kernel of readers) {
          const inner = kernel && data.layout.inner[kernel];
          const onChip = inner && source in inner.nodes;
          let from;
          let to;
          if (onChip) {
            if (!expanded.has(kernel)) continue;
            from = ops.get(`${kernel}|${source}`);
          } else {
            const writer = data.nodeIndex.get(source).kernel || source;
            from = ops.get(`${writer}|${source}`) || boxes.get(writer);
          }
          to = kernel ? (ops.get(`${kernel}|${target}`) || boxes.get(kernel)) : boxes.get(target);
          if (!from || !to || from === to) continue;
          const key = `${from.kernel || from.id}|${from.id}>${to.kernel || to.id}|${to.id}`;
          if (seen.has(key)) continue;
          seen.add(key);
          list.push({ from, to, chip: onChip, memory: Boolean(data.dram[i]),
                      long: to.layer - from.layer > LONG_EDGE,
                      ends: [from.kernel || from.id, to.kernel || to.id] });
        }
      });
      return list;
    }

    // -- drawing --------------------------------------------------------------------------------

    function size() {
      const ratio = window.devicePixelRatio || 1;
      const width = canvas.clientWidth;
      const height = canvas.clientHeight;
      if (canvas.width !== Math.round(width * ratio)) canvas.width = Math.round(width * ratio);
      if (canvas.height !== Math.round(height * ratio)) canvas.height = Math.round(height * ratio);
      return { width, height, ratio };
    }

    function draw() {
      if (!scene) return;
      const { width, height, ratio } = size();
      const context = canvas.getContext("2d");
      context.setTransform(ratio, 0, 0, ratio, 0, 0);
      context.clearRect(0, 0, width, height);
      context.setTransform(ratio * view.scale, 0, 0, ratio * view.scale,
                           -view.x * view.scale * ratio, -view.y * view.scale * ratio);
      const seen = { x0: view.x, y0: view.y, x1: view.x + width / view.scale,
                     y1: view.y + height / view.scale };
      const visible = (r) => r.x < seen.x1 && r.x + r.w > seen.x0 && r.y < seen.y1 &&
        r.y + r.h > seen.y0;
      drawEdges(context, seen);
      for (const box of scene.boxes.values()) {
        if (visible(box)) drawBox(context, box);
      }
      for (const op of scene.ops.values()) {
        if (visible(op)) drawOp(context, op);
      }
      drawMinimap();
    }

    function drawEdges(context, seen) {
      const focus = picked ? (picked.type === "op" ? picked.kernel : picked.id) : null;
      const touches = (e) => focus !== null && (e.ends[0] === focus || e.ends[1] === focus);
      const styles = [
        { pick: (e) => e.long && !touches(e), colour: "rgba(86, 96, 122, 0.10)", dash: [],
          width: 0.8 },
        { pick: (e) => e.chip, colour: "#1f9e89", dash: [5, 4], width: 1.2 },
        { pick: (e) => !e.chip && e.memory && !e.long && !touches(e), colour: "#56607a",
          dash: [], width: 1.4 },
        { pick: (e) => !e.chip && !e.memory && !e.long && !touches(e), colour: "#a7aebd",
          dash: [2, 3], width: 1 },
        { pick: (e) => !e.chip && touches(e), colour: "#d62728", dash: [], width: 2 },
      ];
      for (const style of styles) {
        context.beginPath();
        for (const edge of scene.edges) {
          if (!style.pick(edge)) continue;
          const x1 = edge.from.x + edge.from.w / 2;
          const y1 = edge.from.y + edge.from.h;
          const x2 = edge.to.x + edge.to.w / 2;
          const y2 = edge.to.y;
          if (Math.max(x1, x2) < seen.x0 || Math.min(x1, x2) > seen.x1 ||
              Math.max(y1, y2) < seen.y0 || Math.min(y1, y2) > seen.y1) continue;
          const bend = Math.max(20, (y2 - y1) / 2);
          context.moveTo(x1, y1);
          context.bezierCurveTo(x1, y1 + bend, x2, y2 - bend, x2, y2);
        }
        context.strokeStyle = style.colour;
        context.lineWidth = style.width / Math.max(view.scale, 0.25);
        context.setLineDash(style.dash);
        context.stroke();
      }
      context.setLineDash([]);
    }

    function drawBox(context, box) {
      const isPicked = picked && picked.type !== "op" && picked.id === box.id;
      if (!box.kernel) {   // a parameter, a constant, a tuple: no kernel computes it
        const node = data.nodeIndex.get(box.id);
        roundRect(context, box, 14);
        context.fillStyle = colourPicker.value === "category" ? CATEGORY_COLOURS[category(node)]
          : "#eef0f4";
        context.fill();
        outline(context, isPicked, found.has(box.id), "#b8bfcc");
        // Its name first: in an optimizer step, hundreds of boxes are "parameter".
        label(context, box, node.id, `${node.op} · ${shapeText(node)}`);
        return;
      }
      const kernel = data.kernelIndex.get(box.id);
      const open = expanded.has(box.id);
      roundRect(context, box, 6);
      context.fillStyle = open ? "#fbfcfe" : kernelColour(kernel);
      context.fill();
      if (open) {
        context.fillStyle = kernelColour(kernel);
        context.fillRect(box.x, box.y, box.w, INNER.head);
      }
      outline(context, isPicked, found.has(box.id) || (marked.has(box.id) && "marked")
              || (selection.has(box.id) && "selected"), "#7d869a");
      const title = `${open ? "−" : "+"} ${kernel.name}`;
      const figures = [kernel.kind, time(kernel.proj_us), kernel.limiter].filter(Boolean)
        .join(" · ");
      if (!open) { label(context, box, title, figures, 13); return; }
      // Open: the name left and the figures right in the head, above the kernel's ops.
      const head = { x: box.x, y: box.y, w: box.w / 2, h: INNER.head };
      if (label(context, head, title, null, 13)) {
        context.textAlign = "right";
        label(context, { ...head, x: box.x + box.w / 2 }, figures, null, 12, box.w / 2 - 14);
        context.textAlign = "left";
      }
    }

    function drawOp(context, op, text) {
      const node = data.nodeIndex.get(op.id);
      const recomputed = node.kernel !== op.kernel;
      roundRect(context, op, 4);
      context.fillStyle = colourPicker.value === "category" ? CATEGORY_COLOURS[category(node)]
        : "white";
      context.fill();
      if (recomputed) context.setLineDash([4, 3]);
      const isPicked = picked && picked.type === "op" && picked.id === op.id &&
        picked.kernel === op.kernel;
      outline(context, isPicked, found.has(op.id), recomputed ? "#d98c1f" : "#9aa3b5");
      context.setLineDash([]);
      label(context, op, `${recomputed ? "↻ " : ""}${node.op}`, shapeText(node));
    }

    // A box's title (bold) and detail, centred in `r`, each `size` graph pixels or, zoomed out,
    // TEXT_MIN_PX on screen; the detail goes first when `r` is too short for both, then the
    // title. With textAlign "right", at `r`'s right edge. Returns whether anything was drawn.
    function label(context, r, title, detail, size = 12, width = r.w - 14) {
      const font = Math.max(size, TEXT_MIN_PX / view.scale);
      const line = font * 1.25;
      const detailFont = Math.max(size - 1, TEXT_MIN_PX / view.scale);
      const lines = detail && 2 * line <= r.h ? 2 : line <= r.h ? 1 : 0;
      if (!lines) return false;
      const x = context.textAlign === "right" ? r.x + r.w - 7 : r.x + 7;
      const top = r.y + r.h / 2 - (lines * line) / 2 + line / 2;
      context.textBaseline = "middle";
      context.fillStyle = "#1d2330";
      context.font = `600 ${font}px ${FONT}`;
      context.fillText(clip(context, title, width), x, top);
      if (lines === 2) {
        context.font = `${detailFont}px ${FONT}`;
        context.fillStyle = "#555e70";
        context.fillText(clip(context, detail, width), x, top + line);
      }
      return true;
    }

    // `isFound`: true for a search result, "marked" for a kernel holding ops of the kernel
    // picked in the other pane, "selected" for one of the kernels chosen for an edit.
    function outline(context, isPicked, isFound, colour) {
      context.lineWidth = (isPicked || isFound ? 3 : 1) / Math.max(view.scale, 0.25);
      context.strokeStyle = isPicked ? "#d62728" : isFound === "marked" ? "#7b3fc4"
        : isFound === "selected" ? "#15803d" : isFound ? "#f2b705" : colour;
      context.stroke();
    }

    function roundRect(context, r, radius) {
      context.beginPath();
      context.roundRect(r.x, r.y, r.w, r.h, radius);
    }

    function clip(context, value, width) {
      const textValue = String(value);
      if (context.measureText(textValue).width <= width) return textValue;
      let end = textValue.length;
      while (end > 1 && context.measureText(`${textValue.slice(0, end)}…`).width > width) end -= 1;
      return `${textValue.slice(0, end)}…`;
    }

    function shapeText(node) {
      if (!node.shape) return node.dtype;
      return `${node.dtype}[${node.shape.join(",")}]`;
    }

    function time(us) {
      if (us === null || us === undefined) return null;
      return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(us < 10 ? 2 : 1)} µs`;
    }

    function category(node) {
      if (node.op === "parameter" || node.op === "constant") return "parameter / constant";
      if (node.op.startsWith("reduce") || node.op === "reduce-window") return "reduction";
      if (["dot", "convolution", "dot_general", "conv"].includes(node.op)) return "dot / conv";
      if (MOVEMENT.has(node.op)) return "data movement";
      if (/^[a-z_-]+$/.test(node.op)) return "elementwise";
      return "other";
    }

    // -- colours of the kernels (the overlay) ---------------------------------------------------

    // A ramp from light to dark blue for times, on a log scale over the plan's kernels.
    const RAMP = ["#eef3fc", "#cddcf7", "#9dbbef", "#6a95e2", "#3b6fd8", "#2a4f9e"];

    function kernelColour(kernel) {
      const mode = colourPicker.value;
      if (mode === "change") {
        const relation = data.relations && data.relations.get(kernel.name);
        return relation ? CHANGE_COLOURS[relation.kind] : "#f4f5f8";
      }
      if (mode === "limiter") return tint(LIMITER_COLOURS[kernel.limiter] || "#9aa3b5");
      if (mode === "category") return "#f4f5f8";
      if (mode === "error") {
        // Device work against device work where the plan has it (a kernel timed alone carries
        // a lone launch the plan's projection does not); a run compiled before, as it was.
        const [measured, projected] = kernel.device_us === null || kernel.device_us === undefined
          ? [kernel.measured_us, kernel.proj_us]
          : [kernel.measured_device_us, kernel.device_us];
        if (!measured || !projected) return "#eceef2";
        const ratio = Math.log2(measured / projected);  // > 0: slower than projected
        const strength = Math.min(1, Math.abs(ratio) / 2);
        return mix(ratio > 0 ? [214, 39, 40] : [59, 111, 216], strength);
      }
      const figure = mode === "measured" ? "measured_us" : "proj_us";
      const value = kernel[figure];
      if (!value) return "#eceef2";
      const [low, high] = span(figure);
      const step = high > low ? (Math.log(value) - low) / (high - low) : 0.5;
      return RAMP[Math.min(RAMP.length - 1, Math.floor(step * RAMP.length))];
    }

    // The log range of a figure over the plan's kernels, worked out once per plan: every box
    // drawn (and the minimap's, on every pan) asks for it.
    function span(figure) {
      if (!data.spans[figure]) {
        const values = data.kernels.map((k) => k[figure]).filter((v) => v > 0).map(Math.log);
        data.spans[figure] = values.length ? [Math.min(...values), Math.max(...values)] : [0, 0];
      }
      return data.spans[figure];
    }

    function tint(hex) {
      const value = parseInt(hex.slice(1), 16);
      return mix([(value >> 16) & 255, (value >> 8) & 255, value & 255], 0.45);
    }

    function mix(rgb, strength) {   // `strength` of the colour over white
      const channel = (c) => Math.round(255 + (c - 255) * strength);
      return `rgb(${channel(rgb[0])}, ${channel(rgb[1])}, ${channel(rgb[2])})`;
    }

    function drawLegend() {
      const mode = colourPicker.value;
      const items = [];
      if (mode === "limiter") {
        const used = new Set(data.kernels.map((k) => k.limiter).filter(Boolean));
        for (const limiter of used) items.push([tint(LIMITER_COLOURS[limiter] || "#9aa3b5"), limiter]);
      } else if (mode === "category") {
        for (const [name, colour] of Object.entries(CATEGORY_COLOURS)) items.push([colour, name]);
      } else if (mode === "change") {
        for (const [kind, colour] of Object.entries(CHANGE_COLOURS)) {
          items.push([colour, CHANGE_LABELS[kind]]);
        }
      } else if (mode === "error") {
        items.push([mix([59, 111, 216], 1), "4x faster than projected"],
                   [mix([214, 39, 40], 1), "4x slower than projected"],
                   ["#eceef2", "not measured"]);
      } else {
        const figure = mode === "measured" ? "measured_us" : "proj_us";
        const [low, high] = span(figure);
        if (high > low || low) {
          items.push([RAMP[0], time(Math.exp(low))], [RAMP[RAMP.length - 1], time(Math.exp(high))]);
        }
        if (data.kernels.some((k) => !k[figure])) items.push(["#eceef2", "not known"]);
      }
      items.push(["edge-memory", "through memory"], ["edge-chip", "on chip"],
                 ["edge-picked", "to and from the picked kernel"],
                 ["recomputed", "↻ recomputed here"]);
      legend.replaceChildren(...items.map(([colour, text]) => {
        const item = document.createElement("li");
        const swatch = document.createElement("span");
        swatch.className = colour.startsWith("#") || colour.startsWith("rgb")
          ? "fusion__swatch" : `fusion__swatch fusion__swatch--${colour}`;
        if (swatch.className === "fusion__swatch") swatch.style.background = colour;
        item.append(swatch, document.createTextNode(text));
        return item;
      }));
    }

    // -- the minimap ----------------------------------------------------------------------------

    function drawMinimap() {
      const ratio = window.devicePixelRatio || 1;
      const width = minimap.clientWidth;
      const height = minimap.clientHeight;
      minimap.width = Math.round(width * ratio);
      minimap.height = Math.round(height * ratio);
      const context = minimap.getContext("2d");
      const scale = Math.min(width / Math.max(scene.width, 1), height / Math.max(scene.height, 1));
      minimap.dataset.scale = String(scale);
      context.setTransform(ratio * scale, 0, 0, ratio * scale, 0, 0);
      for (const box of scene.boxes.values()) {
        context.fillStyle = box.kernel ? kernelColour(data.kernelIndex.get(box.id)) : "#d5d9e1";
        context.fillRect(box.x, box.y, Math.max(box.w, 2 / scale), Math.max(box.h, 2 / scale));
      }
      const shown = size();
      context.strokeStyle = "#d62728";
      context.lineWidth = 2 / scale;
      context.strokeRect(view.x, view.y, shown.width / view.scale, shown.height / view.scale);
    }

    function minimapTo(event) {
      const scale = Number(minimap.dataset.scale) || 1;
      const rect = minimap.getBoundingClientRect();
      const shown = size();
      centreOn((event.clientX - rect.left) / scale, (event.clientY - rect.top) / scale, shown);
    }

    // -- moving around --------------------------------------------------------------------------

    // The whole graph on the canvas, centred, at a zoom no larger than 1 and, when `least` is
    // given, no smaller than it: then a graph too big to show whole at that zoom is shown from
    // its top left (where data flow starts), filling the canvas.
    function fitContent(least = 0) {
      const shown = size();
      const margin = 20;
      const whole = Math.min((shown.width - 2 * margin) / Math.max(scene.width, 1),
                             (shown.height - 2 * margin) / Math.max(scene.height, 1));
      view.scale = Math.max(least, Math.min(1, whole));
      const across = shown.width / view.scale;
      const down = shown.height / view.scale;
      view.x = across >= scene.width ? (scene.width - across) / 2 : -margin / view.scale;
      view.y = down >= scene.height ? (scene.height - down) / 2 : -margin / view.scale;
    }

    // Where a plan opens: fitted, at a zoom where its labels can be read.
    function place() { fitContent(OPEN_SCALE); }

    function centreOn(x, y, shown = size()) {
      view.x = x - shown.width / view.scale / 2;
      view.y = y - shown.height / view.scale / 2;
      draw();
    }

    // The screen point the zoom buttons zoom about: the picked box's middle while it is on
    // screen, else the point of the graph nearest the canvas's middle, so that zooming in
    // never leaves an empty canvas.
    function zoomAnchor() {
      const shown = size();
      const r = picked && (picked.type === "op" ? scene.ops.get(`${picked.kernel}|${picked.id}`)
        : scene.boxes.get(picked.id));
      if (r) {
        const sx = (r.x + r.w / 2 - view.x) * view.scale;
        const sy = (r.y + r.h / 2 - view.y) * view.scale;
        if (sx >= 0 && sx <= shown.width && sy >= 0 && sy <= shown.height) return { sx, sy };
      }
      const clamp = (value, low, high) => Math.min(Math.max(value, low), high);
      const x = clamp(view.x + shown.width / view.scale / 2, 0, scene.width);
      const y = clamp(view.y + shown.height / view.scale / 2, 0, scene.height);
      return { sx: (x - view.x) * view.scale, sy: (y - view.y) * view.scale };
    }

    function zoomAt(factor, screenX, screenY) {
      const scale = Math.min(3, Math.max(0.02, view.scale * factor));
      view.x += screenX / view.scale - screenX / scale;
      view.y += screenY / view.scale - screenY / scale;
      view.scale = scale;
      draw();
    }

    function at(event) {
      const rect = canvas.getBoundingClientRect();
      const sx = event.clientX - rect.left;
      const sy = event.clientY - rect.top;
      return { sx, sy, x: view.x + sx / view.scale, y: view.y + sy / view.scale };
    }

    function hit(point) {
      const inside = (r) => point.x >= r.x && point.x <= r.x + r.w && point.y >= r.y &&
        point.y <= r.y + r.h;
      for (const op of scene.ops.values()) if (inside(op)) return { type: "op", ...op };
      for (const box of scene.boxes.values()) {
        if (inside(box)) return { type: box.kernel ? "kernel" : "node", id: box.id };
      }
      return null;
    }

    // -- the hover card: what is under the pointer, without picking it ---------------------

    const hover = document.createElement("div");
    hover.className = "fusion__hover";
    hover.hidden = true;
    root.append(hover);
    let hovered = null;   // the last pointer event, handled on the next frame

    function hoverAt(event) {
      if (!hovered) window.requestAnimationFrame(showHover);
      hovered = event;
    }

    function showHover() {
      const event = hovered;
      hovered = null;
      const target = event && scene ? hit(at(event)) : null;
      hover.hidden = !target;
      if (!target) return;
      hover.replaceChildren(...hoverLines(target).map((text, index) => {
        const line = document.createElement(index ? "p" : "h5");
        line.textContent = text;
        return line;
      }));
      // Beside the pointer, kept inside the pane.
      const stage = root.getBoundingClientRect();
      const x = event.clientX - stage.left + 14;
      const y = event.clientY - stage.top + 14;
      hover.style.left = `${Math.min(x, stage.width - hover.offsetWidth - 6)}px`;
      hover.style.top = `${y + hover.offsetHeight > stage.height ? y - hover.offsetHeight - 24
        : y}px`;
    }

    function hoverLines(target) {
      if (target.type === "kernel") {
        const kernel = data.kernelIndex.get(target.id);
        return [kernel.name, `${kernel.kind}: ${kernel.nodes} ops` +
                  (kernel.recomputed ? `, ${kernel.recomputed} recomputed` : ""),
                `projected ${time(kernel.proj_us) || "–"} · measured ` +
                  `${time(kernel.measured_us) || "–"}`,
                ...(kernel.limiter ? [`limiter: ${kernel.limiter}`] : [])];
      }
      const node = data.nodeIndex.get(target.id);
      const where = target.type === "op"
        ? `${node.kernel === target.kernel ? "" : "recomputed "}in ${target.kernel}`
        : "no kernel computes it: read from memory";
      return [node.id, `${node.op} · ${shapeText(node)}`, where];
    }

    // -- picking: the info panel, the URL -------------------------------------------------------

    // Shift- or ctrl-click adds a kernel to the selection (or takes it out); a plain click
    // makes the picked kernel the only one. plan_edit.js hears of both ("fusion:pick").
    function select(target, adding) {
      if (!adding) selection.clear();
      if (target && target.type === "kernel") {
        if (adding && selection.has(target.id)) selection.delete(target.id);
        else selection.add(target.id);
      }
    }

    function pick(target, centre = false) {
      picked = target ? { type: target.type, id: target.id, kernel: target.kernel } : null;
      root.dispatchEvent(new CustomEvent("fusion:pick", {
        detail: { picked, selection: [...selection] } }));
      info.hidden = !picked;
      if (picked) info.replaceChildren(...details(picked));
      writeHash();
      if (partner) partner.mark(pickedOps());
      if (picked && centre) {
        const r = picked.type === "op" ? scene.ops.get(`${picked.kernel}|${picked.id}`)
          : scene.boxes.get(picked.id);
        view.scale = Math.max(view.scale, READABLE);
        if (r) centreOn(r.x + r.w / 2, r.y + r.h / 2);
        moved();
      }
      draw();
    }

    function details(target) {
      const parts = [];
      const heading = document.createElement("h4");
      const line = (text) => {
        const p = document.createElement("p");
        p.textContent = text;
        parts.push(p);
        return p;
      };
      const link = (text, href) => {
        const a = document.createElement("a");
        a.href = href;
        a.textContent = text;
        const p = document.createElement("p");
        p.append(a);
        parts.push(p);
        return a;
      };
      parts.push(heading);
      if (target.type === "kernel") {
        const kernel = data.kernelIndex.get(target.id);
        heading.textContent = kernel.name;
        if (kernel.xla_name) line(`XLA:GPU's kernel: ${kernel.xla_name}`);
        line(`${kernel.kind}${kernel.schedule ? `, ${kernel.schedule}` : ""}: ` +
             `${kernel.nodes} ops${kernel.recomputed ? `, ${kernel.recomputed} recomputed` : ""}`);
        line(`projected ${time(kernel.proj_us) || "–"}` +
             (kernel.launch_us === null || kernel.launch_us === undefined ? "" :
              ` (device ${time(kernel.device_us)}, launch ${time(kernel.launch_us)})`) +
             ` · SOL ${time(kernel.sol_us) || "–"} · measured ${time(kernel.measured_us) || "–"}`);
        if (kernel.limiter) line(`limiter: ${kernel.limiter}`);
        if (kernel.outlier_reason) line(kernel.outlier_reason);
        const relation = partner && data.relations && data.relations.get(kernel.name);
        if (relation) {
          const names = relation.partners.slice(0, PARTNERS_LISTED).join(", ") +
            (relation.partners.length > PARTNERS_LISTED
              ? ` and ${relation.partners.length - PARTNERS_LISTED} more` : "");
          line(`in ${partner.plan()}: ${CHANGE_LABELS[relation.kind]}` +
               `${relation.partners.length ? ` (${names})` : ""}`)
            .className = `fusion__change fusion__change--${relation.kind}`;
        }
        // An edited plan's kernels have no page yet: the edit panel shows their CUDA.
        if (!data.edited) {
          link("open the kernel page", kernelUrl(kernel.name)).className = "fusion__kernel-link";
        }
        const toggle = document.createElement("button");
        toggle.type = "button";
        toggle.className = "button button--small";
        toggle.textContent = expanded.has(kernel.name) ? "Collapse" : "Expand its ops";
        toggle.addEventListener("click", () => toggleKernel(kernel.name));
        parts.push(toggle);
        return parts;
      }
      const node = data.nodeIndex.get(target.id);
      heading.textContent = node.id;
      line(`${node.op} · ${shapeText(node)}`);
      const kernels = [node.kernel, ...node.also_in].filter(Boolean);
      line(kernels.length ? `computed in ${kernels.join(", ")}${node.also_in.length
        ? ` (recomputed in ${node.also_in.join(", ")})` : ""}` : "read from memory: no kernel " +
        "computes it");
      if (node.line) {
        link(`source line ${node.line}`, `${root.dataset.sourceUrl}#L${node.line}`)
          .className = "fusion__source-link";
      }
      const kernel = target.kernel || node.kernel;
      if (kernel && !data.edited) {
        link(`its CUDA lines in ${kernel}`, `${kernelUrl(kernel)}#node=${encodeURIComponent(node.id)}`)
          .className = "fusion__cuda-link";
      }
      return parts;
    }

    function kernelUrl(name) {
      const [device, strategy] = plan.split("/");
      return root.dataset.kernelUrl.replace("DEVICE", device).replace("STRATEGY", strategy)
        .replace("KERNEL", encodeURIComponent(name));
    }

    function toggleKernel(name, open = !expanded.has(name)) {
      const box = scene.boxes.get(name);
      const anchor = box ? { x: box.x, y: box.y } : null;
      if (open) expanded.add(name); else expanded.delete(name);
      layout();
      const moved = scene.boxes.get(name);
      if (anchor && moved) {   // the kernel stays where it was on screen
        view.x += moved.x - anchor.x;
        view.y += moved.y - anchor.y;
      }
      if (picked) info.replaceChildren(...details(picked));
      draw();
    }

    // -- search ---------------------------------------------------------------------------------

    function matching(text) {
      const query = text.trim().toLowerCase();
      const ids = new Set();
      if (!query || !data) return ids;
      for (const kernel of data.kernels) {
        // XLA:GPU's own name for the kernel too (fusion.276), in its plan.
        const xlaName = (kernel.xla_name || "").toLowerCase();
        if (kernel.name.toLowerCase().includes(query) || kernel.kind.toLowerCase() === query
            || xlaName.includes(query)) {
          ids.add(kernel.name);
        }
      }
      for (const node of data.nodes) {
        if (node.id.toLowerCase().includes(query) || node.op.toLowerCase() === query) {
          ids.add(node.id);
        }
      }
      return ids;
    }

    function showResults() {
      const shown = [...found].slice(0, 50);
      results.hidden = !search.value.trim();
      const items = shown.map((id) => {
        const item = document.createElement("li");
        const button = document.createElement("button");
        button.type = "button";
        button.className = "link-button";
        const kernel = data.kernelIndex.get(id);
        const node = data.nodeIndex.get(id);
        const xla = kernel && kernel.xla_name ? ` (XLA: ${kernel.xla_name})` : "";
        button.textContent = kernel ? `${id} — kernel, ${kernel.kind}${xla}`
          : `${id} — ${node.op}${node.kernel ? ` in ${node.kernel}` : ""}`;
        button.addEventListener("click", () => { results.hidden = true; goTo(id); });
        item.append(button);
        return item;
      });
      if (!shown.length && search.value.trim()) {
        const item = document.createElement("li");
        item.textContent = "nothing matches";
        items.push(item);
      } else if (found.size > shown.length) {
        const item = document.createElement("li");
        item.className = "muted";
        item.textContent = `and ${found.size - shown.length} more`;
        items.push(item);
      }
      results.replaceChildren(...items);
    }

    function goTo(id) {
      if (data.kernelIndex.has(id)) return pick({ type: "kernel", id }, true);
      const node = data.nodeIndex.get(id);
      const kernel = node.kernel || node.also_in[0];
      if (!kernel) return pick({ type: "node", id }, true);
      if (!expanded.has(kernel)) toggleKernel(kernel, true);
      return pick({ type: "op", id, kernel }, true);
    }

    // -- side by side: what the other pane's plan made of these ops ------------------------

    function relate() {
      const other = partner && partner.data();
      if (data) data.relations = other ? relations(data, other) : null;
    }

    // Mark the kernels that compute `ids` (ops of the kernel picked in the other pane).
    function mark(ids) {
      if (!data) return;
      marked = new Set(ids.map((id) => data.nodeIndex.get(id)).filter((n) => n && n.kernel)
        .map((n) => n.kernel));
      draw();
    }

    // Where node `id` is drawn: as an op of its expanded kernel, in its kernel's box, or as a
    // box of its own.
    function where(id) {
      const node = data.nodeIndex.get(id);
      if (!node) return null;
      const kernel = node.kernel || node.also_in[0];
      if (kernel) return scene.ops.get(`${kernel}|${id}`) || scene.boxes.get(kernel);
      return scene.boxes.get(id) || null;
    }

    // The node drawn nearest the middle of the canvas (a collapsed kernel stands for its
    // first op).
    function centreNode() {
      if (!scene) return null;
      const shown = size();
      const cx = view.x + shown.width / view.scale / 2;
      const cy = view.y + shown.height / view.scale / 2;
      let best = null;
      let distance = Infinity;
      const consider = (r, id) => {
        const d = Math.hypot(r.x + r.w / 2 - cx, r.y + r.h / 2 - cy);
        if (id && d < distance) { best = id; distance = d; }
      };
      for (const op of scene.ops.values()) consider(op, op.id);
      for (const box of scene.boxes.values()) {
        if (!box.kernel) consider(box, box.id);
        else if (!expanded.has(box.id)) consider(box, (data.owned.get(box.id) || [])[0]);
      }
      return best;
    }

    // The ops of the picked kernel, or the picked op or node alone.
    function pickedOps() {
      if (!picked) return [];
      return picked.type === "kernel" ? data.owned.get(picked.id) : [picked.id];
    }

    // Shown beside `other` (it was there first): on the kernels here that compute the ops of
    // the kernel picked there, marked, all in view; with nothing picked there, on its ops.
    function meet(other) {
      if (!scene) return;
      mark(other.pickedOps());
      const boxes = [...marked].map((name) => scene.boxes.get(name)).filter(Boolean);
      if (!boxes.length) { follow(other); return; }
      const left = Math.min(...boxes.map((r) => r.x));
      const top = Math.min(...boxes.map((r) => r.y));
      const right = Math.max(...boxes.map((r) => r.x + r.w));
      const bottom = Math.max(...boxes.map((r) => r.y + r.h));
      const shown = size();
      // A margin for the pane's own pickers over its top.
      view.scale = Math.min(other.viewport().scale, 0.8 * shown.width / (right - left),
                            0.8 * shown.height / (bottom - top));
      centreOn((left + right) / 2, (top + bottom) / 2, shown);
    }

    // Bring this pane to the node in the middle of `other`'s canvas, at its zoom.
    function follow(other) {
      const id = other.centreNode();
      if (!scene || !id) return;
      const r = where(id);
      if (!r) return;
      view.scale = other.viewport().scale;
      centreOn(r.x + r.w / 2, r.y + r.h / 2);
    }

    // The user moved this pane: the other one follows, once per frame (16 ms) at most.
    let following = false;
    function moved() {
      if (!partner || following) return;
      following = true;
      window.setTimeout(() => {
        following = false;
        if (partner) partner.follow(pane);
      }, 16);
    }

    // -- events on the canvas and the minimap ---------------------------------------------

    let drag = null;
    canvas.addEventListener("pointerdown", (event) => {
      drag = { sx: event.clientX, sy: event.clientY, x: view.x, y: view.y, moved: false };
      canvas.setPointerCapture(event.pointerId);
      hover.hidden = true;
    });
    canvas.addEventListener("pointermove", (event) => {
      if (!drag) { hoverAt(event); return; }
      const dx = event.clientX - drag.sx;
      const dy = event.clientY - drag.sy;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (!drag.moved) return;
      view.x = drag.x - dx / view.scale;
      view.y = drag.y - dy / view.scale;
      draw();
      moved();
    });
    canvas.addEventListener("pointerup", (event) => {
      const wasDrag = drag && drag.moved;
      drag = null;
      if (wasDrag || !scene) return;
      const target = hit(at(event));
      select(target, event.shiftKey || event.ctrlKey || event.metaKey);
      pick(target);
    });
    canvas.addEventListener("dblclick", (event) => {
      const target = hit(at(event));
      if (target && target.type === "kernel") toggleKernel(target.id);
    });
    canvas.addEventListener("pointerleave", () => { hovered = null; hover.hidden = true; });
    canvas.addEventListener("wheel", (event) => {
      event.preventDefault();
      const point = at(event);
      zoomAt(Math.exp(-event.deltaY * 0.0015), point.sx, point.sy);
      moved();
    }, { passive: false });
    minimap.addEventListener("pointerdown", (event) => {
      minimapTo(event);
      moved();
      minimap.setPointerCapture(event.pointerId);
      const move = (e) => { minimapTo(e); moved(); };
      minimap.addEventListener("pointermove", move);
      minimap.addEventListener("pointerup", () => minimap.removeEventListener("pointermove", move),
                               { once: true });
    });

    // For scripts and tests: where a kernel, node or op is on screen (CSS pixels from the
    // canvas's corner), and the view's state.
    root.fusionView = {
      locate(id, kernel = null) {
        const r = kernel ? scene.ops.get(`${kernel}|${id}`) : scene.boxes.get(id);
        if (!r) return null;
        return { x: (r.x - view.x) * view.scale, y: (r.y - view.y) * view.scale,
                 w: r.w * view.scale, h: r.h * view.scale };
      },
      viewport: () => ({ ...view }),
      expanded: () => [...expanded],
      picked: () => (picked ? { ...picked } : null),
      found: () => [...found],
      marked: () => [...marked],
      centreNode,
      relation: (name) => {
        const relation = data && data.relations && data.relations.get(name);
        return relation ? { kind: relation.kind, partners: [...relation.partners] } : null;
      },
    };

    pane = {
      load, show, draw, follow, meet, mark, centreNode, goTo, pickedOps,
      selection: () => [...selection],
      ready: () => Boolean(scene),
      data: () => data,
      plan: () => plan,
      picked: () => picked,
      viewport: () => ({ ...view }),
      setPartner(other) {
        partner = other;
        marked = new Set();
        relate();
        if (primary && data) drawLegend();
        draw();
      },
      relate() {
        relate();
        if (primary && data) drawLegend();
        draw();
      },
      legend() { if (data) drawLegend(); },
      search(text) {
        found = matching(text);
        if (primary) showResults();
        draw();
      },
      first: () => [...found][0],
      zoom(factor) {
        if (!scene) return;
        const anchor = zoomAnchor();
        zoomAt(factor, anchor.sx, anchor.sy);
        moved();
      },
      fit() {
        if (!scene) return;
        fitContent();
        draw();
        moved();
      },
      collapse() {
        expanded.clear();
        if (!data) return;
        layout();
        draw();
      },
    };
    root.fusionPane = pane;
    return pane;
  }

  // Each kernel of `mine` (a plan's API object) against the kernels of `theirs` that compute
  // its ops: {kind, partners}. "same": one kernel there computes exactly these ops; "merged":
  // one kernel here computes what several do there; "split": these ops are a part of a larger
  // kernel there; "regrouped": both; "alone": no kernel there computes them. Ops computed
  // by no kernel of one plan (recomputed in each reader) are left out, as the compare page
  // leaves them out.
  function relations(mine, theirs) {
    const result = new Map();
    for (const [name, ids] of mine.owned) {
      const counts = new Map();   // their kernel -> how many of these ops it computes
      for (const id of ids) {
        const node = theirs.nodeIndex.get(id);
        if (node && node.kernel) counts.set(node.kernel, (counts.get(node.kernel) || 0) + 1);
      }
      const partners = [...counts.keys()];
      // A kernel there is larger when it also computes ops another kernel computes here (ops
      // that no kernel computes here, recomputed where they are read, do not count).
      const elsewhere = (id) => {
        const node = mine.nodeIndex.get(id);
        return Boolean(node && node.kernel && node.kernel !== name);
      };
      const larger = partners.some((k) => theirs.owned.get(k).some(elsewhere));
      let kind = "alone";
      if (partners.length > 1) kind = larger ? "regrouped" : "merged";
      else if (partners.length === 1) kind = larger ? "split" : "same";
      result.set(name, { kind, partners });
    }
    return result;
  }

  // -- the page: the main pane, the side-by-side one, the toolbar ----------------------------

  const makePane = (element, device, strategy, status, primary) => createPane(element, {
    canvas: element.querySelector(".fusion__canvas"),
    minimap: element.querySelector(".fusion__minimap"),
    info: element.querySelector(".fusion__info"),
    status, devicePicker: device, strategyPicker: strategy, primary,
  });
  const main = makePane(root, document.getElementById("fusion-device"),
                    document.getElementById("fusion-strategy"),
                    document.getElementById("fusion-status"), true);
  const otherDevice = document.getElementById("fusion-device-b");
  const otherStrategy = document.getElementById("fusion-strategy-b");
  const other = makePane(otherRoot, otherDevice, otherStrategy,
                     document.getElementById("fusion-status-b"), false);
  const panes = () => (sideBySide.checked ? [main, other] : [main]);

  // #device/strategy[/kernel][~device/strategy]: the main plan, its picked kernel, and the other
  // plan while side by side.
  function writeHash() {
    if (!main || !main.plan()) return;
    const picked = main.picked();
    const kernel = picked && picked.type === "kernel" ? `/${picked.id}` : "";
    const partner = sideBySide.checked && other.plan() ? `~${other.plan()}` : "";
    history.replaceState(null, "", `#${main.plan()}${kernel}${partner}`);
  }

  // The plan the other pane opens on: the one in the hash, else the xla plan (our take on
  // XLA's rules, the baseline users compare with), else the main plan's neighbour.
  function otherPlan() {
    const wanted = /~([\w.-]+)\/([\w.:-]+)$/.exec(window.location.hash);
    if (wanted) return [wanted[1], wanted[2]];
    const device = main.plan() ? main.plan().split("/")[0] : otherDevice.value;
    const strategies = [...otherStrategy.options].map((option) => option.value);
    const current = main.plan() ? main.plan().split("/")[1] : null;
    const strategy = current !== "xla" && strategies.includes("xla") ? "xla"
      : strategies.find((name) => name !== current) || strategies[0];
    return [device, strategy];
  }

  const changeOption = colourPicker.querySelector('option[value="change"]');
  function setSideBySide(on) {
    sideBySide.checked = on;
    otherRoot.hidden = !on;
    root.closest(".fusion__stages").classList.toggle("is-split", on);
    changeOption.disabled = !on;
    if (on && colourPicker.value !== "change") colourPicker.value = "change";
    if (!on && colourPicker.value === "change") colourPicker.value = "time";
    main.setPartner(on ? other : null);
    other.setPartner(on ? main : null);
    if (on && !other.plan()) other.load(...otherPlan()).then(writeHash);
    else if (on) other.meet(main);
    main.draw();
    writeHash();
  }
  sideBySide.addEventListener("change", () => setSideBySide(sideBySide.checked));

  let typing = null;
  search.addEventListener("input", () => {
    window.clearTimeout(typing);
    typing = window.setTimeout(() => panes().forEach((p) => p.search(search.value)), 150);
  });
  search.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {         // closes the list; a second Escape clears the search
      if (results.hidden) {
        search.value = "";
        panes().forEach((p) => p.search(""));
      }
      results.hidden = true;
      return;
    }
    if (event.key !== "Enter") return;
    event.preventDefault();
    window.clearTimeout(typing);          // the typed text is searched now, not again later
    panes().forEach((p) => p.search(search.value));
    const first = main.first();
    if (first) { results.hidden = true; main.goTo(first); }
  });
  search.addEventListener("focus", () => { if (search.value.trim()) main.search(search.value); });
  document.addEventListener("pointerdown", (event) => {
    if (!event.target.closest(".fusion__search")) results.hidden = true;
  });
  colourPicker.addEventListener("change", () => {
    main.legend();
    panes().forEach((p) => p.draw());
  });
  document.getElementById("fusion-zoom-in").addEventListener("click", () => main.zoom(1.25));
  document.getElementById("fusion-zoom-out").addEventListener("click", () => main.zoom(0.8));
  document.getElementById("fusion-fit").addEventListener("click", () => main.fit());
  document.getElementById("fusion-collapse").addEventListener("click", () => {
    panes().forEach((p) => p.collapse());
  });
  // The main pane's pickers click the page's tabs; run.js then says which plan is shown.
  const clickTab = (group, name) => {
    const tab = document.querySelector(`[data-tab-group="${group}"] .tabs__tab[data-tab="${name}"]`);
    if (tab) tab.click();
    return Boolean(tab);
  };
  const mainDevice = document.getElementById("fusion-device");
  const mainStrategy = document.getElementById("fusion-strategy");
  mainDevice.addEventListener("change", () => {
    if (!clickTab("device", mainDevice.value)) main.load(mainDevice.value, mainStrategy.value);
  });
  mainStrategy.addEventListener("change", () => {
    if (!clickTab(`strategy-${mainDevice.value}`, mainStrategy.value)) {
      main.load(mainDevice.value, mainStrategy.value);
    }
  });
  const loadOther = () => other.load(otherDevice.value, otherStrategy.value).then(writeHash);
  otherDevice.addEventListener("change", loadOther);
  otherStrategy.addEventListener("change", loadOther);
  window.addEventListener("explorer:plan", (event) => {
    const { device, strategy, kernel } = event.detail;
    if (`${device}/${strategy}` !== main.plan() || kernel) main.load(device, strategy, kernel);
  });
  window.addEventListener("resize", () => panes().forEach((p) => p.draw()));

  // Opened without a plan in the hash: the run's fastest (the API's default).
  if (!/^#[\w.-]+\/[\w.:-]+/.test(window.location.hash)) main.load();
  if (window.location.hash.includes("~")) setSideBySide(true);
})();
