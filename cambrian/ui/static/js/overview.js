// The overview's charts: every evaluation and the best so far, by evaluation and by wall time,
// and the bandit's arm shares. Reloaded (at most once a second) when the run reports events.
(function () {
  "use strict";
  const script = document.currentScript;
  const url = script.dataset.series;
  const charts = window.CambrianCharts;
  let pending = false;

  function column(values, keep) {
    return values.map(function (value, i) { return keep(i) ? value : null; });
  }

  async function draw() {
    const response = await fetch(url);
    if (!response.ok) return;
    const data = await response.json();
    const s = data.scores;
    const index = s.id.map(function (_, i) { return i + 1; });
    const correct = function (i) { return s.status[i] === "correct"; };
    const other = function (i) { return s.status[i] !== "correct"; };
    const scored = [column(s.score, correct), column(s.score, other), s.best];
    const series = [
      charts.pointSeries("correct", "#2b6cb0"),
      charts.pointSeries("incorrect / screened", "#c53030"),
      charts.lineSeries("best so far", "#2f855a"),
    ];
    charts.render(document.getElementById("chart-evals"), [index].concat(scored), series,
                  { xLabel: "evaluation", yLabel: "score" });
    charts.render(document.getElementById("chart-time"), [s.seconds].concat(scored), series,
                  { xLabel: "seconds since start", yLabel: "score" });
    const bandit = data.bandit;
    const arms = Object.keys(bandit.arms);
    const box = document.getElementById("bandit-box");
    if (!arms.length) { box.hidden = true; return; }
    box.hidden = false;
    charts.render(document.getElementById("chart-bandit"),
                  [bandit.pulls].concat(arms.map(function (a) { return bandit.arms[a]; })),
                  arms.map(function (a, i) { return { label: a, stroke: charts.palette[i % 8], width: 2 }; }),
                  { xLabel: "pulls", yLabel: "probability" });
  }

  document.addEventListener("run-event", function () { pending = true; });
  setInterval(function () { if (pending) { pending = false; draw(); } }, 1000);
  draw();
})();
