// The overview's further plots (cambrian/ui/plots.py computes them): cumulative LLM cost, the
// best score against cost (from the overview's score series), success and improvement rates per intent and per model, evaluations
// running over time, program size by generation, and the Pareto front of two metrics. Reloaded
// whole at most every five seconds while the run reports events.
// Included in the page before charts.js and uPlot, so it starts once the page is parsed.
document.addEventListener("DOMContentLoaded", function () {
  "use strict";
  const charts = window.CambrianCharts;
  const box = document.getElementById("plots");
  const url = box.dataset.plots;
  const rateKind = document.getElementById("rate-kind");
  const paretoX = document.getElementById("pareto-x");
  const paretoY = document.getElementById("pareto-y");
  let data = null, stale = false, axes = "";

  function mark(id, count) { document.getElementById(id).dataset.points = String(count); }

  function steps(label, colour) {
    return { label: label, stroke: colour, width: 2, points: { show: false }, paths: uPlot.paths.stepped({ align: 1 }) };
  }

  function drawRates(id, groups) {
    const names = Object.keys(groups).sort();
    const kind = rateKind.value;
    charts.render(document.getElementById(id),
      [data.rates.proposals].concat(names.map(function (n) { return groups[n][kind]; })),
      names.map(function (n, i) {
        return { label: n, stroke: charts.palette[i % 8], width: 2, spanGaps: true, points: { show: true, size: 5 } };
      }),
      { xLabel: "proposals", yLabel: kind === "success" ? "share correct" : "share improved",
        extra: { scales: { x: { time: false }, y: { range: [0, 1] } } } });
    mark(id, data.rates.proposals.length);
  }

  // A range a tenth wider than the data's, so that points at its ends are drawn whole.
  function padded(u, low, high) {
    const pad = (high - low) / 10 || Math.abs(high) / 10 || 1;
    return [low - pad, high + pad];
  }

  function drawPareto() {
    const p = data.pareto;
    const chartBox = document.getElementById("plot-pareto-box");
    if (!p.x) { chartBox.hidden = true; return; }
    chartBox.hidden = false;
    [paretoX, paretoY].forEach(function (select, i) {
      if (select.options.length !== p.metrics.length) {
        select.innerHTML = "";
        p.metrics.forEach(function (m) { select.add(new Option(m, m)); });
      }
      select.value = i === 0 ? p.x : p.y;
    });
    const order = p.id.map(function (_, i) { return i; }).sort(function (a, b) { return p.xs[a] - p.xs[b]; });
    const front = new Set(p.front);
    const xs = order.map(function (i) { return p.xs[i]; });
    const all = order.map(function (i) { return p.ys[i]; });
    const onFront = order.map(function (i) { return front.has(p.id[i]) ? p.ys[i] : null; });
    charts.render(document.getElementById("plot-pareto"), [xs, all, onFront],
      [charts.pointSeries("correct programs", "#a0aec0"),
       { label: "Pareto front", stroke: "#c05621", width: 2, spanGaps: true, points: { show: true, size: 8, fill: "#c05621" } }],
      { xLabel: p.x + " (" + p.directions[p.x] + ")", yLabel: p.y + " (" + p.directions[p.y] + ")",
        extra: { scales: { x: { time: false, range: padded }, y: { range: padded } } } });
    mark("plot-pareto", p.id.length);
    document.getElementById("pareto-note").textContent = p.front.length + " of " + p.count +
      " correct programs on the front" + (p.id.length < p.count ? " (" + p.id.length + " drawn)" : "") + ": " + p.front.map(function (i) { return "#" + i; }).join(" ");
  }

  function draw() {
    const c = data.cost;
    charts.render(document.getElementById("plot-cost"), [c.seconds, c.cost_usd],
      [steps("cost (USD)", "#c05621")], { xLabel: "seconds since start", yLabel: "USD" });
    mark("plot-cost", c.seconds.length);
    drawRates("plot-intent", data.rates.intent);
    drawRates("plot-model", data.rates.model);
    const o = data.occupancy;
    charts.render(document.getElementById("plot-occupancy"), [o.seconds, o.running],
      [steps("running", "#6b46c1")], { xLabel: "seconds since start", yLabel: "evaluations" });
    mark("plot-occupancy", o.seconds.length);
    document.getElementById("occupancy-note").textContent = "at most " + o.peak +
      (o.slots ? " of " + o.slots + " slots" : "");
    const s = data.sizes;
    const order = s.generation.map(function (_, i) { return i; }).sort(function (a, b) { return s.generation[a] - s.generation[b] || a - b; });
    const mean = {};
    s.mean_generation.forEach(function (g, i) { mean[g] = s.mean_lines[i]; });
    const gens = order.map(function (i) { return s.generation[i]; });
    charts.render(document.getElementById("plot-size"),
      [gens, order.map(function (i) { return s.lines[i]; }), gens.map(function (g) { return mean[g]; })],
      [charts.pointSeries("program", "#2b6cb0"), { label: "mean", stroke: "#2f855a", width: 2, points: { show: false } }],
      { xLabel: "generation", yLabel: "lines" });
    mark("plot-size", gens.length);
    drawPareto();
  }

  async function load() {
    const response = await cambrianFetch(url + (axes ? "?pareto=" + encodeURIComponent(axes) : ""));
    if (!response) { stale = true; return; }
    if (!response.ok) return;
    data = await response.json();
    draw();
  }

  // The best score against cost, from the overview's score series (overview.js): the spend
  // when each evaluation was committed, and the best score so far then.
  document.addEventListener("score-series", function (event) {
    const s = event.detail, cost = [], best = [];
    s.best.forEach(function (value, i) { if (value !== null) { cost.push(s.cost_usd[i]); best.push(value); } });
    const element = document.getElementById("plot-best-cost");
    charts.render(element, [cost, best], [charts.lineSeries("best so far", "#2f855a")],
                  { xLabel: "cost (USD)", yLabel: "best score" });
    mark("plot-best-cost", cost.length);
    element.dataset.last = best.length ? String(best[best.length - 1]) : "";
  });
  rateKind.addEventListener("change", function () { if (data) draw(); });
  [paretoX, paretoY].forEach(function (select) {
    select.addEventListener("change", function () { axes = paretoX.value + "," + paretoY.value; load(); });
  });
  document.addEventListener("run-event", function () { stale = true; });
  setInterval(function () { if (stale) { stale = false; load(); } }, 5000);
  load();
});
