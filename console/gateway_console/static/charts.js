// Relaygate console: charts drawn with Chart.js (vendor/, loaded only on pages
// that have one) from the figures each chart's table shows, and times shown in
// the browser's own zone (UTC on hover).
"use strict";

(function () {
  const here = document.currentScript ? document.currentScript.src : "";
  const dark = window.matchMedia("(prefers-color-scheme: dark)");

  // --- times in the local zone --------------------------------------------------------

  // in the page's language (a Chinese page reads Chinese dates whatever the browser's
  // own), on a 24-hour clock as every other time in the console; a Chinese page writes
  // them as Chinese software does, in numbers: 2026-11-29 14:05
  const LANG = document.documentElement.lang || undefined;
  const NUMERIC = /^zh/i.test(LANG || "");
  const DAY = { year: "numeric", month: "short", day: "numeric" };
  const CLOCK = { hour: "2-digit", minute: "2-digit", hourCycle: "h23" };
  const TIME = { ...DAY, ...CLOCK };
  const NUMBERS = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hourCycle: "h23" };

  function localText(date, withClock) {
    if (!NUMERIC) return date.toLocaleString(LANG, withClock ? TIME : DAY);
    const part = {};
    for (const { type, value } of new Intl.DateTimeFormat("en-CA", NUMBERS).formatToParts(date)) part[type] = value;
    const day = `${part.year}-${part.month}-${part.day}`;
    return withClock ? `${day} ${part.hour}:${part.minute}` : day;
  }

  function utcText(date) {
    return date.toISOString().replace("T", " ").slice(0, 16) + " UTC";
  }

  function showLocalTimes(root) {
    for (const time of root.querySelectorAll("time[data-local]")) {
      const date = new Date(time.getAttribute("datetime"));
      if (Number.isNaN(date.getTime())) continue;
      time.title = utcText(date);
      time.textContent = localText(date, time.dataset.local !== "day");
    }
  }

  // --- charts ------------------------------------------------------------------------

  let library = null;

  function loadLibrary() {
    if (!library) {
      library = new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = new URL("vendor/chart.umd.min.js", here).href;
        script.onload = () => resolve(window.Chart);
        script.onerror = () => reject(new Error("Chart.js did not load"));
        document.head.appendChild(script);
      });
    }
    return library;
  }

  function colours() {
    const style = getComputedStyle(document.documentElement);
    const read = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
    const series = [];
    for (let i = 0; i < 7; i++) series.push(read(`--series-${i}`, "#1f6feb"));
    return { fg: read("--fg", "#1b1f24"), muted: read("--muted", "#5f6b76"), line: read("--line", "#d8dee4"), series };
  }

  function axisLabel(data, index) {
    if (!data.times) return data.labels[index];
    const date = new Date(data.times[index] * 1000);
    return data.step >= 86400
      ? date.toLocaleDateString(LANG, { month: "short", day: "numeric" })
      : date.toLocaleTimeString(LANG, CLOCK);
  }

  function tipTitle(data, index) {
    if (!data.times) return data.labels[index];
    const date = new Date(data.times[index] * 1000);
    return `${localText(date, data.step < 86400)} (${utcText(date)})`;
  }

  // The tooltip is HTML beside the canvas: the same texts as the table, readable and testable.
  function showTip(figure, data, context) {
    const tip = figure.querySelector(".chart-tip");
    const tooltip = context.tooltip;
    if (!tooltip || tooltip.opacity === 0 || !tooltip.dataPoints || !tooltip.dataPoints.length) {
      tip.hidden = true;
      return;
    }
    const index = tooltip.dataPoints[0].dataIndex;
    tip.replaceChildren();
    const title = document.createElement("strong");
    title.textContent = tipTitle(data, index);
    tip.appendChild(title);
    const unit = data.unit === "usd" ? " USD" : "";
    data.series.forEach((series, i) => {
      const line = document.createElement("div");
      line.className = "tip-line";
      const swatch = document.createElement("span");
      swatch.className = "tip-swatch";
      swatch.style.background = colours().series[i % 7];
      line.append(swatch, `${series.name}: ${series.texts[index]}${unit}`);
      tip.appendChild(line);
    });
    if (data.totals) {
      const line = document.createElement("div");
      line.className = "tip-total";
      line.textContent = window.relaygateText("Total: {value}", { value: `${data.totals[index]}${unit}` });
      tip.appendChild(line);
    }
    tip.dataset.index = String(index);
    tip.hidden = false;
    const box = figure.querySelector(".chart-box");
    const left = Math.min(Math.max(tooltip.caretX + 12, 0), box.clientWidth - tip.offsetWidth);
    tip.style.left = `${Math.max(left, 0)}px`;
    tip.style.top = `${Math.max(tooltip.caretY - tip.offsetHeight - 8, 0)}px`;
  }

  function config(figure, data) {
    const c = colours();
    const stacked = Boolean(data.stacked);
    return {
      type: data.kind === "line" ? "line" : "bar",
      data: {
        labels: data.labels.map((_, i) => axisLabel(data, i)),
        datasets: data.series.map((series, i) => ({
          label: series.name,
          data: series.values,
          backgroundColor: c.series[i % c.series.length],
          borderColor: c.series[i % c.series.length],
          borderWidth: data.kind === "line" ? 2 : 0,
          pointRadius: data.kind === "line" ? 2 : 0,
        })),
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        interaction: { mode: "index", intersect: false },
        scales: {
          x: { stacked, ticks: { color: c.muted, maxRotation: 0, autoSkip: true }, grid: { color: c.line } },
          y: { stacked, beginAtZero: true, ticks: { color: c.muted, precision: data.unit === "usd" ? undefined : 0 }, grid: { color: c.line } },
        },
        plugins: {
          legend: { labels: { color: c.fg, boxWidth: 12 } },
          tooltip: { enabled: false, external: (context) => showTip(figure, data, context) },
        },
      },
    };
  }

  function recolour(chart) {
    const c = colours();
    chart.data.datasets.forEach((dataset, i) => {
      dataset.backgroundColor = dataset.borderColor = c.series[i % c.series.length];
    });
    for (const axis of ["x", "y"]) {
      chart.options.scales[axis].ticks.color = c.muted;
      chart.options.scales[axis].grid.color = c.line;
    }
    chart.options.plugins.legend.labels.color = c.fg;
    chart.update();
  }

  function tableToggle(figure) {
    const button = figure.querySelector(".chart-toggle");
    const table = figure.querySelector(".chart-table");
    const set = (shown) => {
      table.classList.toggle("sr-only", !shown);  // still read by screen readers when hidden
      button.setAttribute("aria-expanded", String(shown));
      button.textContent = shown ? window.relaygateText("Hide the table") : window.relaygateText("Show the figures as a table");
    };
    button.hidden = false;
    set(false);
    button.addEventListener("click", () => set(button.getAttribute("aria-expanded") !== "true"));
  }

  async function drawCharts() {
    const figures = [...document.querySelectorAll("figure[data-chart]")].filter((f) => f.querySelector(".chart-data"));
    if (!figures.length) return;
    const Chart = await loadLibrary();
    const charts = [];
    for (const figure of figures) {
      const data = JSON.parse(figure.querySelector(".chart-data").textContent);
      const box = figure.querySelector(".chart-box");
      box.hidden = false;
      charts.push(new Chart(box.querySelector("canvas"), config(figure, data)));
      box.addEventListener("mouseleave", () => { figure.querySelector(".chart-tip").hidden = true; });
      tableToggle(figure);
      figure.dataset.drawn = "true";
    }
    dark.addEventListener("change", () => charts.forEach(recolour));
    window.addEventListener("relaygate:theme", () => charts.forEach(recolour));  // the header's theme switch
  }

  // A form with the browser's zone (minutes east of UTC): the server aligns hours and days on it.
  function askWithZone() {
    const field = document.querySelector("input[data-tz]");
    if (!field) return false;
    const offset = String(-new Date().getTimezoneOffset());
    field.value = offset;
    const url = new URL(window.location.href);
    if (!url.searchParams.has("tz") && offset !== "0") {
      url.searchParams.set("tz", offset);
      window.location.replace(url.href);
      return true;
    }
    return false;
  }

  // Choosing a date in the range form means custom dates.
  function customOnDate() {
    const select = document.querySelector(".span-form select[name=range]");
    if (!select) return;
    for (const input of document.querySelectorAll(".span-form input[type=date]")) {
      input.addEventListener("change", () => { if (input.value) select.value = "custom"; });
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    if (askWithZone()) return;
    customOnDate();
    showLocalTimes(document);
    drawCharts().catch((error) => { console.error(error); });
  });

  window.relaygateLocalTimes = showLocalTimes;
})();
