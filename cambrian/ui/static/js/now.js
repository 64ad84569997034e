// The overview's "doing now" panel: the live channel's state (live.js keeps it on #live), how
// long each proposal and evaluation in flight has been going, and each model's LLM errors,
// retries and latency per time slot (fetched again at most every five seconds while the run
// reports events).
(function () {
  "use strict";
  const script = document.currentScript;
  const url = script.dataset.transport;
  const charts = window.CambrianCharts;
  const live = document.getElementById("live");
  const connection = document.getElementById("connection");
  const WORDS = { live: "up", connecting: "connecting…", reconnecting: "down, reconnecting…",
                  closed: "down", ended: "closed: the run ended", "not live": "none: the run is not running" };

  function tick() {
    if (live && connection) {
      const state = live.dataset.state || "connecting";
      if (connection.dataset.state !== state) {
        connection.dataset.state = state;
        connection.textContent = "live channel: " + (WORDS[state] || state);
      }
    }
    const now = Date.now() / 1000;
    document.querySelectorAll("#now .since[data-since]").forEach(function (element) {
      const seconds = Math.max(0, Math.round(now - Number(element.dataset.since)));
      element.textContent = seconds < 120 ? seconds + " s ago" : Math.round(seconds / 60) + " min ago";
    });
  }
  setInterval(tick, 1000);
  tick();

  let pending = true;
  let busy = false;
  async function load() {
    if (!pending || busy || !charts) return;
    pending = false;
    busy = true;
    try {
      const response = await cambrianFetch(url);
      if (!response || !response.ok) { pending = true; return; }
      draw(await response.json());
    } finally {
      busy = false;
    }
  }

  function draw(data) {
    const minutes = data.series.minutes;
    const models = Object.keys(data.series.models).sort();
    const slot = data.series.bucket_s >= 60 ? "per minute" : "per " + data.series.bucket_s + " s";
    document.querySelectorAll("#now .transport-slot").forEach(function (element, i) {
      element.textContent = i === 0 ? slot : "(median of the answered requests " + slot + ", s)";
    });
    const errors = document.getElementById("chart-llm-errors");
    const latency = document.getElementById("chart-llm-latency");
    errors.dataset.points = String(minutes.length);
    if (!minutes.length) return;
    const failed = [];
    const series = [];
    models.forEach(function (model, i) {
      const columns = data.series.models[model];
      failed.push(columns.errors, columns.retried);
      series.push({ label: model + " failed", stroke: charts.palette[i % 8], width: 2 },
                  { label: model + " retried", stroke: charts.palette[i % 8], width: 1, dash: [4, 4] });
    });
    charts.render(errors, [minutes].concat(failed), series,
                  { xLabel: "minutes since the first request", yLabel: "requests" });
    charts.render(latency, [minutes].concat(models.map(function (m) { return data.series.models[m].latency_s; })),
                  models.map(function (m, i) { return { label: m, stroke: charts.palette[i % 8], width: 2 }; }),
                  { xLabel: "minutes since the first request", yLabel: "seconds" });
  }

  document.addEventListener("run-event", function () { pending = true; });
  setInterval(load, 5000);
  load();
})();
