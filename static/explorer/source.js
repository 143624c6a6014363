// The uploaded source (explorer/source.html): `#L12-L20` marks a range of lines (a single
// `#L12` is marked by CSS :target) and scrolls to its first line.
(function () {
  function markRange() {
    document.querySelectorAll(".upload li.is-marked").forEach(function (li) {
      li.classList.remove("is-marked");
    });
    var match = /^#L(\d+)-L(\d+)$/.exec(window.location.hash);
    if (!match) return;
    var first = Number(match[1]), last = Number(match[2]);
    if (last < first) { var swap = first; first = last; last = swap; }
    for (var n = first; n <= last; n++) {
      var li = document.getElementById("L" + n);
      if (li) li.classList.add("is-marked");
    }
    var start = document.getElementById("L" + first);
    if (start) start.scrollIntoView({block: "center"});
  }
  // Each kernel's lines in its own hue, set here: the page's CSP allows no style attributes.
  document.querySelectorAll(".upload li[data-hue]").forEach(function (li) {
    li.style.setProperty("--hue", li.dataset.hue);
  });
  window.addEventListener("hashchange", markRange);
  markRange();
})();
