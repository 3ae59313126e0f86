"""``python -m courtroom.cli``."""

import sys

from courtroom.cli import main

sys.exit(main())
