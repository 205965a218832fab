"""``python -m ascend_engine``: the ``ascend-engine`` command (see :mod:`ascend_engine.cli`)."""

import sys

from ascend_engine.cli import main

if __name__ == "__main__":
    sys.exit(main())
