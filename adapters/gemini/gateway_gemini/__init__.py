"""Relaygate adapter for Google Gemini: the Gemini client protocol and the ``gemini`` channel type."""
