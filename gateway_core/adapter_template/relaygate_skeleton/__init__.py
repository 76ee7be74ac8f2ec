"""Relaygate adapter: the ``skeleton`` channel type.

It calls an upstream that speaks a small chat wire (``POST /api/chat``, answers
whole or streamed as newline-delimited JSON). The pure translations are in
:mod:`.wire`, the HTTP work in :mod:`.channel`, the plugin in :mod:`.plugin`, and
a fake upstream for the tests in :mod:`.fake_upstream`.
"""
