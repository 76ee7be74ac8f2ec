"""Dark mode follows the system's setting (``prefers-color-scheme``), and every
page keeps its text readable in both modes: Chromium emulates each scheme, and
the computed colour of every visible text is checked against the background it
is drawn on (WCAG contrast at least 4.5:1, 3:1 for large text)."""

from __future__ import annotations

import pytest

from .conftest import ARGS, CHROMIUM
from .test_browser import shot
from .test_dashboard import sign_in, world  # noqa: F401 (the world fixture: usage to show)

# every text node's element (and every form field) with the colours it is drawn in
CONTRAST = """(scope) => {
  const parse = (text) => { const m = text.match(/[\\d.]+/g) || []; return m.map(Number); };
  const lum = ([r, g, b]) => { const c = [r, g, b].map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]; };
  const over = (top, bottom) => { const a = top.length > 3 ? top[3] : 1; return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)); };
  function background(el) {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c.length > 3 && c[3] === 0) continue;
      layers.push(c);
      if (c.length === 3 || c[3] === 1) break;
    }
    let colour = [255, 255, 255];
    if (!layers.length || (layers[layers.length - 1].length > 3 && layers[layers.length - 1][3] < 1)) {
      colour = parse(getComputedStyle(document.documentElement).backgroundColor);
      if (colour.length > 3 && colour[3] === 0) colour = matchMedia("(prefers-color-scheme: dark)").matches ? [0, 0, 0] : [255, 255, 255];
    }
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  }
  const seen = new Set();
  const found = [];
  const root = document.querySelector(scope);
  if (!root) return found;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const elements = [...root.querySelectorAll("input:not([type=hidden]):not([type=checkbox]):not([type=radio]), select, textarea, button")];
  while (walker.nextNode()) { if (walker.currentNode.textContent.trim()) elements.push(walker.currentNode.parentElement); }
  for (const el of elements) {
    if (!el || seen.has(el)) continue;
    seen.add(el);
    if (el.closest("script, style, noscript, [hidden], .sr-only, [aria-hidden=true]") || el.disabled) continue;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (!box.width || !box.height || style.visibility === "hidden" || Number(style.opacity) === 0) continue;
    const fg = over(parse(style.color), background(el));
    const bg = background(el);
    const [a, b] = [lum(fg), lum(bg)];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    found.push({ text: (el.value || el.textContent).trim().slice(0, 40), tag: el.tagName, ratio: Math.round(ratio * 100) / 100, need, fg: style.color, bg: `rgb(${bg.map(Math.round)})` });
  }
  return found;
}"""

USER_PAGES = ["/dashboard", "/playground", "/keys", "/keys/new", "/keys?done=created", "/logs", "/wallet", "/models", "/tokens", "/quickstart", "/account", "/nowhere"]
ADMIN_PAGES = [
    "/dashboard", "/dashboard?view=mine", "/admin/channels", "/admin/channels/new", "/admin/users", "/admin/groups",
    "/admin/prices", "/admin/usage", "/admin/audit", "/admin/logs",
]  # fmt: skip


def check_page(page, url: str, scope: str) -> list[str]:
    page.goto(url)
    page.wait_for_load_state("load")
    if page.locator("figure[data-chart] .chart-data").count():
        page.wait_for_selector("figure[data-chart][data-drawn]")
    texts = page.evaluate(CONTRAST, scope)
    assert texts, f"no text checked on {url}"
    return [f"{url}: {t['tag']} {t['text']!r} {t['ratio']}:1 < {t['need']} ({t['fg']} on {t['bg']})" for t in texts if t["ratio"] < t["need"]]


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_every_page_follows_the_colour_scheme_and_stays_readable(scheme, seed, users, passwords, world, start_gateway):  # noqa: F811
    """Dark: the whole page. Light: each page's content (the header's colours
    belong to the base stylesheet, checked by the accessibility tests)."""
    from playwright.sync_api import sync_playwright

    gateway = start_gateway()
    scope = "body" if scheme == "dark" else "main"
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.goto(gateway.url + "/console/login")
            page.fill("input[name=name]", "alice")
            page.fill("input[name=password]", "wrong password")
            page.click("button[type=submit]")
            page.wait_for_selector(".error")
            problems += check_page(page, gateway.url + "/console/login", scope)
            body = page.evaluate("getComputedStyle(document.body).backgroundColor")
            assert body == ("rgb(13, 17, 23)" if scheme == "dark" else "rgb(255, 255, 255)"), body
            sign_in(page, gateway.url, "alice", passwords["alice"])
            for path in USER_PAGES:
                problems += check_page(page, gateway.url + "/console" + path, scope)
                if path in ("/dashboard", "/playground", "/wallet"):
                    shot(page, f"{scheme}-{path.strip('/')}")
            fg = page.evaluate("getComputedStyle(document.querySelector('main h1') || document.body).color")
            assert fg == ("rgb(230, 237, 243)" if scheme == "dark" else "rgb(27, 31, 36)"), fg
            context.clear_cookies()
            sign_in(page, gateway.url, "root", passwords["root"])
            for path in ADMIN_PAGES:
                problems += check_page(page, gateway.url + "/console" + path, scope)
                if path in ("/dashboard", "/admin/usage"):
                    shot(page, f"{scheme}-admin-{path.strip('/').replace('/', '-')}")
        finally:
            browser.close()
    assert not problems, "\n".join(problems)


def test_charts_take_the_schemes_colours(seed, users, passwords, world, start_gateway):  # noqa: F811
    from playwright.sync_api import sync_playwright

    gateway = start_gateway()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_context(color_scheme="light").new_page()
            sign_in(page, gateway.url, "alice", passwords["alice"])
            page.wait_for_selector("figure#chart-spend[data-drawn]")
            colour = "() => Chart.getChart(document.querySelector('#chart-spend canvas')).data.datasets[0].backgroundColor"
            assert page.evaluate(colour) == "#1f6feb"
            page.emulate_media(color_scheme="dark")  # the system's setting changes while the page is open
            page.wait_for_function(f"() => ({colour})() === '#58a6ff'")
            tick = "() => Chart.getChart(document.querySelector('#chart-spend canvas')).options.scales.y.ticks.color"
            assert page.evaluate(tick) == "#9da7b3"
        finally:
            browser.close()
