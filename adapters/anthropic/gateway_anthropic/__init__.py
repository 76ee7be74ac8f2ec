"""Relaygate adapter: the Anthropic Messages client protocol and the ``anthropic`` channel type."""
