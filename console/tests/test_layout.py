"""The console's frame: operators' side navigation (one column beside the page at
1,280 px, folded under a Menu button on a phone), users' one row of links, the theme
switch (light, dark or the system's, kept across pages) and the icon."""

from __future__ import annotations

import pytest

from .conftest import PASSWORDS, PHONE, WIDE
from .test_dashboard import world  # noqa: F401 (usage to chart)
from .test_theme import check_page

pytestmark = pytest.mark.usefixtures("users")

USER_LINKS = ["/dashboard", "/playground", "/keys", "/teams", "/logs", "/wallet", "/models", "/tokens", "/quickstart"]
ADMIN_LINKS = USER_LINKS + ["/admin/channels", "/admin/users", "/admin/codes", "/admin/groups", "/admin/prices", "/admin/usage", "/admin/audit", "/account"]

# every link of the console's navigation: its path, where it is drawn, and whether it wraps
NAV_LINKS = """(selector) => [...document.querySelectorAll(selector + ' a')].map((a) => {
  const box = a.getBoundingClientRect();
  return { path: new URL(a.href).pathname.replace('/console', ''), left: box.left, top: box.top, right: box.right,
           bottom: box.bottom, lines: Math.round(box.height / parseFloat(getComputedStyle(a).lineHeight)) };
})"""


def sign_in(page, base: str, name: str) -> None:
    page.goto(base + "/console/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", PASSWORDS[name])
    page.click("button[type=submit]")
    page.wait_for_url("**/console/dashboard**")


def test_operators_get_a_side_navigation_that_does_not_wrap_at_1280_px(gateway, chromium):
    context, errors = chromium
    page = context.new_page()
    page.set_viewport_size(WIDE)
    sign_in(page, gateway.url, "root")
    header = page.locator("header.top").bounding_box()
    assert header["height"] < 60, header  # one row (before: the 15 links wrapped onto two)
    links = page.evaluate(NAV_LINKS, "nav.side")
    assert sorted(link["path"] for link in links) == sorted(ADMIN_LINKS)
    main = page.locator("main").bounding_box()
    for link in links:  # a column on the left of the page, every link on screen and on one line
        assert link["right"] <= main["x"] + 1 and link["left"] >= 0 and link["bottom"] <= WIDE["height"], link
        assert link["lines"] == 1, link
    assert len({round(link["left"]) for link in links}) == 1, "one column"
    assert [h.strip() for h in page.locator("nav.side h2").all_inner_texts()] == ["OVERVIEW", "USAGE AND LOGS", "USERS AND KEYS", "CHANNELS AND PRICES", "ACCOUNT"]
    assert page.locator("nav.side a[aria-current=page]").inner_text() == "Dashboard"
    page.click("nav.side a:text-is('Channels')")
    page.wait_for_url("**/console/admin/channels")
    assert page.locator("nav.side a[aria-current=page]").inner_text() == "Channels"
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDE["width"]
    assert not page.locator("button.menu").is_visible()

    # a phone: the navigation folds under the Menu button, which opens and closes it
    page.set_viewport_size(PHONE)
    assert not page.locator("nav.side").is_visible()
    menu = page.locator("button.menu")
    assert menu.is_visible() and menu.get_attribute("aria-expanded") == "false"
    menu.click()
    assert page.locator("nav.side").is_visible() and menu.get_attribute("aria-expanded") == "true"
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.click("nav.side a:text-is('Users')")
    page.wait_for_url("**/console/admin/users")
    assert not page.locator("nav.side").is_visible()
    assert not errors


def test_users_keep_one_row_of_links(gateway, chromium):
    context, errors = chromium
    page = context.new_page()
    page.set_viewport_size(WIDE)
    sign_in(page, gateway.url, "alice")
    assert page.locator("nav.side").count() == 0 and page.locator("button.menu").count() == 0
    links = page.evaluate(NAV_LINKS, "header.top nav[aria-label=Console]")
    assert [link["path"] for link in links] == USER_LINKS
    assert len({round(link["top"]) for link in links}) == 1, links  # one row
    assert "/admin/" not in page.content()
    assert not errors


