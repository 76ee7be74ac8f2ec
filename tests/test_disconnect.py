"""The disconnect watch: a client hanging up cancels what the relay awaits, and
only that; the server's own cancellation still propagates."""

from __future__ import annotations

import asyncio

import pytest

from gateway_core.base.asgi import ClientGone
from gateway_core.request.disconnect import DisconnectWatch


class Client:
    """An ASGI ``receive`` whose next message is ``http.disconnect`` once ``hang_up`` is called."""

    def __init__(self) -> None:
        self.gone = asyncio.Event()
        self.reads = 0

    async def receive(self):
        self.reads += 1
        await self.gone.wait()
        return {"type": "http.disconnect"}

    def hang_up(self) -> None:
        self.gone.set()


async def until(condition, timeout: float = 5.0) -> None:
    """Wait until ``condition()`` holds, failing after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition never held"
        await asyncio.sleep(0.005)


async def test_a_disconnect_cancels_the_awaited_call_and_raises_client_gone():
    client = Client()
    cancelled = asyncio.Event()

    async def upstream():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    watch = DisconnectWatch(client.receive, delay=0.01)
    asyncio.get_running_loop().call_later(0.05, client.hang_up)
    with pytest.raises(ClientGone):
        await watch.run(upstream())
    assert cancelled.is_set() and watch.gone
    assert asyncio.current_task().cancelling() == 0  # our own cancellation was taken back
    with pytest.raises(ClientGone):  # gone for good
        await watch.run(asyncio.sleep(0))
    watch.close()


async def test_a_disconnect_before_the_watcher_starts_is_acted_on_when_it_does():
    client = Client()
    client.hang_up()
    watch = DisconnectWatch(client.receive, delay=0.05)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ClientGone):
        await watch.run(asyncio.sleep(10))
    assert 0.04 < loop.time() - started < 1


async def test_a_quick_call_never_starts_the_watcher_and_a_late_disconnect_is_only_noted():
    client = Client()
    watch = DisconnectWatch(client.receive, delay=0.05)
    assert await watch.run(asyncio.sleep(0, "answer")) == "answer"
    watch.close()
    await asyncio.sleep(0.08)
    assert client.reads == 0  # the timer was cancelled: no task, no read
    watch = DisconnectWatch(client.receive, delay=0)
    await until(lambda: client.reads == 1)  # the watcher started (a coarse tick, longer on a busy machine)
    client.hang_up()  # while nothing is awaited: noted, nothing cancelled
    await until(lambda: watch.gone)
    assert asyncio.current_task().cancelling() == 0
    watch.close()


async def test_the_servers_cancellation_still_propagates():
    client = Client()
    watch = DisconnectWatch(client.receive, delay=0)
    task = asyncio.ensure_future(watch.run(asyncio.sleep(10)))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    watch.close()


async def test_a_disabled_watch_never_reads():
    client = Client()
    client.hang_up()
    watch = DisconnectWatch(client.receive, enabled=False, delay=0)
    assert await watch.run(asyncio.sleep(0.02, "ok")) == "ok"
    assert client.reads == 0
    watch.close()
