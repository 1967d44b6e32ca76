import os
import socket
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def needs_shared(path: Path):
    """Skip a test whose shared data (../shared/data) is absent, saying which file; with
    pytest's -rs (set in pyproject.toml) the reason is printed in every run's summary."""
    return pytest.mark.skipif(
        not path.exists(),
        reason=f"shared data missing: {path} (this test reads it; see ../shared/data/README.md)",
    )


@pytest.fixture
def network_attempts(monkeypatch):
    """Every attempt to open a network connection during the test (none are let through);
    "fails fast offline" means this list stays empty."""
    attempts: list[tuple] = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


def pytest_collection_modifyitems(items):
    """Groups for pytest-xdist's ``--dist loadgroup`` (``make test`` runs two workers): a
    module's tests stay on one worker, so a module-scoped workflow run is made once, and the
    tests reading the shared small run (``small_run``) share one worker for the same reason.
    Without xdist the marks do nothing."""
    for item in items:
        group = "small_run" if "small_run" in item.fixturenames else item.module.__name__
        item.add_marker(pytest.mark.xdist_group(group))
