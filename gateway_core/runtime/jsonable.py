"""Records as JSON values, for the edges (the CLI's ``--json``, the console, the
management API): one cattrs converter, kept out of the records themselves.

Upstream secrets never leave through it: a channel's upstream keys and header
values come out masked, a disabled key is named by its position only.
"""

from __future__ import annotations

from typing import Any

import cattrs
from cattrs.gen import make_dict_unstructure_fn

from ..records import ChannelRecord, DisabledKey, mask_secret

converter = cattrs.Converter()


def _channel(channel: ChannelRecord) -> dict[str, Any]:
    data: dict[str, Any] = _channel_fields(channel)
    data["api_keys"] = list(channel.masked_keys())
    data["headers"] = {name: mask_secret(value) for name, value in channel.headers.items()}
    return data


def _disabled_key(key: DisabledKey) -> dict[str, Any]:
    """Which upstream key (by position) is disabled and why; not its fingerprint."""
    return {"index": key.index, "reason": key.reason, "at": key.at}


converter.register_unstructure_hook(DisabledKey, _disabled_key)
_channel_fields = make_dict_unstructure_fn(ChannelRecord, converter)  # after the hooks it uses
converter.register_unstructure_hook(ChannelRecord, _channel)


def to_jsonable(obj: Any) -> Any:
    """``obj`` (a record, or dicts, lists and tuples of them) as JSON values."""
    return converter.unstructure(obj)
