// Relaygate console: copy buttons, confirmations, live refresh of the logs. No framework.
"use strict";

// The page's language: texts given by the page (#console-messages), English without them;
// "{name}" in a text is replaced by values.name.
window.relaygateText = (() => {
  const element = document.getElementById("console-messages");
  const messages = element ? JSON.parse(element.textContent) : {};
  return (text, values = {}) => (messages[text] || text).replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole));
})();

function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    return navigator.clipboard.writeText(text);
  }
  // plain-HTTP pages have no clipboard API: copy through a selected text area
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "offscreen";
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand("copy");
  document.body.removeChild(area);
  return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
}

document.addEventListener("click", (event) => {
  const copy = event.target.closest("[data-copy]");
  if (copy) {
    const source = document.getElementById(copy.dataset.copy);
    if (!source) return;
    const label = copy.textContent;
    copyText(source.textContent.trim()).then(
      () => { copy.textContent = window.relaygateText("Copied"); },
      () => { copy.textContent = window.relaygateText("Select and copy by hand"); }
    ).finally(() => setTimeout(() => { copy.textContent = label; }, 2000));
    return;
  }
  const confirmed = event.target.closest("[data-confirm]");
  if (confirmed && !window.confirm(confirmed.dataset.confirm)) {
    event.preventDefault();
  }
});

function startLive(box) {
  const target = document.getElementById(box.dataset.liveTarget);
  let timer = null;
  const refresh = async () => {
    const url = new URL(window.location.href);
    url.searchParams.set("fragment", "rows");
    try {
      const response = await fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } });
      if (response.ok && response.url.split("?")[0] === url.href.split("?")[0]) {
        target.innerHTML = await response.text();  // server-rendered, escaped rows
        labelCells(document);
      }
    } catch (error) { /* offline for a moment: try again next time */ }
  };
  const apply = () => {
    window.localStorage.setItem("relaygate.live", box.checked ? "1" : "0");
    if (timer) { clearInterval(timer); timer = null; }
    if (box.checked) { refresh(); timer = setInterval(refresh, 5000); }
  };
  box.checked = window.localStorage.getItem("relaygate.live") === "1";
  box.addEventListener("change", apply);
  apply();
}

// The channel form: only the chosen channel type's settings are shown (and read).
function showTypeSettings(select) {
  for (const fieldset of document.querySelectorAll("fieldset[data-type]")) {
    fieldset.hidden = fieldset.dataset.type !== select.value;
  }
}

// On a phone a list's rows read as cards: each cell is named by its column's heading.
function labelCells(root) {
  for (const table of root.querySelectorAll("table.list")) {
    const names = Array.from(table.querySelectorAll("thead th"), (th) => th.textContent.trim());
    for (const row of table.querySelectorAll("tbody tr")) {
      Array.from(row.children).forEach((cell, index) => {
        if (names[index] && cell.colSpan === 1) cell.dataset.label = names[index];
      });
    }
  }
}

// The header's theme switch (theme.js applies and keeps the choice).
function startThemeSwitch(select) {
  select.value = window.relaygateTheme.chosen();
  select.addEventListener("change", () => window.relaygateTheme.choose(select.value));
  select.closest("label").hidden = false;
}

// On a narrow screen the side navigation folds under the header's Menu button.
function startMenu(button) {
  const side = document.getElementById(button.getAttribute("aria-controls"));
  if (!side) return;
  button.hidden = false;
  button.addEventListener("click", () => {
    const open = button.getAttribute("aria-expanded") !== "true";
    button.setAttribute("aria-expanded", String(open));
    side.classList.toggle("open", open);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  labelCells(document);
  const theme = document.getElementById("theme-choice");
  if (theme && window.relaygateTheme) startThemeSwitch(theme);
  const menu = document.querySelector("button.menu[aria-controls]");
  if (menu) startMenu(menu);
  const live = document.querySelector("[data-live-target]");
  if (live) startLive(live);
  const typeSelect = document.querySelector("select[data-settings-switch]");
  if (typeSelect) {
    showTypeSettings(typeSelect);
    typeSelect.addEventListener("change", () => showTypeSettings(typeSelect));
  }
});
