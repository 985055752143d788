/* "Your weights": the CRS, its ranking, the change against AUROC and the Pareto front
   recomputed from the embedded per-cell utilities (the same formulas as crsbench.scoring). */
(function () {
  "use strict";
  var block = document.getElementById("wp-data");
  if (!block) { return; }
  var data = JSON.parse(block.textContent);
  var KEYS = ["P", "I", "W"];
  var sliders = {}, outs = {};
  KEYS.forEach(function (k) {
    sliders[k] = document.getElementById("wp-" + k);
    outs[k] = document.getElementById("wp-" + k + "-out");
  });
  var boxes = data.axes.map(function (a) { return document.getElementById("wp-ax-" + a); });

  function weights() {
    var raw = KEYS.map(function (k) { return Number(sliders[k].value); });
    var sum = raw[0] + raw[1] + raw[2];
    if (sum <= 0) { return data.defaults; }
    return { P: raw[0] / sum, I: raw[1] / sum, W: raw[2] / sum };
  }
  function kept() {
    var idx = [];
    boxes.forEach(function (b, j) { if (b.checked) { idx.push(j); } });
    return idx;
  }
  function allAxes(keep) { return keep.length === data.axes.length; }

  /* CRS of one cell: P (stored for all axes; prod(u) on a subset, exact reference),
     I = 1 - ||1 - u||_2 / sqrt(k), W = min(u). */
  function cellCrs(u, pStored, keep, w) {
    var gap = 0, worst = Infinity, prod = 1;
    keep.forEach(function (j) {
      var c = u[j];
      gap += (1 - c) * (1 - c);
      worst = Math.min(worst, c);
      prod *= Math.min(Math.max(c, 0), 1);
    });
    var p = allAxes(keep) ? pStored : prod;
    var ideal = 1 - Math.sqrt(gap) / Math.sqrt(keep.length);
    return w.P * p + w.I * ideal + w.W * worst;
  }
  function encoderCrs(e, keep, w) {
    var total = 0;
    e.u.forEach(function (u, c) { total += cellCrs(u, e.p[c], keep, w); });
    return total / e.u.length;
  }
  function ranks(values) {
    return values.map(function (v) {
      return 1 + values.filter(function (x) { return x > v; }).length;
    });
  }
  function front(keep) {
    return data.encoders.map(function (e, i) {
      return !data.encoders.some(function (o, j) {
        if (i === j) { return false; }
        var geq = keep.every(function (a) { return o.x[a] >= e.x[a]; });
        var gt = keep.some(function (a) { return o.x[a] > e.x[a]; });
        return geq && gt;
      });
    });
  }
  function signed(n) { return n > 0 ? "+" + n : n === 0 ? "0" : String(n); }

  function render() {
    var w = weights(), keep = kept();
    KEYS.forEach(function (k) { outs[k].textContent = w[k].toFixed(2); });
    var all = data.axes.map(function (_, j) { return j; });
    var mine = data.encoders.map(function (e) { return encoderCrs(e, keep, w); });
    var proto = data.encoders.map(function (e) { return encoderCrs(e, all, data.defaults); });
    var rMine = ranks(mine), rProto = ranks(proto), onFront = front(keep);
    var order = data.encoders.map(function (_, i) { return i; });
    order.sort(function (a, b) {
      return mine[b] - mine[a] || (data.encoders[a].name < data.encoders[b].name ? -1 : 1);
    });
    var body = document.querySelector("#wp-board tbody");
    body.textContent = "";
    order.forEach(function (i) {
      var e = data.encoders[i], tr = document.createElement("tr");
      var auroc = e.rank_auroc === null ? "—" : String(e.rank_auroc);
      var vsAuroc = e.rank_auroc === null ? "—" : signed(e.rank_auroc - rMine[i]);
      [String(rMine[i]), e.name, mine[i].toFixed(3), proto[i].toFixed(3),
       signed(rProto[i] - rMine[i]), auroc, vsAuroc, onFront[i] ? "yes" : ""
      ].forEach(function (text, c) {
        var td = document.createElement("td");
        td.textContent = text;
        if (c !== 1) { td.className = "num"; }
        tr.appendChild(td);
      });
      tr.setAttribute("data-encoder", e.name);
      body.appendChild(tr);
    });
    var names = data.encoders.filter(function (_, i) { return onFront[i]; })
      .map(function (e) { return e.name; });
    document.getElementById("wp-front").textContent = "Pareto front on " +
      keep.map(function (j) { return data.labels[j]; }).join(", ") + " (no other encoder " +
      "is at least as good on each and better on one): " + names.join(", ") + ".";
    var isDefault = allAxes(keep) && KEYS.every(function (k) {
      return Math.abs(w[k] - data.defaults[k]) < 1e-9;
    });
    document.getElementById("wp-status").textContent = isDefault
      ? "Protocol weights (what every static table shows)."
      : "Your weights: P " + w.P.toFixed(2) + " · I " + w.I.toFixed(2) + " · W " +
        w.W.toFixed(2) + " on " + keep.length + " of " + data.axes.length +
        " axes. Ranks: \u201cvs\u201d columns are places gained (+) or lost (\u2212).";
    return isDefault;
  }
  function save(isDefault) {
    var frag = "#weights=" + KEYS.map(function (k) { return k + sliders[k].value; }).join(",") +
      ";axes=" + kept().map(function (j) { return data.axes[j]; }).join(",");
    var url = location.href.split("#")[0] + (isDefault ? "" : frag);
    history.replaceState(null, "", url);
  }
  function load() {
    var m = /^#weights=([^;]*);axes=(.*)$/.exec(location.hash);
    if (!m) { return false; }
    m[1].split(",").forEach(function (part) {
      var k = part.charAt(0), v = Number(part.slice(1));
      if (sliders[k] && isFinite(v) && v >= 0 && v <= 100) { sliders[k].value = String(v); }
    });
    var names = m[2].split(",");
    if (data.exact) {
      boxes.forEach(function (b, j) { b.checked = names.indexOf(data.axes[j]) >= 0; });
      if (!kept().length) { boxes.forEach(function (b) { b.checked = true; }); }
    }
    return true;
  }
  function update() { save(render()); }
  function reset() {
    KEYS.forEach(function (k) { sliders[k].value = String(Math.round(data.defaults[k] * 100)); });
    boxes.forEach(function (b) { b.checked = true; });
    update();
  }
  KEYS.forEach(function (k) { sliders[k].addEventListener("input", update); });
  boxes.forEach(function (b) {
    b.addEventListener("change", function () {
      if (!kept().length) { b.checked = true; }
      update();
    });
  });
  document.getElementById("wp-reset").addEventListener("click", reset);
  window.addEventListener("hashchange", function () { if (load()) { render(); } });
  load();
  render();
})();
