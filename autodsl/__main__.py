"""``python -m autodsl``: the command line (see autodsl.cli.main)."""
import sys

from autodsl.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
