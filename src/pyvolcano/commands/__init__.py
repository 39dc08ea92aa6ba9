"""CLI subcommands: every module here defines ``register(group)`` and is picked up by ``pyvolcano.cli``."""
