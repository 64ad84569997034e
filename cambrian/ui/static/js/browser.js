// The program browser: a filter chosen from a list applies at once (the search box and the
// generation bounds apply on Enter or "Filter"); filtering, sorting and paging are done by the
// server, so a run of many thousands of candidates sends one page.
(function () {
  "use strict";
  const form = document.getElementById("browser-filters");
  form.querySelectorAll("select").forEach(function (select) {
    select.addEventListener("change", function () { form.requestSubmit(); });
  });
  // Empty fields stay out of the address, which then reads as the filters chosen.
  form.addEventListener("formdata", function (event) {
    const empty = [];
    event.formData.forEach(function (value, key) { if (value === "") empty.push(key); });
    empty.forEach(function (key) { event.formData.delete(key); });
  });
})();
