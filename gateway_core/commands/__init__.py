"""The core's ``relaygate`` sub-commands, one built-in plugin per subject, and
:mod:`gateway_core.commands.kit`, the helper kit every command (plugins' too) uses."""
