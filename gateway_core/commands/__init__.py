"""The ``relaygate`` program and the core's sub-commands.

``cli`` builds the parser from the registered commands and runs one; each other module is
one built-in plugin per subject (``scaffold`` makes a new adapter from the template);
:mod:`gateway_core.commands.kit` is the public helper kit every command (plugins' too)
uses. A front: it may import the contract, the admin layer and the runtime; nothing in
the core imports it but the contract (the kit's types) and the runtime's plugin loading,
which names its modules as strings.
"""
