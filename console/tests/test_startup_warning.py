"""``relaygate serve`` warns once at start-up when the console is served on an
address other than loopback without ``secure_cookies``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gateway_core.testing import free_port

RELAYGATE = Path(sys.executable).parent / "relaygate"
WARNING = "console served on a non-loopback address without secure_cookies"


def start_up_output(tmp_path: Path, host: str, plugins: str) -> str:
    (tmp_path / "plugins.toml").write_text(plugins)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYGATE_")}
    args = [str(RELAYGATE), "serve", "--db", str(tmp_path / "gw.db"), "--host", host, "--port", str(free_port())]
    process = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 30
        assert process.stdout is not None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "serving" in line:
                break
    finally:
        process.terminate()
        process.wait(timeout=30)
    output = "".join(lines)
    assert "serving" in output, output
    return output


@pytest.mark.parametrize("host, settings, warned", [
    ("0.0.0.0", "", True),
    ("127.0.0.1", "", False),
    ("0.0.0.0", "[plugins.console]\nsecure_cookies = true\n", False),
])  # fmt: skip
def test_the_console_on_a_public_address_without_secure_cookies_is_warned_about(tmp_path, host, settings, warned):
    output = start_up_output(tmp_path, host, 'load = ["demo", "console"]\n' + settings)
    assert (output.count(WARNING) == 1) is warned, output
    assert "Traceback" not in output
