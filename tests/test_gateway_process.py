"""The test kit's ``GatewayProcess``: a port another process took between choosing
it and listening on it is chosen again, and a gateway that cannot start says why."""

from __future__ import annotations

import socket
import urllib.request

import pytest

from gateway_core import testing
from gateway_core.testing import GatewayProcess


def test_a_port_taken_meanwhile_is_chosen_again(seed, relaygate_config, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        real = testing.free_port
        monkeypatch.setattr(testing, "free_port", lambda host="127.0.0.1": next(ports, None) or real(host))
        gateway = GatewayProcess(relaygate_config.db_path)
        assert gateway.port == taken.getsockname()[1]
        with gateway:
            assert gateway.port != taken.getsockname()[1]
            with urllib.request.urlopen(gateway.url + "/healthz", timeout=5) as answer:
                assert answer.status == 200


def test_a_gateway_that_cannot_start_says_what_it_printed(seed, relaygate_config, tmp_path):
    plugins = tmp_path / "plugins.toml"
    plugins.write_text("[gateway]\nworkers = 'many'\n")
    with pytest.raises(RuntimeError, match="exited with status") as raised:
        GatewayProcess(relaygate_config.db_path, plugins_file=str(plugins)).start()
    assert any("workers" in note for note in raised.value.__notes__)
