// Refreshes the console's Overview from /console/overview.json, which
// carries the figures as the page shows them: each element with
// data-figure gets its text, each tbody with data-table its rows. The
// page reads the same without this script, as of its load.
"use strict";
(function () {
  var root = document.getElementById("overview");
  if (!root) {
    return;
  }
  var period = parseInt(root.getAttribute("data-refresh-ms"), 10) || 5000;

  function fillTable(body, rows) {
    var cols = body.parentElement.querySelectorAll("thead th").length;
    var fresh = [];
    if (rows.length === 0) {
      var tr = document.createElement("tr");
      var td = document.createElement("td");
      td.colSpan = cols;
      td.textContent = body.getAttribute("data-empty") || "";
      tr.appendChild(td);
      fresh.push(tr);
    }
    rows.forEach(function (cells) {
      var tr = document.createElement("tr");
      cells.forEach(function (cell, i) {
        var td = document.createElement("td");
        var th = body.parentElement.querySelectorAll("thead th")[i];
        if (th && th.classList.contains("num")) {
          td.className = "num";
        }
        td.textContent = cell;
        tr.appendChild(td);
      });
      fresh.push(tr);
    });
    body.replaceChildren.apply(body, fresh);
  }

  function apply(data) {
    root.querySelectorAll("[data-figure]").forEach(function (el) {
      var v = data.text[el.getAttribute("data-figure")];
      if (v !== undefined && el.textContent !== v) {
        el.textContent = v;
      }
    });
    root.querySelectorAll("tbody[data-table]").forEach(function (body) {
      var rows = data.tables[body.getAttribute("data-table")];
      if (rows) {
        fillTable(body, rows);
      }
    });
    root.removeAttribute("data-stale");
  }

  function refresh() {
    fetch("/console/overview.json", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (resp) {
        if (!resp.ok) {
          throw new Error("HTTP " + resp.status);
        }
        return resp.json();
      })
      .then(apply)
      .catch(function () {
        // Signed out or the server is away: say the figures are stale,
        // and keep trying.
        root.setAttribute("data-stale", "true");
      })
      .finally(function () {
        window.setTimeout(refresh, period);
      });
  }
  window.setTimeout(refresh, period);
})();
