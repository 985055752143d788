/* Click a header of a table.sortable to sort by that column (numbers numerically). */
(function () {
  "use strict";
  function cellValue(row, index) {
    var cell = row.cells[index];
    var raw = cell.getAttribute("data-value");
    var text = raw !== null ? raw : cell.textContent.trim();
    var num = parseFloat(text);
    return { text: text, num: isNaN(num) || !/^[-+.\d]/.test(text) ? null : num };
  }
  function sortBy(table, index, header) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    rows.sort(function (a, b) {
      var x = cellValue(a, index), y = cellValue(b, index);
      var order;
      if (x.num !== null && y.num !== null) { order = x.num - y.num; }
      else if (x.num !== null) { order = -1; }
      else if (y.num !== null) { order = 1; }
      else { order = x.text.localeCompare(y.text); }
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.setAttribute("tabindex", "0");
      th.addEventListener("click", function () { sortBy(table, index, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, index, th); }
      });
    });
  });
})();
/* Printing opens every collapsed full table, so the PDF holds them all. */
window.addEventListener("beforeprint", function () {
  Array.prototype.forEach.call(document.querySelectorAll("details.full"), function (d) {
    d.open = true;
  });
});
