"""The charting library ships inside the package, pinned: the file is the one its
README names (version and checksum), its license beside it, served by the console
itself, and no page loads a script from anywhere else."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

import gateway_console

VENDOR = Path(gateway_console.__file__).parent / "static" / "vendor"

pytestmark = pytest.mark.usefixtures("users")


def test_the_vendored_chart_library_is_the_pinned_release_with_its_license():
    readme = (VENDOR / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `chart.umd.min.js`"))
    version, checksum = re.search(r"\| (\d+\.\d+\.\d+) \|.*\| `([0-9a-f]{64})` \|", row).groups()  # type: ignore[union-attr]
    library = (VENDOR / "chart.umd.min.js").read_bytes()
    assert hashlib.sha256(library).hexdigest() == checksum
    assert library.startswith(f"/*!\n * Chart.js v{version}\n".encode())
    assert "MIT License" in (VENDOR / "chart.js-LICENSE.md").read_text()


async def test_the_console_serves_it_and_pages_load_scripts_from_their_own_origin_only(gateway, browsers):
    alice = await browsers("alice")
    async with alice.http.get(gateway.url + "/console/static/vendor/chart.umd.min.js") as response:
        assert response.status == 200 and "javascript" in response.headers["content-type"]
        assert hashlib.sha256(await response.read()).digest() == hashlib.sha256((VENDOR / "chart.umd.min.js").read_bytes()).digest()
    for path in ("/console/dashboard", "/console/wallet", "/console/playground"):
        status, page = await alice.get(path)
        assert status == 200
        sources = re.findall(r'<script[^>]* src="([^"]+)"', page)
        assert sources and all(source.startswith("/console/static/") for source in sources), sources
        assert "https://" not in "".join(re.findall(r"<(?:script|link)[^>]*>", page))
