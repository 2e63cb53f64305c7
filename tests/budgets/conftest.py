"""The operator's fixtures (a daemon whose runners are the stand-in ``claude -p``)."""

from tests.localagents.conftest import (  # noqa: F401  (fixtures)
    local_daemon,
    runner_bin,
    visible_root,
)
