"""``python -m gateway_core`` is the ``relaygate`` command."""

import sys

from .commands.cli import main

sys.exit(main())
