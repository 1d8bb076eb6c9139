// git ralph serve: keeps a page's live parts up to date from the server's
// events, and reconnects when the connection drops or the server comes
// back. Without JavaScript the pages still read; they just do not move.
(function () {
  "use strict";
  var body = document.body;
  var feed = body.getAttribute("data-feed");
  var live = document.getElementById("live");
  function say(text) { if (live) live.textContent = text; }
  function replace(id, html) {
    var node = document.getElementById(id);
    if (node) node.innerHTML = html;
  }
  function atBottom(node) {
    return node.scrollHeight - node.scrollTop - node.clientHeight < 40;
  }
  function append(html) {
    var box = document.getElementById("transcript-box");
    var lines = document.getElementById("transcript-lines");
    if (!lines) return;
    var follow = box && atBottom(box);
    lines.insertAdjacentHTML("beforeend", html);
    if (follow) box.scrollTop = box.scrollHeight;
  }
  var source = null;
  function connect() {
    if (!feed || !window.EventSource) return;
    source = new EventSource(feed);
    source.addEventListener("open", function () { say("live"); });
    source.addEventListener("main", function (e) { replace("main", e.data); });
    source.addEventListener("head", function (e) { replace("head", e.data); watchDiff(); });
    source.addEventListener("transcript", function (e) { replace("transcript", e.data); });
    source.addEventListener("lines", function (e) { append(e.data); });
    source.addEventListener("error", function () {
      if (source.readyState === EventSource.CLOSED) {
        source = null;
        // Refused, or cut off: which, the page itself says.
        fetch(location.pathname, { method: "HEAD", credentials: "same-origin" })
          .then(function (r) {
            if (r.status === 401) {
              say("the token changed: open the URL 'git ralph serve' printed");
            } else {
              say("offline, trying again…");
              setTimeout(connect, 3000);
            }
          })
          .catch(function () {
            say("offline, trying again…");
            setTimeout(connect, 3000);
          });
      } else {
        say("reconnecting…");
      }
    });
  }
  // The diff of an attempt at work is taken again every few seconds.
  var diffTimer = null;
  function watchDiff() {
    var diff = document.getElementById("diff");
    var head = document.getElementById("head");
    var running = head && head.querySelector("[data-running]");
    if (!diff || !diff.getAttribute("data-src")) return;
    if (running && !diffTimer) {
      diffTimer = setInterval(refreshDiff, 2000);
      refreshDiff();
    } else if (!running && diffTimer) {
      clearInterval(diffTimer);
      diffTimer = null;
      refreshDiff();
    }
  }
  function refreshDiff() {
    var diff = document.getElementById("diff");
    if (!diff) return;
    fetch(diff.getAttribute("data-src"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) diff.innerHTML = html; })
      .catch(function () {});
  }
  connect();
  watchDiff();
})();
