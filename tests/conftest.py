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
