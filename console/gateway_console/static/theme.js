// Relaygate console: the colour theme, applied before the page is drawn (loaded
// without defer in <head>). "system" (the default) follows prefers-color-scheme;
// "light" or "dark" is the reader's choice, kept in localStorage for every page.
"use strict";

window.relaygateTheme = (() => {
  const KEY = "relaygate.theme";
  const root = document.documentElement;
  root.classList.add("js");  // the side navigation collapses only when a script can open it

  function chosen() {
    try {
      const value = window.localStorage.getItem(KEY);
      return value === "light" || value === "dark" ? value : "system";
    } catch (error) {
      return "system";  // storage refused (a private window's settings): follow the system
    }
  }

  function apply(choice) {
    if (choice === "system") root.removeAttribute("data-theme");
    else root.setAttribute("data-theme", choice);
  }

  function choose(choice) {
    try {
      if (choice === "system") window.localStorage.removeItem(KEY);
      else window.localStorage.setItem(KEY, choice);
    } catch (error) { /* not kept: this page still changes */ }
    apply(choice);
    window.dispatchEvent(new CustomEvent("relaygate:theme"));  // charts take the new colours
  }

  apply(chosen());
  return { chosen, choose };
})();
