// judge review: keyboard first. p pass, f fail (1-9 pick the violated key, Enter saves),
// u unsure, s skip, z undo, r reveal the last verdict, n next (queue page). Clicking an
// event of the trace slice picks it as evidence. While an item is open the page renews its
// lease; a closed tab stops renewing and the lease expires, giving the item back.
(function () {
  "use strict";
  var body = document.body;
  var csrf = body.getAttribute("data-csrf") || "";
  var lease = parseFloat(body.getAttribute("data-lease") || "300");
  var form = document.getElementById("label-form");
  var lastActive = Date.now();

  function submit(f) {
    if (!f) { return; }
    if (f.requestSubmit) { f.requestSubmit(); } else { f.submit(); }
  }
  function typing(t) {
    if (!t || !t.tagName) { return false; }
    var tag = t.tagName;
    return tag === "TEXTAREA" || (tag === "INPUT" && t.type !== "radio" &&
      t.type !== "checkbox") || t.isContentEditable;
  }
  function choose(value) {
    var radio = document.getElementById("label-" + value);
    if (radio) { radio.checked = true; }
    form.classList.toggle("fail", value === "fail");
    document.getElementById("fail-hint").classList.toggle("hidden", value !== "fail");
  }
  function failing() {
    var radio = document.getElementById("label-fail");
    return radio && radio.checked;
  }
  function markPicked() {
    var rows = document.querySelectorAll("tr.event");
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i].querySelector("input[name=evidence]");
      rows[i].classList.toggle("picked", !!(r && r.checked));
    }
  }

  if (form) {
    var rows = document.querySelectorAll("tr.event");
    for (var i = 0; i < rows.length; i++) {
      rows[i].addEventListener("click", function (e) {
        var r = this.querySelector("input[name=evidence]");
        if (r && !r.disabled) { r.checked = true; markPicked(); }
      });
    }
    markPicked();
    var radios = form.querySelectorAll("input[name=label]");
    for (var j = 0; j < radios.length; j++) {
      radios[j].addEventListener("change", function () { choose(this.value); });
    }
    form.addEventListener("submit", function (e) {
      if (failing() && !document.getElementById("key").value) {
        e.preventDefault();
        document.getElementById("fail-hint").classList.remove("hidden");
        document.getElementById("key").focus();
      }
    });
    // The lease is renewed while the page is open and used; a closed tab lets it expire.
    var itemId = form.getAttribute("data-item");
    window.setInterval(function () {
      if (Date.now() - lastActive > 30 * 60 * 1000) { return; }
      fetch("/renew?id=" + encodeURIComponent(itemId), {
        method: "POST", credentials: "same-origin", headers: {"X-CSRF-Token": csrf}
      }).catch(function () {});
    }, Math.max(5, lease / 4) * 1000);
  }

  document.addEventListener("mousemove", function () { lastActive = Date.now(); });
  document.addEventListener("keydown", function (e) {
    lastActive = Date.now();
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    if (typing(e.target)) {
      if (e.key === "Escape") { e.target.blur(); }
      return;
    }
    var k = (e.key || "").toLowerCase();
    if (form) {
      if (failing() && /^[1-9]$/.test(e.key)) {
        var key = document.getElementById("key");
        var n = parseInt(e.key, 10);
        if (n < key.options.length) { key.selectedIndex = n; }
        e.preventDefault();
        return;
      }
      if (k === "enter" && failing()) { e.preventDefault(); submit(form); return; }
      if (k === "p" || k === "u") {
        e.preventDefault();
        choose(k === "p" ? "pass" : "unsure");
        submit(form);
        return;
      }
      if (k === "f") { e.preventDefault(); choose("fail"); return; }
      if (k === "s") { e.preventDefault(); submit(document.getElementById("skip-form")); return; }
    }
    if (k === "z") { e.preventDefault(); submit(document.getElementById("undo-form")); return; }
    if (k === "r") { e.preventDefault(); submit(document.getElementById("reveal-form")); return; }
    if (k === "n") {
      var next = document.getElementById("next");
      if (next) { e.preventDefault(); next.click(); }
    }
  });
  body.setAttribute("data-keys", "ready");  // the keys work from here on
})();
