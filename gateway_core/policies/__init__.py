"""The built-in policies, in pipeline order: registered by :mod:`.plugin`."""
