"""Sub-commands of ``relaygate`` beyond the core set in :mod:`gateway_core.builtin`,
one small module per subject, each with a ``register(register)`` function."""

from . import billing, channels, limits

__all__ = ["billing", "channels", "limits"]
