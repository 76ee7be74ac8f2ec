"""The client's request, read by its protocol: whatever goes wrong there is the client's 400.

A client protocol validates the shape it reads (:mod:`gateway_core.json_body`,
then its own fields) and says what is wrong with an ``InvalidRequestError``.
Should a protocol's parsing or conversion fail some other way on input nobody
foresaw, the relay still answers 400 in the protocol's shape (never a 500: the
input is the client's), and logs the exception with the request id so the gap
in the protocol's checks can be closed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import structlog

from ..base.asgi import ClientGone
from ..errors import GatewayError, InvalidRequestError

log = structlog.get_logger("relaygate.request")


@contextlib.contextmanager
def reading_client_input(request_id: str, step: str) -> Iterator[None]:
    """Run one ``step`` of reading the client's request (``parse``, ``to_core`` …)."""
    try:
        yield
    except (GatewayError, ClientGone, MemoryError):
        raise
    except Exception as exc:
        log.warning("client request unreadable", step=step, error=f"{type(exc).__name__}: {exc}"[:500], exc_info=True)
        raise InvalidRequestError(
            f"The request has a shape this endpoint cannot read ({type(exc).__name__}); check its fields "
            f"against the API reference (request id: {request_id}).",
            code="invalid_request_shape",
        ) from None
