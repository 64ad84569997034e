// Steering controls: pause, resume, stop, budget and guidance, each one JSON POST to the UI
// server, which stores it the way `cambrian guide` and `request_control` do (source "ui").
(function () {
  "use strict";
  const run = document.currentScript.dataset.run;
  const result = document.getElementById("steer-result");
  const text = document.getElementById("guidance-text");
  const targetSelect = document.getElementById("guidance-target");

  function say(message, failed) {
    result.textContent = message;
    result.className = "small " + (failed ? "error" : "ok");
  }

  async function post(path, body) {
    const response = await fetch("/api/runs/" + encodeURIComponent(run) + path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const data = await response.json().catch(function () { return {}; });
    if (!response.ok) throw new Error(data.detail || response.statusText);
    return data;
  }

  // The overview reloads its panels; other pages reload to show the new history.
  function refreshed() {
    if (document.querySelector("[data-fragment]") && window.cambrianRefresh) {
      window.cambrianRefresh();
    } else {
      setTimeout(function () { window.location.reload(); }, 800);
    }
  }

  document.querySelectorAll("[data-control]").forEach(function (button) {
    button.addEventListener("click", async function () {
      const action = button.dataset.control;
      if (action === "stop" && !window.confirm("Stop the run after the work in flight?")) return;
      try {
        await post("/control", { action: action });
        say(action + " requested; the run applies it at its next turn.");
        refreshed();
      } catch (error) { say(error.message, true); }
    });
  });

  const budget = document.getElementById("budget");
  if (budget) {
    budget.addEventListener("click", async function () {
      const values = {
        generations: document.getElementById("budget-generations").value,
        max_cost_usd: document.getElementById("budget-cost").value,
      };
      try {
        const data = await post("/control", { action: "budget", budget: values });
        say("budget change requested: " + JSON.stringify(data.payload));
        refreshed();
      } catch (error) { say(error.message, true); }
    });
  }

  // "Edit": the active guidance of the chosen target goes into the box, to be changed and
  // sent back with "Replace".
  const load = document.getElementById("guidance-load");
  if (load && text) {
    load.addEventListener("click", async function () {
      const target = targetSelect ? targetSelect.value : "";
      try {
        const response = await fetch("/api/runs/" + encodeURIComponent(run) + "/guidance?target=" +
                                     encodeURIComponent(target));
        const data = await response.json();
        if (!response.ok) throw new Error(data.detail || response.statusText);
        text.value = data.active;
        text.focus();
        say(data.version ? "editing guidance version " + data.version + "; Replace saves it"
                         : "no guidance yet for this target");
      } catch (error) { say(error.message, true); }
    });
  }

  document.querySelectorAll("[data-guidance]").forEach(function (button) {
    button.addEventListener("click", async function () {
      const action = button.dataset.guidance;
      const body = { action: action, text: text ? text.value : "",
                     target: targetSelect ? targetSelect.value : "" };
      try {
        const data = await post("/guidance", body);
        say("guidance version " + data.version + " is active from the next proposal on: " +
            (data.active || "(none)"));
        if (text && (action === "append" || action === "replace")) text.value = "";
        refreshed();
      } catch (error) { say(error.message, true); }
    });
  });
})();
