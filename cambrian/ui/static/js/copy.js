// A "Copy" button puts the text of the element its data-copy-target names on the clipboard
// (the Clipboard API where the page may use it, else a selected textarea and execCommand).
(function () {
  "use strict";
  document.querySelectorAll("button[data-copy-target]").forEach(function (button) {
    if (button.dataset.copyReady) return;
    button.dataset.copyReady = "1";
    const result = document.getElementById(button.id + "-result");
    button.addEventListener("click", async function () {
      const source = document.getElementById(button.dataset.copyTarget);
      const text = source.value !== undefined ? source.value : source.textContent;
      let copied = false;
      try {
        await navigator.clipboard.writeText(text);
        copied = true;
      } catch (error) {
        const area = document.createElement("textarea");
        area.value = text;
        document.body.appendChild(area);
        area.select();
        copied = document.execCommand("copy");
        area.remove();
      }
      if (result) result.textContent = copied ? "copied " + text.length + " characters" : "could not copy: select the code instead";
    });
  });
})();
