// Live updates: one EventSource per page, fed by the run's events through the UI server.
// Every event is re-dispatched on `document` as a "run-event" CustomEvent; every element with a
// data-fragment URL is reloaded from it, at most once a second however many events arrive. When
// the run's feed closes (the run ended), the page reloads once so that its status and controls
// are current.
(function () {
  "use strict";
  const live = document.getElementById("live");
  if (!live || !window.EventSource) return;
  const fragments = Array.from(document.querySelectorAll("[data-fragment]"));
  const watched = live.dataset.watchCandidate ? Number(live.dataset.watchCandidate) : null;
  let dirty = false;
  let busy = false;

  async function refresh() {
    if (!dirty || busy || !fragments.length) return;
    dirty = false;
    busy = true;
    try {
      await Promise.all(fragments.map(async function (element) {
        const response = await cambrianFetch(element.dataset.fragment, { headers: { Accept: "text/html" } });
        if (response && response.ok) element.innerHTML = await response.text();
      }));
    } finally {
      busy = false;
    }
  }
  setInterval(refresh, 1000);
  window.cambrianRefresh = function () { dirty = true; refresh(); };

  const source = new EventSource(live.dataset.events);
  live.dataset.state = "connecting";
  source.onmessage = function (message) {
    let event;
    try { event = JSON.parse(message.data); } catch (e) { return; }
    if (event.kind === "hello") { live.dataset.state = "live"; return; }
    if (event.kind === "not_live") { live.dataset.state = "not live"; source.close(); return; }
    if (event.kind === "feed_closed") {
      live.dataset.state = "ended";
      source.close();
      setTimeout(function () { window.location.reload(); }, 300);
      return;
    }
    dirty = true;
    document.dispatchEvent(new CustomEvent("run-event", { detail: event }));
    if (watched !== null && event.kind === "evaluated" && event.payload &&
        event.payload.candidate_id === watched) {
      window.location.reload();
    }
  };
  source.onopen = function () { if (live.dataset.state === "reconnecting") live.dataset.state = "live"; };
  source.onerror = function () {
    if (source.readyState === EventSource.CLOSED) live.dataset.state = "closed";
    else if (live.dataset.state === "live") live.dataset.state = "reconnecting";
  };
})();
