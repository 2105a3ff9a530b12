"""``python -m scripted_model [--host H] [--port N]``: serve the scripted model until SIGTERM."""

import sys

from scripted_model.model import main

sys.exit(main())
