"""``python -m app``: the same command line as the ``glshare`` console script."""
from app.cli import main

raise SystemExit(main())
