"""``python -m chalk``: the same as the ``chalk`` command."""

import sys

from chalk.cli import main

sys.exit(main())
