// The upload form: drag-and-drop onto the drop zone, and one-click samples from the gallery.
"use strict";

(() => {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const zone = document.getElementById("drop-zone");
  const fileInput = form.querySelector('input[name="graph_file"]');
  const chosen = document.getElementById("chosen-file");
  const sampleInput = form.querySelector('input[name="sample"]');

  // Several files are an ONNX model with its external data files (the server picks the model).
  function showChosen() {
    chosen.textContent = Array.from(fileInput.files)
      .map((file) => `${file.name} (${file.size.toLocaleString()} bytes)`).join(", ");
  }

  fileInput.addEventListener("change", showChosen);
  ["dragenter", "dragover"].forEach((name) => zone.addEventListener(name, (event) => {
    event.preventDefault();
    zone.classList.add("is-over");
  }));
  ["dragleave", "drop"].forEach((name) => zone.addEventListener(name, () => {
    zone.classList.remove("is-over");
  }));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    if (!event.dataTransfer.files.length) return;
    fileInput.files = event.dataTransfer.files;
    showChosen();
  });

  document.querySelectorAll("[data-sample]").forEach((button) => {
    button.addEventListener("click", () => {
      fileInput.value = "";
      form.querySelector("textarea").value = "";
      sampleInput.value = button.dataset.sample;
      form.submit();
    });
  });
})();
