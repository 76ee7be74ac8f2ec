"""Relaygate's azure adapter: the ``azure`` channel type (Azure OpenAI), built on the
openai adapter's channel type (``gateway_openai.channel``, its documented extension point)."""
