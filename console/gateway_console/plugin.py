"""Entry point of the console."""
