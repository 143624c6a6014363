// The run history: "Compare selected" is enabled while exactly two runs are ticked.
"use strict";

(() => {
  const form = document.getElementById("compare-form");
  const button = document.getElementById("compare-button");
  const update = () => {
    button.disabled = form.querySelectorAll("input[name=run]:checked").length !== 2;
  };
  form.addEventListener("change", update);
  update();
})();
