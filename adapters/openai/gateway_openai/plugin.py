"""Entry point of the openai adapter (filled in by the adapter modules)."""
