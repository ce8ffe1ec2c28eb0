// tcfl dashboard: progressive enhancement only. Every page works without this file.
"use strict";
document.documentElement.classList.add("js");

function pollBatches() {
  document.querySelectorAll("[data-poll-url]").forEach(function (item) {
    if (item.dataset.status === "done") return;
    var bar = item.querySelector("progress");
    var counts = item.querySelector("[data-field=counts]");
    var status = item.querySelector("[data-field=status]");
    function tick() {
      fetch(item.dataset.pollUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) {
          if (!r.ok) throw new Error("HTTP " + r.status);
          return r.json();
        })
        .then(function (b) {
          var finished = b.done + b.failed;
          bar.max = b.total;
          bar.value = finished;
          bar.textContent = finished + " of " + b.total;
          counts.textContent = finished + " of " + b.total + " finished (" + b.done + " done, " + b.failed + " failed)";
          status.textContent = b.status;
          status.className = "status s-" + b.status;
          item.dataset.status = b.status;
          if (b.status !== "done") {
            setTimeout(tick, 1500);
          } else if (!item.querySelector("[data-field=reload]")) {
            var link = document.createElement("a");
            link.href = location.pathname + location.search;
            link.textContent = "Reload to see the results";
            link.dataset.field = "reload";
            counts.after(link);
          }
        })
        .catch(function (err) {
          counts.textContent += " — live updates stopped (" + err.message + "); reload to update.";
        });
    }
    setTimeout(tick, 500);
  });
}

function setupTabs() {
  document.querySelectorAll("[data-tabs]").forEach(function (box) {
    var panels = Array.prototype.slice.call(box.children).filter(function (el) {
      return el.matches("section[data-tab-label]");
    });
    if (panels.length < 2) return;
    var list = document.createElement("div");
    list.setAttribute("role", "tablist");
    list.setAttribute("aria-label", "Files");
    var tabs = panels.map(function (panel, i) {
      var tab = document.createElement("button");
      tab.type = "button";
      tab.id = "tab-" + i;
      tab.setAttribute("role", "tab");
      tab.setAttribute("aria-controls", panel.id);
      tab.textContent = panel.dataset.tabLabel;
      panel.setAttribute("role", "tabpanel");
      panel.setAttribute("aria-labelledby", tab.id);
      panel.tabIndex = -1;
      var title = panel.querySelector(".file-title");
      if (title) title.classList.add("visually-hidden");
      tab.addEventListener("click", function () { select(i, false); });
      list.appendChild(tab);
      return tab;
    });
    function select(i, focus) {
      tabs.forEach(function (tab, j) {
        tab.setAttribute("aria-selected", String(i === j));
        tab.tabIndex = i === j ? 0 : -1;
        panels[j].hidden = i !== j;
      });
      if (focus) tabs[i].focus();
    }
    list.addEventListener("keydown", function (e) {
      var i = tabs.indexOf(document.activeElement);
      if (i < 0) return;
      var next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
      if (next === undefined) return;
      e.preventDefault();
      select((next + tabs.length) % tabs.length, true);
    });
    box.insertBefore(list, box.firstChild);
    box.selectFile = function (i) { if (i >= 0 && i < tabs.length) select(i, false); };
    // the page opens on the file of the first-ranked element, scrolled to it
    var first = panels.findIndex(function (p) { return p.hasAttribute("data-first-ranked"); });
    select(first >= 0 ? first : 0, false);
    if (first >= 0) scrollToLine(panels[first]);
  });
}

function scrollToLine(panel) {
  var line = panel.querySelector("#L" + panel.id.slice(5) + "-" + panel.dataset.firstLine);
  var scroller = panel.querySelector(".scroller");
  if (!line || !scroller) return;
  scroller.scrollTop += line.getBoundingClientRect().top - scroller.getBoundingClientRect().top - 24;
}

function flash(el) {
  document.querySelectorAll(".flash").forEach(function (f) { f.classList.remove("flash"); });
  el.classList.add("flash");
}

function showLine(hash) {
  var m = /^#L(\d+)-(\d+)$/.exec(hash || "");
  if (!m) return false;
  var box = document.querySelector("[data-tabs]");
  if (box && box.selectFile) box.selectFile(Number(m[1]));
  var line = document.getElementById(hash.slice(1));
  if (!line) return false;
  var pruned = line.closest("details.pruned");
  if (pruned) pruned.open = true;
  line.scrollIntoView({ block: "center" });
  flash(line);
  var box2 = line.querySelector(".mark");
  if (box2) box2.focus({ preventScroll: true });
  return true;
}

// The log pane holds windows of a log that may have millions of lines; gaps load on demand.
function logView() { return document.querySelector(".logview[data-triage]"); }

function fillGap(gap, at) {
  var view = logView();
  var url = "/triage/" + view.dataset.triage + "/log?first=" + gap.dataset.first + "&last=" +
    gap.dataset.last + "&at=" + at;
  gap.setAttribute("aria-busy", "true");
  return fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
    .then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    })
    .then(function (html) {
      var tpl = document.createElement("template");
      tpl.innerHTML = html;
      gap.replaceWith(tpl.content);
    })
    .catch(function (err) {
      gap.removeAttribute("aria-busy");
      gap.appendChild(document.createTextNode(" (could not load: " + err.message + ")"));
    });
}

