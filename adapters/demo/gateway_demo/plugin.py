"""Entry point of the demo adapter."""
