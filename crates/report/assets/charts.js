// volley's charts on a page: the charts of volley-report's chartset (as html::ChartView JSON)
// drawn with uPlot. Shared by report.html and the live dashboard, so both look the same.
// volleyCharts.draw(root, drawn, charts): draws `charts` into `root`; `drawn` (an object the
// caller keeps, {} at first) holds the plots already drawn by chart name: a chart whose title
// and lines are unchanged only gets its new data, the others are drawn anew.
window.volleyCharts = (function () {
  // Okabe and Ito's colours, as the PNG charts (volley-report's charts::PALETTE).
  var colors = ["#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000"];
  // Counts, rates and times start at 0: a scale from the data's minimum makes 825 against
  // 870 look like a collapse.
  function fromZero(u, min, max) { if (min == null || max == null) return [0, 1]; var lo = Math.min(0, min); var hi = max > lo ? max : lo + 1; return [lo, hi + (hi - lo) * 0.05]; }
  function width(root) { return Math.max(320, Math.min(root.clientWidth || 1000, 1060)); }
  function pct(x) { var q = 100 * (1 - Math.pow(10, -x)); return (q < 99 ? q.toFixed(0) : (Math.round(q * 100) / 100)) + "%"; }
  function data(c) { return [c.x].concat(c.series.map(function (s) { return s.values; })); }
  function shape(c) { return c.title + "|" + c.series.map(function (s) { return s.label + "/" + (s.scale || "y") + "/" + (s.style || "line"); }).join("|"); }
  function plot(root, c, before) {
    var el = document.createElement("div");
    el.className = "chart";
    el.setAttribute("data-chart", c.name);
    root.insertBefore(el, before || null);
    var series = [{ label: c.xlabel, value: c.percentile ? function (u, v) { return v == null ? "" : pct(v); } : undefined }];
    // A line's style: "limit" dashed, "dots" points alone, "span" an x range shaded under the
    // lines (a capacity's bracket, from its first point to its last).
    var spans = [];
    c.series.forEach(function (s, i) {
      var color = colors[i % colors.length];
      var one = { label: s.label, stroke: color, width: 2, scale: s.scale || "y", spanGaps: true };
      if (s.style === "limit") one.dash = [8, 5];
      if (s.style === "step") one.paths = uPlot.paths.stepped({ align: -1 });
      if (s.style === "dots") { one.paths = function () { return null; }; one.points = { show: true, size: 9, fill: color }; }
      if (s.style === "span") {
        one.stroke = "rgba(120,120,120,0.5)"; one.fill = "rgba(120,120,120,0.18)";
        one.paths = function () { return null; }; one.points = { show: false };
        var xs = c.x.filter(function (x, k) { return s.values[k] != null; });
        if (xs.length) spans.push({ i: i + 1, from: Math.min.apply(null, xs), to: Math.max.apply(null, xs) });
      }
      series.push(one);
    });
    function shade(u) {
      spans.forEach(function (sp) {
        if (!u.series[sp.i].show) return;
        var l = u.valToPos(sp.from, "x", true), r = u.valToPos(sp.to, "x", true);
        u.ctx.save();
        u.ctx.fillStyle = "rgba(120,120,120,0.18)";
        u.ctx.fillRect(Math.min(l, r), u.bbox.top, Math.max(Math.abs(r - l), 2), u.bbox.height);
        u.ctx.restore();
      });
    }
    var axes = [{ label: c.xlabel, values: c.percentile ? function (u, vals) { return vals.map(pct); } : undefined },
                { label: c.ylabel, scale: "y" }];
    if (c.y2label) axes.push({ label: c.y2label, scale: "y2", side: 1, grid: { show: false } });
    var scales = { x: { time: !!c.time }, y: { range: fromZero } };
    if (c.y2label) scales.y2 = { range: fromZero };
    var u = new uPlot({ title: c.title, width: width(root), height: 320, scales: scales, series: series, axes: axes, hooks: { drawClear: [shade] } }, data(c), el);
    return { plot: u, el: el, shape: shape(c), updates: 0 };
  }
  function draw(root, drawn, charts) {
    var names = {};
    charts.forEach(function (c, i) {
      names[c.name] = true;
      var d = drawn[c.name];
      if (d && d.shape === shape(c)) {
        d.plot.setData(data(c));
        d.updates += 1;
        d.el.setAttribute("data-updates", d.updates);
        return;
      }
      // In page order: before the next chart that is drawn already.
      var before = d ? d.el : null;
      for (var j = i + 1; j < charts.length && !before; j++) { if (drawn[charts[j].name]) before = drawn[charts[j].name].el; }
      drawn[c.name] = plot(root, c, before);
      if (d) { d.plot.destroy(); d.el.remove(); }
    });
    Object.keys(drawn).forEach(function (n) {
      if (!names[n]) { drawn[n].plot.destroy(); drawn[n].el.remove(); delete drawn[n]; }
    });
    return drawn;
  }
  return { draw: draw };
})();