function showLog(n) {
  var view = logView();
  if (!view) return;
  var row = document.getElementById("log-" + n);
  if (row) {
    row.scrollIntoView({ block: "center" });
    flash(row);
    return;
  }
  var gaps = view.querySelectorAll(".gap");
  for (var i = 0; i < gaps.length; i++) {
    var g = gaps[i];
    if (Number(g.dataset.first) <= n && n <= Number(g.dataset.last)) {
      fillGap(g, n).then(function () {
        var loaded = document.getElementById("log-" + n);
        if (loaded) { loaded.scrollIntoView({ block: "center" }); flash(loaded); }
      });
      return;
    }
  }
}

function setupLog() {
  var view = logView();
  if (!view) return;
  // open on the failure: scroll the pane (not the page) to the error message
  var errors = view.querySelectorAll(".logrow.err");
  if (errors.length && !location.hash) {
    var last = errors[errors.length - 1];
    view.scrollTop = last.offsetTop - view.clientHeight / 2;
  }
  view.addEventListener("click", function (e) {
    var gapLink = e.target.closest("a[data-gap]");
    if (gapLink) {
      e.preventDefault();
      var gap = gapLink.closest(".gap");
      fillGap(gap, Number(gap.dataset.first));
      return;
    }
    if (e.target.closest("a")) return;
    var row = e.target.closest(".logrow[data-target]");
    if (row && !window.getSelection().toString()) {
      history.replaceState(null, "", row.dataset.target);
      showLine(row.dataset.target);
    }
  });
}

function setupCode() {
  var toolbar = document.querySelector(".toolbar[data-js-only]");
  if (toolbar) {
    toolbar.hidden = false;
    toolbar.addEventListener("click", function (e) {
      var want = e.target.dataset && e.target.dataset.pruned;
      if (!want) return;
      document.querySelectorAll("details.pruned").forEach(function (d) { d.open = want === "open"; });
    });
  }
  var count = document.getElementById("mark-count");
  if (count) {
    document.addEventListener("change", function (e) {
      if (!e.target.matches || !e.target.matches("input.mark")) return;
      e.target.closest(".line").classList.toggle("marked", e.target.checked);
      var marked = Array.prototype.map.call(document.querySelectorAll("input.mark:checked"), function (c) {
        var parts = c.value.split("@");
        return parts.slice(1).join("@") + ":" + parts[0];
      });
      count.textContent = marked.length + (marked.length === 1 ? " line" : " lines") + " marked" +
        (marked.length ? ": " + marked.join(", ") : "") + ". Save to store it.";
    });
  }
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") return;
    var open = document.activeElement && document.activeElement.closest("details.log[open]");
    if (open) { open.open = false; open.querySelector("summary").focus(); }
  });
  document.addEventListener("toggle", function (e) {
    if (!e.target.matches || !e.target.matches("details.log") || !e.target.open) return;
    document.querySelectorAll("details.log[open]").forEach(function (d) { if (d !== e.target) d.open = false; });
  }, true);
  document.addEventListener("click", function (e) {
    var a = e.target.closest && e.target.closest("a[href^='#L']");
    if (a) { e.preventDefault(); history.replaceState(null, "", a.getAttribute("href")); showLine(a.getAttribute("href")); return; }
    var toLog = e.target.closest && e.target.closest("a[data-log]");
    if (toLog && logView()) {
      e.preventDefault();
      var open = toLog.closest("details.log[open]");
      if (open) open.open = false;
      showLog(Number(toLog.dataset.log));
    }
  });
  if (!showLine(location.hash)) {
    var m = /^#log-(\d+)$/.exec(location.hash);
    if (m) showLog(Number(m[1]));
  }
}

function setupSubmit() {
  var add = document.querySelector("[data-add-script]");
  var slots = document.getElementById("script-slots");
  if (!add || !slots) return;
  add.hidden = false;
  add.addEventListener("click", function () {
    var all = slots.querySelectorAll("fieldset.script");
    var n = all.length;
    var copy = all[n - 1].cloneNode(true);
    copy.dataset.slot = n;
    copy.querySelector("legend").textContent = "Script " + (n + 1);
    copy.querySelectorAll("[id]").forEach(function (el) { el.id = el.id.replace(/_\d+$/, "_" + n); });
    copy.querySelectorAll("[name]").forEach(function (el) { el.name = el.name.replace(/_\d+$/, "_" + n); el.value = ""; el.removeAttribute("aria-invalid"); el.removeAttribute("aria-describedby"); });
    copy.querySelectorAll("label[for]").forEach(function (el) { el.htmlFor = el.htmlFor.replace(/_\d+$/, "_" + n); });
    copy.querySelectorAll(".error").forEach(function (el) { el.remove(); });
    slots.appendChild(copy);
    copy.querySelector("input").focus();
  });
  slots.addEventListener("change", function (e) {
    if (e.target.type !== "file" || !e.target.files.length) return;
    var set = e.target.closest("fieldset.script");
    var path = set.querySelector("input[name^=script_path_]");
    if (path && !path.value) path.value = e.target.files[0].name;
  });
  var errors = document.getElementById("form-errors");
  if (errors) errors.focus();
}

document.addEventListener("DOMContentLoaded", function () {
  pollBatches();
  setupTabs();
  setupCode();
  setupLog();
  setupSubmit();
});
