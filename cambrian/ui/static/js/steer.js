// Steering controls: pause, resume, stop, budget and guidance, each one JSON POST to the UI
// server, which checks it as `cambrian guide` and `cambrian control` do and answers with what
// the run will do, or why it is refused. The run applies control requests at its next turn:
// each queued request is listed under the controls, and its line changes when the run's
// `control` event for it arrives (applied, with what changed, or refused and why).
(function () {
  "use strict";
  const run = document.currentScript.dataset.run;
  const result = document.getElementById("steer-result");
  const requests = document.getElementById("steer-requests");
  const text = document.getElementById("guidance-text");
  const count = document.getElementById("guidance-count");
  const targetSelect = document.getElementById("guidance-target");
  const waiting = new Map();  // request id -> its line in #steer-requests

  function say(message, failed) {
    result.textContent = message;
    result.className = "small " + (failed ? "error" : "ok");
  }

  const UNREACHABLE = "not sent: the server is not answering";

  async function post(path, body) {
    const response = await cambrianFetch("/api/runs/" + encodeURIComponent(run) + path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!response) throw new Error(UNREACHABLE);
    const data = await response.json().catch(function () { return {}; });
    if (!response.ok) {
      const error = new Error(typeof data.detail === "string" ? data.detail : response.statusText);
      error.status = response.status;
      throw error;
    }
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

  const verdicts = new Map();  // request id -> the run's control event, if it came first

  function queued(data) {
    say(data.answer);
    if (!requests) return;
    const line = document.createElement("li");
    line.dataset.request = String(data.request);
    line.dataset.state = "queued";
    line.textContent = "request " + data.request + " (" + data.action + "): waiting for the run…";
    requests.prepend(line);
    if (verdicts.has(data.request)) verdict(line, verdicts.get(data.request));
    else waiting.set(data.request, line);
  }

  function verdict(line, payload) {
    const detail = payload.detail || {};
    const head = "request " + payload.request_id + " (" + payload.action + "): ";
    if (detail.refused) {
      line.dataset.state = "refused";
      line.className = "error";
      line.textContent = head + "refused by the run: " + detail.refused;
      return;
    }
    const before = detail.before || {};
    const changes = Object.keys(detail).filter(function (k) { return k !== "before"; })
      .map(function (k) { return k + " " + (k in before ? before[k] + " → " : "") + detail[k]; });
    line.dataset.state = "applied";
    line.className = "ok";
    line.textContent = head + "applied by the run" + (changes.length ? ": " + changes.join(", ") : "");
  }

  // The run's verdict on a queued request, as it happens (live.js re-dispatches its events).
  document.addEventListener("run-event", function (event) {
    const message = event.detail || {};
    if (message.kind !== "control" || !message.payload) return;
    const id = message.payload.request_id;
    const line = waiting.get(id);
    if (!line) { verdicts.set(id, message.payload); return; }
    waiting.delete(id);
    verdict(line, message.payload);
  });

  async function control(body) {
    try {
      queued(await post("/control", body));
      refreshed();
    } catch (error) {
      if (error.status === 409 && body.action === "budget" && !body.confirm &&
          window.confirm(error.message)) {
        return control(Object.assign({}, body, { confirm: true }));
      }
      say(error.message, true);
    }
  }

  document.querySelectorAll("[data-control]").forEach(function (button) {
    button.addEventListener("click", function () {
      const action = button.dataset.control;
      if (action === "stop" && !window.confirm("Stop the run after the work in flight?")) return;
      control({ action: action });
    });
  });

  const budget = document.getElementById("budget");
  if (budget) {
    budget.addEventListener("click", function () {
      const values = {};
      [["generations", "budget-generations"], ["max_cost_usd", "budget-cost"]].forEach(function (pair) {
        const value = document.getElementById(pair[1]).value.trim();
        if (value !== "") values[pair[0]] = value;
      });
      control({ action: "budget", budget: values });
    });
  }

  // The guidance box counts what is typed against the run's limit.
  if (text && count) {
    const limit = Number(text.dataset.limit || 0);
    const recount = function () {
      count.textContent = text.value.length.toLocaleString();
      count.className = limit && text.value.length > limit ? "error" : "";
    };
    text.addEventListener("input", recount);
    recount();
  }

  // "Edit": the active guidance of the chosen target goes into the box, to be changed and
  // sent back with "Replace".
  const load = document.getElementById("guidance-load");
  if (load && text) {
    load.addEventListener("click", async function () {
      const target = targetSelect ? targetSelect.value : "";
      try {
        const response = await cambrianFetch("/api/runs/" + encodeURIComponent(run) + "/guidance?target=" +
                                             encodeURIComponent(target));
        if (!response) throw new Error(UNREACHABLE);
        const data = await response.json();
        if (!response.ok) throw new Error(data.detail || response.statusText);
        text.value = data.active;
        text.dispatchEvent(new Event("input"));
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
        say(data.answer);
        if (text && (action === "append" || action === "replace")) {
          text.value = "";
          text.dispatchEvent(new Event("input"));
        }
        refreshed();
      } catch (error) { say(error.message, true); }
    });
  });
})();
