"""Relaygate's vertex adapter: the ``vertex`` channel type (Google Cloud Vertex AI: Gemini
and Claude), built on the gemini and anthropic adapters' channel types (their documented
extension points)."""
