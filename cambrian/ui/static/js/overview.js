// The overview's charts: every evaluation and the best so far, by evaluation and by wall time,
// and the bandit's arm shares. While the run reports events (at most once a second) only the
// points after the last one the page has are fetched and appended; a lost event ("overflow")
// fetches everything again. A long series comes sampled (the server keeps every improvement of
// the best and each span's highest and lowest score): "n" is each point's evaluation number,
// and the page says "showing N of M".
(function () {
  "use strict";
  const script = document.currentScript;
  const url = script.dataset.series;
  const charts = window.CambrianCharts;
  const SCORE_COLUMNS = ["id", "status", "score", "best", "seconds", "cost_usd", "tokens"];
  const MAX_SCORE_POINTS = 4000;  // more appended points: the next fetch asks for a new sample
  const MAX_BANDIT_POINTS = 600;  // more: every other one is dropped
  let scores = null;
  let bandit = null;
  let pending = false;
  let full = false;
  let busy = false;

  function column(values, keep) {
    return values.map(function (value, i) { return keep(i) ? value : null; });
  }

  function query() {
    if (full || !scores || !scores.id.length) return "";
    return "?after=" + scores.id[scores.id.length - 1] + "&bandit_after=" + bandit.last_event;
  }

  function append(fresh) {
    SCORE_COLUMNS.forEach(function (name) { Array.prototype.push.apply(scores[name], fresh.scores[name]); });
    const base = scores.n.length ? scores.n[scores.n.length - 1] : 0;  // "n" counts from "after"
    Array.prototype.push.apply(scores.n, fresh.scores.n.map(function (n) { return base + n; }));
    scores.total += fresh.scores.total;
    if (scores.id.length > MAX_SCORE_POINTS) full = true;
    const arms = new Set(Object.keys(bandit.arms).concat(Object.keys(fresh.bandit.arms)));
    arms.forEach(function (arm) {
      if (!bandit.arms[arm]) bandit.arms[arm] = bandit.pulls.map(function () { return null; });
      const values = fresh.bandit.arms[arm] || fresh.bandit.pulls.map(function () { return null; });
      Array.prototype.push.apply(bandit.arms[arm], values);
    });
    Array.prototype.push.apply(bandit.pulls, fresh.bandit.pulls);
    bandit.last_event = fresh.bandit.last_event;
    if (bandit.pulls.length > MAX_BANDIT_POINTS) {
      const even = function (_, i) { return i % 2 === 0; };
      bandit.pulls = bandit.pulls.filter(even);
      Object.keys(bandit.arms).forEach(function (arm) { bandit.arms[arm] = bandit.arms[arm].filter(even); });
    }
  }

  async function load() {
    if (busy) { pending = true; return; }
    busy = true;
    try {
      const incremental = query();
      full = false;
      const response = await cambrianFetch(url + incremental);
      if (!response) { pending = true; return; }
      if (!response.ok) { full = true; return; }
      const data = await response.json();
      if (!incremental) {
        scores = data.scores;
        bandit = data.bandit;
      } else if (data.scores.id.length || data.bandit.pulls.length) {
        append(data);
      } else {
        return;
      }
      draw();
    } finally {
      busy = false;
    }
  }

  function note(s) {
    const element = document.getElementById("series-note");
    element.hidden = s.id.length >= s.total;
    element.textContent = "showing " + s.id.length.toLocaleString("en") + " of " +
      s.total.toLocaleString("en") + " evaluations: every improvement of the best, and the " +
      "highest and lowest score of each stretch of the run";
    element.dataset.shown = String(s.id.length);
    element.dataset.total = String(s.total);
  }

  function draw() {
    const s = scores;
    const index = s.n;
    note(s);
    const correct = function (i) { return s.status[i] === "correct"; };
    const other = function (i) { return s.status[i] !== "correct"; };
    const scored = [column(s.score, correct), column(s.score, other), s.best];
    const series = [
      charts.pointSeries("correct", "#2b6cb0"),
      charts.pointSeries("incorrect / screened", "#c53030"),
      charts.lineSeries("best so far", "#2f855a"),
    ];
    const evals = document.getElementById("chart-evals");
    charts.render(evals, [index].concat(scored), series, { xLabel: "evaluation", yLabel: "score" });
    evals.dataset.points = String(s.id.length);
    document.dispatchEvent(new CustomEvent("score-series", { detail: s }));  // plots.js
    charts.render(document.getElementById("chart-time"), [s.seconds].concat(scored), series,
                  { xLabel: "seconds since start", yLabel: "score" });
    const arms = Object.keys(bandit.arms).sort();
    const box = document.getElementById("bandit-box");
    if (!bandit.pulls.length) { box.hidden = true; return; }
    box.hidden = false;
    const shares = document.getElementById("chart-bandit");
    shares.dataset.points = String(bandit.pulls.length);
    charts.render(shares,
                  [bandit.pulls].concat(arms.map(function (a) { return bandit.arms[a]; })),
                  arms.map(function (a, i) { return { label: a, stroke: charts.palette[i % 8], width: 2 }; }),
                  { xLabel: "pulls", yLabel: "probability" });
  }

  document.addEventListener("run-event", function (event) {
    pending = true;
    if (event.detail && event.detail.kind === "overflow") full = true;
  });
  setInterval(function () { if (pending) { pending = false; load(); } }, 1000);
  load();
})();
