// shardq dashboard: a little plain JavaScript, no build step. The pages
// work without it; it adds confirmations and the live tail of recent tasks.
(function () {
  "use strict";

  // Ask before actions on every task of a listing.
  document.querySelectorAll("form[data-confirm]").forEach(function (f) {
    f.addEventListener("submit", function (e) {
      if (!window.confirm(f.dataset.confirm)) e.preventDefault();
    });
  });

  // Auto-refresh: the overview and queue pages re-read themselves every
  // few seconds and swap in their live parts ([data-live]): counts, chart,
  // alarms, tabs. The checkbox pauses it (remembered across pages); it
  // also waits while the tab is hidden or a row is selected for a bulk
  // action, so nothing the operator is doing is swept away.
  (function () {
    var box = document.getElementById("auto-refresh");
    if (!box) return;
    var interval = parseInt(box.dataset.interval, 10) || 5000;
    var key = "shardq.autoRefresh";
    try { box.checked = window.localStorage.getItem(key) !== "off"; } catch (e) {}
    box.addEventListener("change", function () {
      try { window.localStorage.setItem(key, box.checked ? "on" : "off"); } catch (e) {}
    });
    var busy = false;
    function refresh() {
      if (busy || !box.checked || document.hidden) return;
      if (document.querySelector("input.select:checked")) return;
      busy = true;
      fetch(location.href, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          // paused while the read was on its way: the operator asked for a still page
          if (!box.checked) return;
          var doc = new DOMParser().parseFromString(html, "text/html");
          var fresh = {};
          doc.querySelectorAll("[data-live]").forEach(function (el) { fresh[el.dataset.live] = el; });
          document.querySelectorAll("[data-live]").forEach(function (el) {
            var f = fresh[el.dataset.live];
            if (f) el.innerHTML = f.innerHTML;
          });
          document.body.dataset.refreshed = String(Date.now());
        })
        .catch(function () {})
        .then(function () { busy = false; });
    }
    window.setInterval(refresh, interval);
  })();

  // Bulk actions: a checkbox per row (in the bulk form by its form
  // attribute, so the page works without this); here: select all, the
  // count, and a confirmation before deleting.
  (function () {
    var bar = document.getElementById("bulk");
    if (!bar) return;
    var all = document.getElementById("select-all");
    function update() {
      var n = document.querySelectorAll("input.select:checked").length;
      bar.querySelectorAll("button").forEach(function (b) { b.disabled = n === 0; });
      var c = document.getElementById("selected-count");
      if (c) c.textContent = n ? n + " selected" : "";
    }
    document.querySelectorAll("input.select").forEach(function (cb) { cb.addEventListener("change", update); });
    if (all) all.addEventListener("change", function () {
      document.querySelectorAll("input.select").forEach(function (cb) { cb.checked = all.checked; });
      update();
    });
    bar.addEventListener("submit", function (e) {
      var action = e.submitter ? e.submitter.value : "";
      if (action === "delete" && !window.confirm("Delete the selected tasks?")) e.preventDefault();
    });
    update();
  })();

  // Live tail: poll the recent feed oldest first after the newest marker
  // seen. The API's markers never skip an entry, so reading until a short
  // page after each tick shows every task enqueued since the page loaded.
  var table = document.getElementById("tasks");
  var toggle = document.getElementById("live-tail");
  if (!table || !toggle || !table.dataset.tailUrl) return;
  var tbody = table.tBodies[0];
  var marker = table.dataset.newer;
  var interval = parseInt(table.dataset.interval, 10) || 2000;
  var maxRows = 500;
  var busy = false;

  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text || "";
    tr.appendChild(td);
    return td;
  }

  function ago(iso) {
    if (!iso) return "";
    var s = Math.round((Date.now() - Date.parse(iso)) / 1000);
    if (s < 60) return Math.max(s, 0) + "s ago";
    if (s < 3600) return Math.floor(s / 60) + "m ago";
    return Math.floor(s / 3600) + "h ago";
  }

  function row(t) {
    var tr = document.createElement("tr");
    tr.className = "fresh";
    tr.dataset.id = t.id;
    var id = cell(tr, "", "id");
    var a = document.createElement("a");
    a.href = table.dataset.taskBase + "/" + encodeURIComponent(t.id);
    a.textContent = t.id;
    id.appendChild(a);
    cell(tr, t.type);
    var g = cell(tr, "", "group");
    if (t.group) {
      var gc = document.createElement("code");
      gc.textContent = t.group;
      g.appendChild(gc);
    }
    var p = cell(tr, "", "payload");
    var code = document.createElement("code");
    var text = t.payload === undefined ? "" : JSON.stringify(t.payload);
    code.textContent = text.length > 120 ? text.slice(0, 119) + "\u2026" : text;
    p.appendChild(code);
    var st = cell(tr, "");
    var badge = document.createElement("span");
    badge.className = "badge " + (t.state || "");
    badge.textContent = t.state || "gone";
    st.appendChild(badge);
    cell(tr, String(t.attempts || 0), "n");
    cell(tr, ago(t.enqueued_at));
    cell(tr, t.last_error, "error");
    if (table.tHead.rows[0].cells.length > tr.cells.length) cell(tr, "", "actions");
    return tr;
  }

  function add(tasks) {
    var none = tbody.querySelector("tr.none");
    if (none && tasks.length) none.remove();
    tasks.forEach(function (t) {
      tbody.insertBefore(row(t), tbody.firstChild);
    });
    while (tbody.rows.length > maxRows) tbody.deleteRow(tbody.rows.length - 1);
  }

  function poll() {
    if (busy || !toggle.checked) return;
    busy = true;
    var url = table.dataset.tailUrl + "&after=" + encodeURIComponent(marker);
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (page) {
        add(page.tasks);
        marker = page.next;
        table.dataset.newer = marker;
        busy = false;
        if (page.tasks.length === 100) poll(); // more waiting: catch up now
      })
      .catch(function (e) {
        busy = false;
        table.dataset.tailError = String(e);
      });
  }

  window.setInterval(poll, interval);
})();
