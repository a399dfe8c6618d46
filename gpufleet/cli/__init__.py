"""The `gpufleet` command. Exit status: 0 clean, 1 a mandatory policy or check failed, 2 invalid input,
3 an internal error (one line; `--debug` anywhere on the command line prints the traceback)."""

from __future__ import annotations

import os
import sys
import traceback

from .. import collector
from . import authoring, diff, images, lock, plan, policy, preflight, quote  # noqa: F401  (each registers its commands on the app)
from .app import app, err

__all__ = ["app", "main"]

EXIT_INTERNAL = 3
DEBUG_FLAG = "--debug"


def main() -> None:
    """Run the CLI; an unexpected exception exits 3 (1 means a policy failed), with its traceback on --debug."""
    args = sys.argv[1:]
    debug = DEBUG_FLAG in args
    collector.skip_collection_at_exit()
    # pydantic reads every installed distribution's entry points for its plugins the first time it builds a
    # validator (~5 ms of a command); none has any business with the CLI's own models. A user's setting stands.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        with collector.paused():  # a short process: see gpufleet/collector.py
            app(args=[arg for arg in args if arg != DEBUG_FLAG], prog_name="gpufleet")
    except Exception as exc:  # the one place that turns any internal error into exit 3
        if debug:
            traceback.print_exc()
        else:
            err.print(
                f"internal error: {type(exc).__name__}: {exc}; run the same command with {DEBUG_FLAG} and report "
                "the traceback as an issue of the gpufleet project"
            )
        sys.exit(EXIT_INTERNAL)
