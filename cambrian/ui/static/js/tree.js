// The lineage tree: d3's tidy tree layout in SVG, zoom and pan (d3-zoom), collapsible
// subtrees, colour by score, island or status, the best program's lineage highlighted.
// Clicking a node opens the candidate; clicking its ± collapses or expands it.
(function () {
  "use strict";
  const box = document.getElementById("tree");
  const colourBy = document.getElementById("colour-by");
  const showRefused = document.getElementById("show-refused");
  const legend = document.getElementById("tree-legend");
  const count = document.getElementById("tree-count");
  // One colour per outcome, far apart: a reply the model gave but that could not be used
  // ("refused reply") apart from a patch that failed otherwise (the call failed), both apart
  // from an evaluated but incorrect program and from one a filter rejected.
  const STATUS_COLOURS = { correct: "#2b6cb0", incorrect: "#c53030", screened: "#dd6b20",
    refused: "#d53f8c", patch_failed: "#744210", rejected: "#805ad5", duplicate: "#718096",
    pending: "#a0aec0" };
  const STATUS_NAMES = { correct: "correct", incorrect: "incorrect", screened: "screened",
    refused: "refused reply", patch_failed: "patch failed (no usable reply)", rejected: "rejected by a filter",
    duplicate: "duplicate", pending: "pending" };

  function kind(n) { return n.status === "patch_failed" && n.refused ? "refused" : n.status; }

  function statusLegend(skipCorrect) {
    return Object.keys(STATUS_COLOURS).filter(function (s) { return !(skipCorrect && s === "correct"); })
      .map(function (s) {
        return "<span class='legend-item' data-status='" + s + "'><span style='color:" + STATUS_COLOURS[s] +
          "'>●</span> " + STATUS_NAMES[s] + "</span>"; }).join(" ");
  }
  const AUTO_COLLAPSE = 4000;  // above this many nodes, side branches start collapsed
  let data = null;
  let collapsed = new Set();
  let svg = null, layer = null, zoom = null;

  function build() {
    const byId = new Map();
    data.nodes.forEach(function (n) { byId.set(n.id, Object.assign({ children: [] }, n)); });
    const roots = [];
    byId.forEach(function (n) {
      const parent = n.parent !== null ? byId.get(n.parent) : undefined;
      if (parent) parent.children.push(n); else roots.push(n);
    });
    if (roots.length === 1) return roots[0];
    return { id: 0, virtual: true, status: "root", children: roots };
  }

  function scoreColour() {
    const scores = data.nodes.filter(function (n) { return n.status === "correct" && n.score !== null; })
      .map(function (n) { return n.score; });
    if (!scores.length) return function () { return "#a0aec0"; };
    const lo = d3.min(scores), hi = d3.max(scores);
    const domain = data.direction === "minimize" ? [hi, lo] : [lo, hi];
    // Yellow-green to dark blue: no red, pink, purple, brown or orange, which mark failures.
    const ramp = function (t) { return d3.interpolateYlGnBu(0.3 + 0.7 * t); };
    const scale = d3.scaleSequential(ramp).domain(lo === hi ? [lo - 1, hi + 1] : domain);
    legend.innerHTML = "score: <span style='color:" + scale(domain[0]) + "'>●</span> " + domain[0].toPrecision(6) +
      " … <span style='color:" + scale(domain[1]) + "'>●</span> " + domain[1].toPrecision(6) +
      " (better); " + statusLegend(true) + "; <span class='best-mark'>◯</span> best lineage";
    return function (n) {
      if (n.status === "correct" && n.score !== null) return scale(n.score);
      return STATUS_COLOURS[kind(n)] || "#a0aec0";
    };
  }

  function colourFunction() {
    const mode = colourBy.value;
    if (mode === "island") {
      const scale = d3.scaleOrdinal(d3.schemeTableau10);
      legend.textContent = "colour: island";
      return function (n) { return n.island === null || n.island === undefined ? "#a0aec0" : scale(n.island); };
    }
    if (mode === "status") {
      legend.innerHTML = statusLegend(false);
      return function (n) { return STATUS_COLOURS[kind(n)] || "#a0aec0"; };
    }
    return scoreColour();
  }

  function render() {
    const best = new Set(data.best_lineage);
    const root = d3.hierarchy(build(), function (n) { return collapsed.has(n.id) ? null : n.children; });
    const layout = d3.tree().nodeSize([16, 70]);
    layout(root);
    const colour = colourFunction();
    layer.selectAll("*").remove();
    const shown = root.descendants().filter(function (d) { return !d.data.virtual; });
    count.textContent = shown.length + " of " + data.nodes.length + " nodes shown";
    layer.append("g").attr("class", "links").selectAll("path")
      .data(root.links().filter(function (l) { return !l.source.data.virtual; }))
      .join("path")
      .attr("class", function (l) { return best.has(l.target.data.id) && best.has(l.source.data.id) ? "link best" : "link"; })
      .attr("d", d3.linkHorizontal().x(function (d) { return d.y; }).y(function (d) { return d.x; }));
    const nodes = layer.append("g").attr("class", "nodes").selectAll("g")
      .data(shown).join("g")
      .attr("class", function (d) { return "node st-" + kind(d.data) + (best.has(d.data.id) ? " best" : ""); })
      .attr("data-id", function (d) { return d.data.id; })
      .attr("transform", function (d) { return "translate(" + d.y + "," + d.x + ")"; });
    nodes.append("circle").attr("r", function (d) { return d.data.id === data.best_id ? 7 : 5; })
      .attr("fill", function (d) { return colour(d.data); })
      .on("click", function (event, d) { window.location.href = box.dataset.candidate + d.data.id; });
    nodes.append("title").text(function (d) {
      const n = d.data;
      return "candidate " + n.id + " · " + n.status + (n.score !== null ? " · score " + n.score : "") +
        " · " + n.operator + (n.model ? " · " + n.model : "") + (n.island !== null ? " · island " + n.island : "");
    });
    if (shown.length <= 600) {
      nodes.append("text").attr("class", "label").attr("x", 9).attr("dy", "0.32em")
        .text(function (d) { return d.data.id; });
    }
    nodes.filter(function (d) { return d.data.children.length > 0; })
      .append("text").attr("class", "toggle").attr("x", -16).attr("dy", "0.35em")
      .text(function (d) { return collapsed.has(d.data.id) ? "+" : "−"; })
      .on("click", function (event, d) {
        event.stopPropagation();
        if (collapsed.has(d.data.id)) collapsed.delete(d.data.id); else collapsed.add(d.data.id);
        render();
      });
  }

  function fit() {
    const bounds = layer.node().getBBox();
    const w = box.clientWidth, h = box.clientHeight;
    if (!bounds.width || !bounds.height) return;
    const k = Math.min(2, 0.9 * Math.min(w / bounds.width, h / bounds.height));
    const x = w / 2 - k * (bounds.x + bounds.width / 2), y = h / 2 - k * (bounds.y + bounds.height / 2);
    svg.call(zoom.transform, d3.zoomIdentity.translate(x, y).scale(k));
  }

  function autoCollapse() {
    collapsed = new Set();
    if (data.nodes.length <= AUTO_COLLAPSE) return;
    const best = new Set(data.best_lineage);
    const depth = new Map();
    data.nodes.forEach(function (n) {
      const d = n.parent !== null && depth.has(n.parent) ? depth.get(n.parent) + 1 : 0;
      depth.set(n.id, d);
      if (d === 2 && !best.has(n.id)) collapsed.add(n.id);
    });
  }

  async function load(refit) {
    const response = await cambrianFetch(box.dataset.url + (showRefused.checked ? "?all=1" : ""));
    if (!response) { stale = true; return; }
    if (!response.ok) { box.textContent = "Could not load the tree."; return; }
    const previous = data;
    data = await response.json();
    if (!previous) autoCollapse();
    render();
    if (refit) fit();
  }

  svg = d3.select(box).append("svg").attr("width", "100%").attr("height", "100%");
  layer = svg.append("g");
  zoom = d3.zoom().scaleExtent([0.02, 8]).on("zoom", function (event) { layer.attr("transform", event.transform); });
  svg.call(zoom).on("dblclick.zoom", null);
  colourBy.addEventListener("change", render);
  showRefused.addEventListener("change", function () { load(true); });  // re-fit to what is shown
  document.getElementById("fit").addEventListener("click", fit);
  let stale = false;
  document.addEventListener("run-event", function (e) {
    if (["evaluated", "proposed", "duplicate", "screened_out"].indexOf(e.detail.kind) >= 0) stale = true;
  });
  setInterval(function () { if (stale) { stale = false; load(false); } }, 2000);
  load(true);
})();
