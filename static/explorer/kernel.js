// The kernel page: CUDA highlighting and the line <-> graph-node map.
"use strict";

(() => {
  const KEYWORDS = new Set(("if else for while do return break continue switch case default " +
    "const static extern inline __global__ __device__ __shared__ __restrict__ __syncthreads " +
    "__launch_bounds__ __forceinline__ sizeof struct template typename volatile").split(" "));
  const TYPES = new Set(("void bool char int unsigned long float double half __half " +
    "__nv_bfloat16 int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t " +
    "float2 float4 half2 dim3 auto").split(" "));
  // comment | preprocessor line | number | word
  const TOKEN = new RegExp([
    String.raw`(\/\/.*$|\/\*.*?\*\/)`,
    String.raw`(^\s*#.*$)`,
    String.raw`(\b\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[fFuUlL]*\b)`,
    String.raw`([A-Za-z_]\w*)`,
  ].join("|"), "g");

  function span(cls, text) {
    const element = document.createElement("span");
    element.className = cls;
    element.textContent = text;
    return element;
  }

  // Builds DOM nodes, never HTML strings: the source is text from the compiler.
  function highlight(code) {
    const text = code.textContent;
    const parts = [];
    let last = 0;
    for (const match of text.matchAll(TOKEN)) {
      const [token, comment, preprocessor, number, word] = match;
      let cls = null;
      if (comment) cls = "tok-comment";
      else if (preprocessor) cls = "tok-preprocessor";
      else if (number) cls = "tok-number";
      else if (KEYWORDS.has(word)) cls = "tok-keyword";
      else if (TYPES.has(word)) cls = "tok-type";
      if (!cls) continue;
      parts.push(document.createTextNode(text.slice(last, match.index)), span(cls, token));
      last = match.index + token.length;
    }
    if (!parts.length) return;
    parts.push(document.createTextNode(text.slice(last)));
    code.replaceChildren(...parts);
  }

  const source = document.getElementById("source");
  const nodeLinesHolder = document.getElementById("node-lines");
  const nodeLines = nodeLinesHolder ? JSON.parse(nodeLinesHolder.textContent) : {};
  if (source) source.querySelectorAll("code").forEach(highlight);

  function clearMarks() {
    document.querySelectorAll(".is-marked").forEach((element) => {
      element.classList.remove("is-marked");
    });
  }

  function markNodes(names) {
    names.forEach((name) => {
      document.querySelectorAll(`.node[data-node="${CSS.escape(name)}"]`).forEach((button) => {
        button.classList.add("is-marked");
      });
    });
  }

  if (source) {
    source.addEventListener("click", (event) => {
      const line = event.target.closest("li.has-nodes");
      if (!line) return;
      clearMarks();
      line.classList.add("is-marked");
      markNodes(line.dataset.nodes.split(" "));
    });
  }

  // #node=<name> (the fusion view's "its CUDA lines" link): that node's lines, marked.
  window.addEventListener("load", () => {
    const wanted = /^#node=(.+)$/.exec(window.location.hash);
    if (!wanted) return;
    const name = decodeURIComponent(wanted[1]);
    const button = document.querySelector(`.node[data-node="${CSS.escape(name)}"]`);
    if (button) button.click();
  });

  document.querySelectorAll(".node").forEach((button) => {
    button.addEventListener("click", () => {
      clearMarks();
      button.classList.add("is-marked");
      const lines = nodeLines[button.dataset.node] || [];
      lines.forEach((number) => {
        const line = document.getElementById(`L${number}`);
        if (line) line.classList.add("is-marked");
      });
      if (lines.length) {
        document.getElementById(`L${lines[0]}`).scrollIntoView({ block: "center" });
        Explorer.showTab("code", "cuda");
      }
    });
  });
})();
