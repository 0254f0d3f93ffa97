"""Catalog family emulators: each family's documented behaviour (shared/README.md §6) reproduced on
loopback in front of the real SeaweedFS, as a ``CatalogProxy`` plus a frozen ``Behaviour``."""
from .behaviour import FAMILIES, Behaviour
from .emulator import R2_TOKEN, Emulator, cli_args, connection

__all__ = ["FAMILIES", "Behaviour", "Emulator", "R2_TOKEN", "cli_args", "connection"]
