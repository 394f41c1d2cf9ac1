"""``python -m h5lake``: the h5lake command line."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
