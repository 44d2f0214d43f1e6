// The dashboard's pages: every data-refresh seconds (a live page), fetch this page again and
// swap in its <main>, but keep every <form> as it is (what a user is typing into a filter
// stays, focus included). Without script, a <noscript> meta refresh reloads the whole page
// instead. A block the server has not computed yet carries data-fragment (its own URL, which
// answers once it is done): it is fetched and put in place, on any page, live or not.
"use strict";
(function () {
  const seconds = Number(document.body.dataset.refresh || 0);
  const footer = document.getElementById("refreshed");
  const fetching = new Set();

  async function fill(el) {
    const url = el.dataset.fragment;
    if (fetching.has(url)) return;
    fetching.add(url);
    try {
      const reply = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      const current = document.querySelector('[data-fragment="' + CSS.escape(url) + '"]');
      const block = current && current.closest("section") || current;
      if (!reply.ok) {
        if (current) current.textContent = "could not compute this (HTTP " + reply.status + ")";
        return;
      }
      const html = new DOMParser().parseFromString(await reply.text(), "text/html");
      const fresh = html.body.firstElementChild;
      if (block && fresh) block.replaceWith(fresh);
      document.body.dataset.filled = String(Date.now());
    } catch (e) {
      el.textContent = "could not fetch this (" + e + ")";
    } finally {
      fetching.delete(url);
    }
  }

  function fillAll() {
    document.querySelectorAll("[data-fragment]").forEach(fill);
  }

  function swap(fresh) {
    const main = document.querySelector("main");
    const next = fresh.querySelector("main");
    if (!main || !next) return;
    const old = Array.from(main.children);
    const now = Array.from(next.children);
    const sameShape = old.length === now.length && old.every((el, i) => el.tagName === now[i].tagName);
    if (sameShape) {
      old.forEach((el, i) => { if (el.tagName !== "FORM") el.replaceWith(now[i]); });
    } else {
      const forms = Array.from(main.querySelectorAll("form"));
      next.querySelectorAll("form").forEach((f, i) => { if (forms[i]) f.replaceWith(forms[i]); });
      main.replaceChildren(...Array.from(next.childNodes));
    }
    const stamp = fresh.getElementById("refreshed");
    if (footer && stamp) footer.textContent = stamp.textContent;
    document.body.dataset.updated = String(Date.now());
    fillAll();
  }

  async function refresh() {
    try {
      const reply = await fetch(window.location.href, { credentials: "same-origin", cache: "no-store" });
      if (reply.ok) {
        swap(new DOMParser().parseFromString(await reply.text(), "text/html"));
      } else if (footer) {
        footer.textContent = "refresh failed (HTTP " + reply.status + "); retrying";
      }
    } catch (e) {
      if (footer) footer.textContent = "refresh failed (" + e + "); retrying";
    }
    window.setTimeout(refresh, seconds * 1000);
  }
  fillAll();
  if (seconds > 0) window.setTimeout(refresh, seconds * 1000);
})();
