"""A team's admin at work in Chromium (Playwright, Debian's Chromium): from the
navigation to the team's page, adding a person, changing a role, making the team's
service key (its secret shown once), limiting and deleting it; every page checked
for accessibility and for scrolling sideways on a phone (:class:`.conftest.Walk`)."""

from __future__ import annotations

import re

from .test_teams import world  # noqa: F401  (the fixture)


def test_a_team_admin_manages_members_and_keys_in_the_browser(world, gateway, walk):  # noqa: F811
    eng = world["eng"]
    walker = walk(gateway.url)
    page = walker.page
    page.on("dialog", lambda dialog: dialog.accept())  # the confirmations of removing and deleting
    walker.sign_in("alice")
    page.click("header nav a:text-is('Teams')")
    page.wait_for_url("**/console/teams")
    assert page.locator("nav[aria-label=Console] a[aria-current=page]").inner_text() == "Teams"
    walker.check("teams")
    page.click("#teams a:text-is('eng')")
    page.wait_for_url(f"**/console/teams/{eng}")
    assert page.locator("h1").inner_text().startswith("eng")
    walker.check("team")

    # a person joins as a viewer, then becomes a member
    page.fill("#add-member input[name=name]", "dave")
    page.select_option("#add-member select[name=role]", "viewer")
    page.click("#add-member button[type=submit]")
    page.wait_for_selector("tr[data-member=dave]")
    assert page.input_value("tr[data-member=dave] select[name=role]") == "viewer"
    page.select_option("tr[data-member=dave] select[name=role]", "member")
    page.click("tr[data-member=dave] button:text-is('Save')")
    page.wait_for_selector("p.notice")
    assert page.input_value("tr[data-member=dave] select[name=role]") == "member"

    # the team's service key: its secret once, then listed as the team's
    page.fill("#new-team-key input[name=name]", "deploys")
    page.check("#new-team-key input[name=service]")
    page.click("#new-team-key button[type=submit]")
    page.wait_for_url(re.compile(r".*/console/teams/\d+/keys/\d+/created$"))
    secret = page.inner_text("#secret")
    assert secret.startswith("sk-")
    walker.check("team-key-created", phone=False)
    page.click(f"a[href='/console/teams/{eng}']")
    row = page.locator("#team-keys tr", has_text="deploys")
    assert "the team (service key)" in row.inner_text()
    key_id = row.get_attribute("data-key-id")

    # a budget on it, then it goes
    page.fill(f"tr[data-key-id='{key_id}'] input[name=daily]", "2.50")
    page.click(f"tr[data-key-id='{key_id}'] button:text-is('Save')")
    page.wait_for_selector("p.notice")
    assert page.input_value(f"tr[data-key-id='{key_id}'] input[name=daily]") == "2.50"
    page.click(f"tr[data-key-id='{key_id}'] button:text-is('Delete')")
    page.wait_for_selector("p.notice")
    assert page.locator(f"tr[data-key-id='{key_id}']").count() == 0

    # bob leaves the team
    page.click("tr[data-member=bob] button:text-is('Remove')")
    page.wait_for_selector("p.notice")
    assert page.locator("tr[data-member=bob]").count() == 0

    # the team's usage: the dashboard chooses the team
    page.click(f"a[href='/console/dashboard?team={eng}']")
    page.wait_for_url(f"**/console/dashboard?team={eng}")
    assert page.input_value("#team-choice") == str(eng)
    assert page.locator("#by-member").count() == 1
    walker.check("team-dashboard")
