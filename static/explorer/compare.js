// The compare page: show every kernel, or only the matched ones or those of one plan alone.
"use strict";

(() => {
  const select = document.querySelector("[data-match-status]");
  if (!select) return;
  select.addEventListener("change", () => {
    document.querySelectorAll(".compare__kernels tbody tr").forEach((row) => {
      row.hidden = Boolean(select.value) && row.dataset.status !== select.value;
    });
  });
})();
