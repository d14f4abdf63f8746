// cronduit dashboard: small enhancements over pages that read fine without a script.
// - countdowns to each next run tick every second (the absolute time is always shown);
// - "/" focuses the job filter when not typing in a field;
// - a running run's log is followed live (Server-Sent Events) and its outcome updated.
(function () {
  "use strict";

  function countdownText(ms) {
    var s = Math.floor(ms / 1000);
    if (s <= 0) return "due now";
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
    var m = Math.floor((s % 3600) / 60), sec = s % 60;
    if (d) return "in " + d + "d " + h + "h";
    if (h) return "in " + h + "h " + m + "m";
    if (m) return "in " + m + "m " + sec + "s";
    return "in " + sec + "s";
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll(".countdown").forEach(function (el) {
      var iso = el.getAttribute("data-due");
      if (!iso) {
        var time = el.parentElement && el.parentElement.querySelector("time[datetime]");
        iso = time && time.getAttribute("datetime");
      }
      if (!iso) return;
      var due = Date.parse(iso);
      if (!isNaN(due)) el.textContent = countdownText(due - now);
    });
  }

  function typing(target) {
    if (!target || !target.tagName) return false;
    var tag = target.tagName.toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || target.isContentEditable;
  }

  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    var filter = document.getElementById("filter");
    if (!filter) return;
    event.preventDefault();
    filter.focus();
    filter.select();
  });

  function follow(log) {
    var url = log.getAttribute("data-follow");
    if (!url || !window.EventSource) return;
    var source = new EventSource(url);
    var cleared = false;
    source.onopen = function () {
      // the stream gives the log from its start: it replaces what the page was served with
      if (!cleared) { log.textContent = ""; cleared = true; }
    };
    source.onmessage = function (event) {
      if (!cleared) { log.textContent = ""; cleared = true; }
      var atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.appendChild(document.createTextNode(event.data + "\n"));
      if (atEnd) log.scrollTop = log.scrollHeight;
    };
    source.addEventListener("end", function (event) {
      source.close();
      log.removeAttribute("data-follow");
      var outcome = document.getElementById("outcome");
      var ended = {};
      try { ended = JSON.parse(event.data); } catch (e) { ended = {}; }
      if (outcome) {
        outcome.textContent = ended.outcome || "ended";
        outcome.className = "outcome " + (ended.outcome || "");
      }
    });
  }

  function start() {
    tick();
    window.setInterval(tick, 1000);
    var log = document.getElementById("log");
    if (log) follow(log);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
