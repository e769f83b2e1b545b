// hookd dashboard: keep the page live. A page whose <main> has data-live
// follows the event stream (/v1/stream, Server-Sent Events) and, when an
// event concerns it, fetches itself again and swaps in the new <main>.
// data-live is "all" (any run event), "hook:NAME" or "run:ID". The page
// of a run in flight also follows the run's live output
// (/v1/runs/ID/output) into <pre id="live-output">, kept across refreshes.
(function () {
  "use strict";
  var main = document.getElementById("main");
  if (!main || !window.EventSource || !main.dataset.live) {
    return;
  }
  var timer = null;
  var busy = false;
  var again = false;

  function concerns(ev) {
    var live = main.dataset.live || "";
    if (!live) {
      return false;
    }
    var data = ev.data || {};
    if (live.indexOf("run:") === 0) {
      return data.run_id === live.slice(4);
    }
    if (live.indexOf("hook:") === 0) {
      return data.hook === live.slice(5);
    }
    return true;
  }

  // held reports whether the reader is busy with a form in <main> (typing
  // in it, or a fire form is open): the page waits for them to finish
  // before it refreshes.
  function held() {
    var a = document.activeElement;
    if (a && main.contains(a) && (a.tagName === "TEXTAREA" || a.tagName === "INPUT" || a.tagName === "SELECT")) {
      return true;
    }
    return main.querySelector("details.fire[open]") !== null;
  }

  function refresh() {
    timer = null;
    if (held()) {
      schedule(1000);
      return;
    }
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (resp) {
        return resp.ok ? resp.text() : null;
      })
      .then(function (text) {
        if (text === null) {
          return;
        }
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.getElementById("main");
        if (!fresh) {
          return;
        }
        if (held()) {
          again = true;
          return;
        }
        // Keep what the reader opened or closed.
        var open = {};
        main.querySelectorAll("details[data-key]").forEach(function (d) {
          open[d.dataset.key] = d.open;
        });
        fresh.querySelectorAll("details[data-key]").forEach(function (d) {
          if (d.dataset.key in open) {
            d.open = open[d.dataset.key];
          }
        });
        main.replaceChildren.apply(main, Array.prototype.slice.call(fresh.childNodes));
        showLive();
        if (fresh.dataset.live) {
          main.dataset.live = fresh.dataset.live;
        } else {
          delete main.dataset.live;
        }
        main.dataset.refreshed = String(Date.now());
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) {
          again = false;
          schedule(held() ? 1000 : 200);
        }
      });
  }

  function schedule(ms) {
    if (timer === null) {
      timer = window.setTimeout(refresh, ms);
    }
  }

  // The live output of the run in flight, as lines "LABEL | text"; the
  // last liveMax characters are kept.
  var liveText = "";
  var livePartial = {};
  var liveMax = 256 * 1024;

  function showLive() {
    var pre = document.getElementById("live-output");
    if (pre && pre.textContent !== liveText) {
      pre.textContent = liveText;
      pre.scrollTop = pre.scrollHeight;
    }
  }

  function addLive(line) {
    liveText += line + "\n";
    if (liveText.length > liveMax) {
      liveText = liveText.slice(liveText.length - liveMax);
    }
  }

  function followOutput(runID) {
    var out = new EventSource("/v1/runs/" + encodeURIComponent(runID) + "/output");
    out.onopen = function () {
      document.body.dataset.liveOutput = "open";
    };
    out.addEventListener("output", function (msg) {
      var c;
      try {
        c = JSON.parse(msg.data);
      } catch (e) {
        return;
      }
      var key = c.step + "\u0000" + c.stream;
      var s = (livePartial[key] || "") + (c.text || "");
      var i;
      while ((i = s.indexOf("\n")) >= 0) {
        addLive(c.step + " | " + s.slice(0, i));
        s = s.slice(i + 1);
      }
      livePartial[key] = s;
      showLive();
    });
    out.addEventListener("end", function (msg) {
      out.close(); // else EventSource reconnects
      var c = {};
      try {
        c = JSON.parse(msg.data);
      } catch (e) {}
      Object.keys(livePartial).forEach(function (k) {
        if (livePartial[k]) {
          addLive(k.split("\u0000")[0] + " | " + livePartial[k]);
        }
      });
      livePartial = {};
      if (c.dropped) {
        addLive("(" + c.dropped + " chunks of live output not shown: read too slowly; the run's record has the output)");
      }
      showLive();
      document.body.dataset.liveOutput = "ended";
    });
  }

  var livePre = document.getElementById("live-output");
  if (livePre && livePre.dataset.run) {
    followOutput(livePre.dataset.run);
  }

  var stream = new EventSource("/v1/stream?type=hook.**");
  stream.onopen = function () {
    document.body.dataset.stream = "open";
    // The stream starts now: what happened since the page was rendered
    // (or while the stream was down) is caught up by one refresh.
    schedule(0);
  };
  stream.onerror = function () {
    document.body.dataset.stream = "retrying";
  };
  stream.onmessage = function (msg) {
    var ev;
    try {
      ev = JSON.parse(msg.data);
    } catch (e) {
      return;
    }
    if (concerns(ev)) {
      schedule(150);
    }
  };
})();