def test_the_theme_switch_changes_the_page_and_is_kept_across_pages(gateway, chromium):
    context, errors = chromium  # the system's setting: light
    page = context.new_page()
    sign_in(page, gateway.url, "alice")
    background = "getComputedStyle(document.body).backgroundColor"
    assert page.evaluate(background) == "rgb(255, 255, 255)"
    assert page.input_value("#theme-choice") == "system"
    page.select_option("#theme-choice", "dark")
    assert page.evaluate(background) == "rgb(13, 17, 23)"
    assert page.evaluate("getComputedStyle(document.querySelector('main h1')).color") == "rgb(230, 237, 243)"
    page.reload()
    assert page.evaluate(background) == "rgb(13, 17, 23)" and page.input_value("#theme-choice") == "dark"
    page.goto(gateway.url + "/console/wallet")  # another page
    assert page.evaluate(background) == "rgb(13, 17, 23)"
    # the system turns dark, then the reader asks for light: the choice wins
    page.emulate_media(color_scheme="dark")
    page.select_option("#theme-choice", "light")
    assert page.evaluate(background) == "rgb(255, 255, 255)"
    page.reload()
    assert page.evaluate(background) == "rgb(255, 255, 255)"
    # back to the system's: dark again, and light when the system is
    page.select_option("#theme-choice", "system")
    assert page.evaluate(background) == "rgb(13, 17, 23)"
    page.emulate_media(color_scheme="light")
    assert page.evaluate(background) == "rgb(255, 255, 255)"
    page.reload()
    assert page.input_value("#theme-choice") == "system" and page.evaluate("document.documentElement.dataset.theme") is None
    assert not errors


@pytest.mark.parametrize(("system", "chosen"), [("light", "dark"), ("dark", "light")])
def test_a_chosen_theme_stays_readable_against_the_systems(system, chosen, gateway, chromium, seed, users):
    """Text, tables, forms and errors keep their contrast (4.5:1) in the theme chosen
    against the system's, side navigation and header included."""
    context, errors = chromium
    page = context.new_page()
    page.emulate_media(color_scheme=system)
    page.goto(gateway.url + "/console/login")
    page.evaluate(f"window.relaygateTheme.choose('{chosen}')")
    page.fill("input[name=name]", "root")
    page.fill("input[name=password]", "wrong password")
    page.click("button[type=submit]")
    page.wait_for_selector(".error")
    problems = check_page(page, gateway.url + "/console/login", "body")
    sign_in(page, gateway.url, "root")
    seed.topup(users["alice"], 1_500_000, note="for the theme")
    for path in ("/dashboard", "/admin/channels", "/admin/channels/new", f"/admin/users/{users['alice']}", "/admin/usage", "/wallet", "/keys/new"):
        problems += check_page(page, gateway.url + "/console" + path, "body")
    assert page.evaluate("document.documentElement.dataset.theme") == chosen
    assert not problems, "\n".join(problems)
    assert not errors


async def test_the_icon_is_served_and_linked(browsers):
    visitor = await browsers()
    async with visitor.http.get(visitor.base + "/favicon.ico") as answer:
        assert answer.status == 200 and answer.content_type == "image/svg+xml"
        assert (await answer.read()).startswith(b"<svg")
    _, page = await visitor.get("/console/login")
    assert '<link rel="icon" href="/console/static/favicon.svg" type="image/svg+xml">' in page
    async with visitor.http.get(visitor.base + "/console/static/favicon.svg") as answer:
        assert answer.status == 200 and answer.content_type == "image/svg+xml"


def test_charts_take_the_chosen_themes_colours(world, start_gateway, chromium):  # noqa: F811
    context, errors = chromium  # the system's setting: light
    gateway = start_gateway()
    page = context.new_page()
    sign_in(page, gateway.url, "alice")
    page.wait_for_selector("figure#chart-spend[data-drawn]")
    colour = "() => Chart.getChart(document.querySelector('#chart-spend canvas')).data.datasets[0].backgroundColor"
    assert page.evaluate(colour) == "#1f6feb"
    page.select_option("#theme-choice", "dark")
    page.wait_for_function(f"() => ({colour})() === '#58a6ff'")
    page.reload()
    page.wait_for_selector("figure#chart-spend[data-drawn]")
    assert page.evaluate(colour) == "#58a6ff"  # drawn dark from the start
    assert not errors
