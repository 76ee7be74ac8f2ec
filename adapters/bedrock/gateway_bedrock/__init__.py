"""Relaygate adapter for Amazon Bedrock: the ``bedrock`` channel type (see docs/adapters/bedrock.md)."""
