"""The built-in policies, in pipeline order: registered by :mod:`.plugin`.

They may import the contract (the ``Gateway`` they are handed), the request's state
(``request.context``, the quota's ``request.reservation``), the router's model lookup, the
store's port and the billing arithmetic; never the runtime, the admin operations or a
front (``pyproject.toml``'s import-linter contracts).
"""
