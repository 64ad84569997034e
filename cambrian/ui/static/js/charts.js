// Small uPlot helpers shared by the overview and the comparison pages.
window.CambrianCharts = (function () {
  "use strict";
  const palette = ["#2b6cb0", "#c05621", "#2f855a", "#9b2c2c", "#6b46c1", "#b7791f", "#2c7a7b", "#4a5568"];

  function width(element) {
    return Math.max(320, element.clientWidth || element.parentElement.clientWidth || 600);
  }

  // A chart already drawn with the same axes and series only gets the new data (a redraw
  // every second of a live run would otherwise leave a uPlot instance behind each time).
  function render(element, data, series, options) {
    const axes = [(options && options.xLabel) || "", (options && options.yLabel) || ""];
    const labels = axes.concat(series.map(function (s) { return s.label; })).join("\n");
    if (element.cambrianPlot && element.cambrianLabels === labels) {
      element.cambrianPlot.setData(data);
      return element.cambrianPlot;
    }
    if (element.cambrianPlot) element.cambrianPlot.destroy();
    element.innerHTML = "";
    const opts = Object.assign({
      width: width(element),
      height: 260,
      series: [{ label: (options && options.xLabel) || "x" }].concat(series),
      scales: { x: { time: false } },
      axes: [{ label: (options && options.xLabel) || "" }, { label: (options && options.yLabel) || "" }],
      legend: { live: true },
    }, options && options.extra);
    element.cambrianPlot = new uPlot(opts, data, element);
    element.cambrianLabels = labels;
    return element.cambrianPlot;
  }

  function pointSeries(label, colour) {
    return { label: label, stroke: colour, width: 0, points: { show: true, size: 5, fill: colour, stroke: colour } };
  }

  function lineSeries(label, colour) {
    return { label: label, stroke: colour, width: 2, points: { show: false }, paths: uPlot.paths.stepped({ align: 1 }) };
  }

  return { palette: palette, render: render, pointSeries: pointSeries, lineSeries: lineSeries };
})();
