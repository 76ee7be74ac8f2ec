"""``/api/docs``: Swagger UI from the package's own files (pinned, with its
licence), on the gateway's OpenAPI document. The page and its files reference
only the gateway's own URLs, and in a real browser (Debian's Chromium driven by
Playwright) the page renders every operation without one request elsewhere."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import requests

from relaygate_api.docs_page import STATIC, SWAGGER_UI_VERSION

CHROMIUM = os.environ.get("RELAYGATE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "api"
BUNDLE = STATIC / "swagger-ui" / "swagger-ui-bundle.js"


@pytest.fixture
def gateway(seed, start_gateway):
    seed.user("root", admin=True)
    return start_gateway()


def referenced(html: str) -> list[str]:
    return re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)


def test_the_page_and_its_files_come_from_the_package(gateway):
    page = requests.get(gateway.url + "/api/docs", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    urls = referenced(page.text)
    assert len(urls) == 4  # the stylesheet, the bundle, the start script, the document for readers without JavaScript
    for url in urls:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc and not url.startswith("/"), url  # relative: this gateway, under /api
        served = requests.get(urljoin(gateway.url + "/api/docs", url), timeout=10)
        assert served.status_code == 200, url
    script = requests.get(gateway.url + "/api/static/docs.js", timeout=10).text
    assert "validatorUrl: null" in script and not re.search(r"https?://", script)
    # the pinned release, unmodified, with its licence
    readme = (STATIC / "swagger-ui" / "README.md").read_text()
    assert f"**{SWAGGER_UI_VERSION}**" in readme
    assert f'PACKAGE_VERSION:"{SWAGGER_UI_VERSION}"' in BUNDLE.read_text()
    for name in ("swagger-ui-bundle.js", "swagger-ui.css"):
        digest = hashlib.sha256((STATIC / "swagger-ui" / name).read_bytes()).hexdigest()
        assert f"`{name}` {digest}" in readme.replace("\n  ", " ").replace(",\n", " "), name
    assert "Apache License" in (STATIC / "swagger-ui" / "LICENSE").read_text()
    bundle = requests.get(gateway.url + "/api/static/swagger-ui/swagger-ui-bundle.js", timeout=10)
    assert bundle.headers["content-type"].startswith(("text/javascript", "application/javascript")) and "etag" in bundle.headers
    assert requests.get(gateway.url + "/api/static/../plugin.py", timeout=10).status_code == 404


def test_the_page_renders_in_a_browser_without_a_request_elsewhere(gateway, tmp_path):
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.fail(f"Chromium is not installed at {CHROMIUM} (run `make install` as root, or `apt-get install -y chromium`).", pytrace=False)
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    requested: list[str] = []
    errors: list[str] = []
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, viewport={"width": 1280, "height": 900},
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"],
        )  # fmt: skip
        try:
            context.set_default_timeout(20_000)
            context.on("request", lambda request: requested.append(request.url))
            context.on("weberror", lambda error: errors.append(str(error.error)))
            page = context.new_page()
            page.goto(gateway.url + "/api/docs")
            expect(page.locator(".swagger-ui .info .title")).to_contain_text("Relaygate management API")
            expect(page.locator(".opblock-summary-path", has_text="/api/v1/wallet/redeem").first).to_be_visible()
            expect(page.locator(".opblock-summary-path", has_text="/api/v1/users/{user_id}/budgets").first).to_be_visible()
            page.locator(".opblock-summary-path", has_text="/api/v1/users/{user_id}/topups").first.click()
            expect(page.get_by_text("idempotency-key").first).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "docs.png"))
        finally:
            context.close()
            shutil.rmtree(tmp_path / "profile", ignore_errors=True)
    assert errors == []
    elsewhere = [url for url in requested if not url.startswith(gateway.url + "/") and not url.startswith("data:")]
    assert elsewhere == [] and any(url.endswith("/api/openapi.json") for url in requested)
