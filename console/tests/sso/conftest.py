"""A real OpenID provider on loopback for the single sign-on tests: panva's
``oidc-provider`` (``make oidc-provider`` installs it, pinned, into the venv),
started by ``oidc_provider.mjs`` beside this file; the fixture ``oidc`` makes
one. Without node or the package these tests are skipped."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import IO

import pytest
from joserfc.jwk import RSAKey

SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
MODULES = Path(__file__).resolve().parents[3] / ".venv" / "oidc-provider" / "node_modules"
CLIENT_ID, CLIENT_SECRET = "relaygate-console", "console-secret-for-tests-only"
OTHER_CLIENT, OTHER_SECRET = "another-app", "another-secret"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def signing_key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256", "use": "sig"})


class RealProvider:
    """``oidc-provider`` in a node process on ``127.0.0.1:port``, with the console
    (and another app, whose redirect URI is ``other_redirect_uri``) registered as
    clients and the accounts of ``accounts``. Its ``issuer`` is its own URL, or the
    one given (a proxy in front of it, :mod:`.oidc_proxy`)."""

    def __init__(self, folder: Path, port: int | None = None, issuer: str | None = None) -> None:
        node = shutil.which("node")
        if node is None or not (MODULES / "oidc-provider").is_dir():
            pytest.skip("node or oidc-provider is not installed (make oidc-provider)")
        self.node = node
        self.folder = folder
        self.port = port or free_port()
        self.issuer = issuer or f"http://127.0.0.1:{self.port}"
        self.other_redirect_uri = "http://127.0.0.1:9/cb"
        self.accounts_file = folder / "accounts.json"
        self.key = signing_key("key-1")
        self.client_id, self.other_client = CLIENT_ID, OTHER_CLIENT
        self.process: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None

    def set_accounts(self, accounts: dict[str, dict]) -> None:
        """The accounts (login -> claims), read again at every sign-in."""
        self.accounts_file.write_text(json.dumps(accounts))

    def start(self, redirect_uri: str, post_logout_uri: str) -> RealProvider:
        clients = [
            {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "redirect_uris": [redirect_uri], "post_logout_redirect_uris": [post_logout_uri]},
            {"client_id": OTHER_CLIENT, "client_secret": OTHER_SECRET, "redirect_uris": [self.other_redirect_uri]},
        ]  # fmt: skip
        config = {"port": self.port, "issuer": self.issuer, "clients": clients, "jwks": {"keys": [self.key.as_dict(private=True)]}, "accounts": str(self.accounts_file)}
        (self.folder / "provider.json").write_text(json.dumps(config))
        if not self.accounts_file.exists():
            self.set_accounts({})
        env = {**os.environ, "OIDC_PROVIDER_MODULES": str(MODULES), "NODE_ENV": "test"}
        self._log = open(self.folder / "provider.log", "a")
        self.process = subprocess.Popen(
            [self.node, str(SCRIPT), str(self.folder / "provider.json")], env=env, text=True, stdout=subprocess.PIPE, stderr=self._log,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("listening"):
            self.stop()
            raise RuntimeError(f"oidc-provider did not start: {(self.folder / 'provider.log').read_text()[-2000:]}")
        return self

    def rotate(self, redirect_uri: str, post_logout_uri: str) -> None:
        """Start again on the same port with a new signing key (its old one gone)."""
        self.stop()
        self.key = signing_key(f"key-{time.monotonic_ns()}")
        self.start(redirect_uri, post_logout_uri)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        if self._log is not None:
            self._log.close()
        self.process, self._log = None, None

    @staticmethod
    def new_key(kid: str) -> RSAKey:
        """A signing key this provider does not hold."""
        return signing_key(kid)

    def settings(self, **extra: object) -> dict[str, object]:
        """``[plugins.console.sso]`` for this provider."""
        return {"issuer": self.issuer, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "scopes": ["openid", "email", "profile", "groups"], **extra}


@pytest.fixture
def oidc(tmp_path):
    """``oidc(issuer=None)``: a provider (not started yet: :meth:`RealProvider.start`), stopped after the test."""
    made: list[RealProvider] = []

    def make(issuer: str | None = None) -> RealProvider:
        made.append(RealProvider(tmp_path / f"provider-{len(made)}", issuer=issuer))
        made[-1].folder.mkdir()
        return made[-1]

    yield make
    for provider in made:
        provider.stop()
