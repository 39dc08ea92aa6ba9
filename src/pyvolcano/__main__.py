"""``python -m pyvolcano``: the same command as ``pyvolcano``."""

from pyvolcano.cli import main

if __name__ == "__main__":  # pragma: no cover
    main(prog_name="pyvolcano")
