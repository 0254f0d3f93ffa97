"""The real-server suite's check against its recorded matrix rows (resources/matrix/real/), the
same way the emulated suite checks resources/matrix/emulated/ (tests/emulators/recording.py)."""
from __future__ import annotations

import os
from typing import Any

import pytest

from pyspark_catalog_ext.doctor import matrix as support_matrix

RECORD = os.environ.get(support_matrix.RECORD_ENV) == "1"


def check_real(request: Any, server: Any, section: str, value: dict) -> None:
    """What the user saw on the real server must be what its recording says (or, with
    CATALOG_EXT_RECORD_MATRIX=1, becomes it): else fail with a one-line diff and the command."""
    command = (f"{support_matrix.RECORD_ENV}=1 .venv/bin/python -m pytest '{request.node.nodeid}' "
               "&& .venv/bin/python scripts/update_matrix.py --readme")
    meta = {"family": server.family, "release": server.version, "profile": server.profile}
    problem = support_matrix.check_emulated(f"{server.family}-{server.version}", section, value, meta, record=RECORD,
                                            command=command, directory=support_matrix.REAL_DIR,
                                            source=support_matrix.REAL_SOURCE)
    if problem:
        pytest.fail(problem, pytrace=False)
