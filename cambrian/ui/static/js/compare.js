// Best score so far of several runs on one plot, against evaluations, cost, tokens or time.
(function () {
  "use strict";
  const element = document.getElementById("chart-compare");
  const axis = document.getElementById("x-axis");
  const charts = window.CambrianCharts;
  let runs = [];

  // uPlot wants one shared x column: merge the runs' x values, null where a run has none.
  function aligned(key) {
    const xs = new Set();
    runs.forEach(function (run) { xOf(run, key).forEach(function (x) { xs.add(x); }); });
    const xValues = Array.from(xs).sort(function (a, b) { return a - b; });
    const position = new Map(xValues.map(function (x, i) { return [x, i]; }));
    const columns = runs.map(function (run) {
      const ys = new Array(xValues.length).fill(null);
      const x = xOf(run, key);
      run.series.best.forEach(function (y, i) { ys[position.get(x[i])] = y; });
      return ys;
    });
    return [xValues].concat(columns);
  }

  function xOf(run, key) {
    if (key === "evaluations") return run.series.n;  // each point's evaluation number (sampled)
    return run.series[key];
  }

  function draw() {
    if (!runs.length) { element.textContent = "Choose runs to compare."; return; }
    const series = runs.map(function (run, i) {
      return Object.assign(charts.lineSeries(run.name, charts.palette[i % 8]), { spanGaps: true });
    });
    charts.render(element, aligned(axis.value), series,
                  { xLabel: axis.options[axis.selectedIndex].text, yLabel: "best score" });
  }

  axis.addEventListener("change", draw);
  cambrianFetch(element.dataset.url).then(function (r) { return r && r.ok ? r.json() : null; }).then(function (data) {
    if (!data) return;
    runs = data.runs;
    draw();
  });
})();
