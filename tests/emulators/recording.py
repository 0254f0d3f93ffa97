"""The emulated suites' check against the recorded support matrix (resources/matrix/emulated/)."""
from __future__ import annotations

import os

import pytest

from pyspark_catalog_ext.doctor import matrix as support_matrix
from tests.emulators.behaviour import CHECKED_AGAINST_RECORDING, Behaviour

RECORD = os.environ.get(support_matrix.RECORD_ENV) == "1"


def check_matrix(request, b: Behaviour, section: str, value: dict) -> None:
    """What the user saw must be what the family's recording says (or, with
    CATALOG_EXT_RECORD_MATRIX=1, becomes it): else fail with a one-line diff and the command."""
    command = (f"{support_matrix.RECORD_ENV}=1 .venv/bin/python -m pytest '{request.node.nodeid}' "
               "&& .venv/bin/python scripts/update_matrix.py --readme")
    meta = {"family": b.family, "release": b.release, "profile": b.profile}
    if b.id in CHECKED_AGAINST_RECORDING:  # the emulator answers as a real server's recording does
        meta["checked_against"] = CHECKED_AGAINST_RECORDING[b.id]
    problem = support_matrix.check_emulated(b.id, section, value, meta, record=RECORD, command=command)
    if problem:
        pytest.fail(problem, pytrace=False)
