"""Storage faults on cue: an apsw exec tracer that fails writes as a full disk would.

``WriteFaults.install(connection)`` sees every statement the connection runs; a write
(INSERT, UPDATE, DELETE, ...) fails with ``apsw.FullError`` when the plan says so: the
Nth write only (``fail_nth``), or every write while ``failing`` is set. Every write
site of the daemon goes through the connection, so none escapes the plan.

As a script (``python -m fakes.faults``), it runs irisd with writes failing while the
file named by ``IRIS_FAULT_FILE`` exists: an integration test creates and removes it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import apsw

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


class WriteFaults:
    def __init__(self, *, fail_nth: int = 0, failing: bool = False, switch: Path | None = None) -> None:
        self.fail_nth = fail_nth
        self.failing = failing
        self.switch = switch  # writes fail while this file exists
        self.writes = 0
        self.failed = 0

    def install(self, connection: apsw.Connection) -> WriteFaults:
        connection.exec_trace = self._trace
        return self

    def _trace(self, cursor: Any, sql: str, bindings: Any) -> bool:
        if sql.lstrip().upper().startswith(WRITES):
            self.writes += 1
            if self.failing or self.writes == self.fail_nth or (self.switch is not None and self.switch.exists()):
                self.failed += 1
                raise apsw.FullError("database or disk is full")
        return True


def main() -> int:
    from irisd.main import main as irisd_main
    from irisd.store import db, facade

    switch = Path(os.environ["IRIS_FAULT_FILE"])

    def open_with_faults(path: Path) -> apsw.Connection:
        connection = db.open_database(path)
        WriteFaults(switch=switch).install(connection)
        return connection

    facade.__dict__["open_database"] = open_with_faults  # what Store.open calls
    return irisd_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
