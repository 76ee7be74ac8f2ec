"""Pytest fixtures of the PostgreSQL store, available to every test once the plugin is installed.

- ``relaygate_postgres_server``: the server tests run on, ``RELAYGATE_TEST_POSTGRES``
  (default: the machine's, as ``postgres``); the test is skipped when it is
  unreachable (failed when ``CI`` is set).
- ``relaygate_postgres_url``: a fresh database of its own for one test (``--db`` for
  a gateway on PostgreSQL), dropped after it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import pytest

T = TypeVar("T")
DEFAULT_TEST_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


@pytest.fixture(scope="session")
def relaygate_postgres_server() -> str:
    from .databases import UNREACHABLE, run_on_server
    from .faults import store_name

    server = os.environ.get("RELAYGATE_TEST_POSTGRES", DEFAULT_TEST_POSTGRES)
    try:
        _in_thread(lambda: run_on_server(server, "SELECT 1"))
    except UNREACHABLE as exc:
        reason = f"{store_name(server)} is unreachable ({type(exc).__name__}: {exc})"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: CI must run the PostgreSQL tests (.ci/run starts the server)")
        pytest.skip(f"{reason}; set RELAYGATE_TEST_POSTGRES=postgresql://user@host:port/db to run these tests")
    return server


@pytest.fixture
def relaygate_postgres_url(relaygate_postgres_server: str) -> Iterator[str]:
    from .databases import create_database, drop_database

    url = _in_thread(lambda: create_database(relaygate_postgres_server))
    yield url
    _in_thread(lambda: drop_database(relaygate_postgres_server, url))


def _in_thread(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to the end on a loop of its own (a fixture may run inside the test's loop)."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()  # type: ignore[arg-type]
