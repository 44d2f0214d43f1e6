// The dashboard's live pages: every data-refresh seconds, fetch this page again and swap in
// its <main>, but keep every <form> as it is (what a user is typing into a filter stays,
// focus included). Without script, a <noscript> meta refresh reloads the whole page instead.
"use strict";
(function () {
  const seconds = Number(document.body.dataset.refresh || 0);
  if (!(seconds > 0)) return;
  const footer = document.getElementById("refreshed");

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
  window.setTimeout(refresh, seconds * 1000);
})();
