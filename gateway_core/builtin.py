"""The core's own plugin: built-in policies, migrations and commands,
registered through the same hooks as any third-party plugin."""
