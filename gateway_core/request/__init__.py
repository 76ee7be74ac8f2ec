"""The request path: one request from the client's bytes to the upstream and back.

The relay (``relay``; WebSocket sessions in ``session_relay``, requests over a WebSocket
in ``frame_relay``), the state of one request (``context``), streams relayed frame by
frame (``stream_pump``, ``stream_contract``, ``write_deadline``), the client going away
(``disconnect``), how a request ended (``outcome``) and its settlement (``settlement``,
``reservation``, ``recorder``), the observers told of it (``observing``), and the small
helpers it runs on (``key_cache``, ``client_input``, ``websocket_denial``; those it
shares with the contract are in ``base/``). It may import the contract, ``base/``,
routing, the store's port, the billing arithmetic, the policies and the runtime's
``Services`` it is handed; never the admin operations, the management API, the console
or a command.
"""
