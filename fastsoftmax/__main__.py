"""``python -m fastsoftmax``: the command line (see fastsoftmax.cli)."""
from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
