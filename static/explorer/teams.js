// A team's page (explorer/team.html): an invite link's "copy" button puts the link on the
// clipboard, and a click in the link's box selects it whole (the fallback where the clipboard
// is refused: the user copies the selection).
"use strict";

(() => {
  function linkBox(button) {
    return button.closest(".team__link").querySelector(".team__link-text");
  }

  async function copy(button) {
    const box = linkBox(button);
    box.select();
    try {
      await navigator.clipboard.writeText(box.value);
      button.textContent = "copied";
    } catch {
      button.textContent = "selected: copy it";
    }
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-copy-link]");
    if (button) {
      copy(button);
    } else if (event.target.matches(".team__link-text")) {
      event.target.select();
    }
  });
})();
