/*
 * Search on the site opened from disk (site/index.html, a file:// page).
 *
 * mkdocs-material runs its search in a Web Worker, and browsers refuse to
 * start a Worker for a page opened from disk. Its offline plugin inlines the
 * search index for such pages (search/search_index.js) and expects a shim
 * that runs the worker another way; the one it adds by default is fetched
 * from a CDN, which an offline reader cannot reach. This is our own shim, in
 * the site: on file:// pages only, `Worker` runs the worker's script in a
 * hidden iframe of the page (a global scope of its own, as a worker has), and
 * messages travel both ways as events, asynchronously and in order, as they
 * do with a worker. Its file name says "iframe-worker", which is how the
 * offline plugin sees that a shim is there and adds no CDN script.
 */
(function () {
  "use strict";
  if (location.protocol !== "file:") {
    return;
  }

  class FrameWorker extends EventTarget {
    constructor(url) {
      super();
      this.onmessage = null;
      this.pending = []; // messages posted before the worker's script has run
      this.frame = document.createElement("iframe");
      this.frame.hidden = true;
      (document.body || document.documentElement).appendChild(this.frame);
      const scope = this.frame.contentWindow;
      // The worker's postMessage reaches this object's listeners.
      scope.postMessage = (data) => setTimeout(() => this.receive(data), 0);
      scope.importScripts = () => {
        throw new Error("importScripts: not available to a worker of a page opened from disk");
      };
      const script = scope.document.createElement("script");
      script.src = new URL(url, location.href).href;
      script.onload = () => {
        const pending = this.pending;
        this.pending = null;
        pending.forEach((data) => this.deliver(data));
      };
      script.onerror = () => this.dispatchEvent(new Event("error"));
      scope.document.head.appendChild(script);
    }

    receive(data) {
      const event = new MessageEvent("message", { data });
      if (typeof this.onmessage === "function") {
        this.onmessage(event);
      }
      this.dispatchEvent(event);
    }

    deliver(data) {
      const scope = this.frame.contentWindow;
      setTimeout(() => scope.dispatchEvent(new scope.MessageEvent("message", { data })), 0);
    }

    postMessage(data) {
      if (this.pending !== null) {
        this.pending.push(data);
      } else {
        this.deliver(data);
      }
    }

    terminate() {
      this.frame.remove();
    }
  }

  window.Worker = FrameWorker;
})();
