// Every poll of the server goes through cambrianFetch: when the server cannot be reached (it
// stopped, the network dropped, or the page is navigating away) the poll answers null instead of
// rejecting, and the page says so in one banner until a later poll gets through.
(function () {
  "use strict";
  function banner(show) {
    let element = document.getElementById("server-unreachable");
    if (!element && show) {
      element = document.createElement("div");
      element.id = "server-unreachable";
      element.className = "banner banner-error";
      element.setAttribute("role", "status");
      element.textContent = "The server is not answering; this page shows what it had and " +
        "catches up when the server is back.";
      document.body.prepend(element);
    }
    if (element) element.hidden = !show;
  }
  window.cambrianFetch = async function (url, options) {
    try {
      const response = await fetch(url, options);
      document.documentElement.dataset.server = "reachable";
      banner(false);
      return response;
    } catch (error) {
      if (error && error.name === "AbortError") return null;
      document.documentElement.dataset.server = "unreachable";
      banner(true);
      return null;
    }
  };
})();
