"""``python -m gateway_core`` is the ``relaygate`` command."""

import sys

from .cli import main

sys.exit(main())
