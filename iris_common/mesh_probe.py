"""A look at the mesh from outside irisd, for ``iris mesh status`` and ``iris doctor``:
connect with this irisd's settings, read the directory, disconnect. Plain asyncio (the
CLI runs no trio loop); it writes nothing."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

import msgspec

from iris_common.mesh import (
    HOMES_BUCKET,
    TEAMS_BUCKET,
    FirstReading,
    HomeEntry,
    Mesh,
    TeamEntry,
    inbox_prefix,
    permission_refused,
    permission_words,
    read_claim,
    team_homes,
)

if TYPE_CHECKING:
    from nats.js import JetStreamContext
    from nats.js.kv import KeyValue

T = TypeVar("T")

TIMEOUT_S = 5.0
SKEW_LIMIT_S = 2.0  # clocks further apart than this make "since" and "last seen" misleading


class MeshView(msgspec.Struct):
    server: str = ""
    problem: str = ""  # why the mesh could not be read ("" when it could)
    fix: str = ""  # what to do about ``problem``, where the probe knows better than its readers
    jetstream: bool = False
    homes: dict[str, HomeEntry] = msgspec.field(default_factory=dict)
    teams: dict[str, TeamEntry] = msgspec.field(default_factory=dict)
    read_at: float = 0.0


def look(mesh: Mesh) -> MeshView:
    """The mesh as the servers have it now (``problem`` says what failed)."""
    # A thread of its own: asyncio.run refuses to start where an event loop already runs
    # (a caller that is itself inside one), and the probe must answer from anywhere.
    try:
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="iris-mesh-probe") as pool:
            return pool.submit(lambda: asyncio.run(asyncio.wait_for(_look(mesh), TIMEOUT_S * 2))).result()
    except TimeoutError:
        return MeshView(problem=f"the NATS server at {', '.join(mesh.servers)} did not answer in time")


async def _look(mesh: Mesh) -> MeshView:
    import nats
    import nats.errors
    import nats.js.errors

    view = MeshView(read_at=time.time())
    errors: list[Exception] = []

    refused = asyncio.Event()  # the server refused a request: nats-py would wait out its timeout

    async def on_error(exc: Exception) -> None:
        # Kept for the problem's words; nats-py's default logs each one with a traceback.
        errors.append(exc)
        if permission_refused(str(exc)):
            refused.set()

    try:
        client = await nats.connect(
            servers=list(mesh.servers), user=mesh.user or None, password=mesh.password or None,
            token=mesh.token or None, user_credentials=mesh.creds or None, connect_timeout=2,
            allow_reconnect=False, max_reconnect_attempts=1, name=f"iris doctor ({mesh.name})",
            error_cb=on_error, inbox_prefix=inbox_prefix(mesh.name),
        )
    except Exception as exc:
        cause = errors[-1] if errors else exc  # "no servers available" hides why
        words = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        view.problem = f"cannot reach the NATS server at {', '.join(mesh.servers)}: {words}"
        return view
    try:
        url = client.connected_url
        view.server = url.netloc if url else ""
        js = client.jetstream(timeout=TIMEOUT_S)
        try:
            await _unless(refused, js.account_info())
            view.jetstream = True
        except (nats.js.errors.ServiceUnavailableError, nats.errors.NoRespondersError, nats.errors.TimeoutError):
            if not _refused(view, errors, mesh):
                view.problem = f"the NATS server at {view.server} has no JetStream; start it with -js"
            return view
        try:
            await _unless(refused, _read_directory(js, view))
        except (nats.errors.Error, TimeoutError) as exc:  # a refusal comes as a request nobody answers
            if not _refused(view, errors, mesh):
                view.problem = (f"the NATS server at {view.server} did not give the mesh's directory: "
                                f"{type(exc).__name__}" + (f": {exc}" if str(exc) else ""))
    finally:
        await client.close()
    return view


async def _unless(refused: asyncio.Event, work: Awaitable[T]) -> T:
    """``work``'s result, or TimeoutError as soon as the server refuses a request (its
    answer never comes: nats-py would wait ``TIMEOUT_S`` for it)."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(refused.wait())
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
    if not task.done():
        task.cancel()
        raise TimeoutError("refused")
    return task.result()


def _refused(view: MeshView, errors: list[Exception], mesh: Mesh) -> bool:
    """Say in ``view`` what the server refused this irisd's user, and the fix (False
    when it refused nothing)."""
    denied = [str(error).strip() for error in errors if permission_refused(str(error))]
    if not denied:
        return False
    who, view.fix = permission_words(mesh)
    view.problem = f"the NATS server at {view.server} refused {who}: {denied[-1]}"
    return True


async def _read_directory(js: JetStreamContext, view: MeshView) -> None:
    """Both buckets into ``view`` (a bucket not made yet: no irisd has joined)."""
    import nats.js.errors

    claims: dict[str, tuple[int, TeamEntry]] = {}
    for bucket in (HOMES_BUCKET, TEAMS_BUCKET):
        try:
            kv = await js.key_value(bucket)
        except nats.js.errors.BucketNotFoundError:
            continue
        for entry in await first_values(kv):
            if entry.value is None or entry.operation in ("DEL", "PURGE"):
                continue
            if bucket == TEAMS_BUCKET:
                if (claim := read_claim(entry.key, entry.value)) is not None:
                    claims[entry.key] = (entry.revision or 0, claim)
                continue
            try:
                home = msgspec.json.decode(entry.value, type=HomeEntry)
            except msgspec.ValidationError:
                continue
            if entry.created is not None:
                created: object = entry.created
                home.server_at = created.timestamp() if hasattr(created, "timestamp") else 0.0
            view.homes[entry.key] = home
    view.teams = team_homes(claims)


async def first_values(kv: KeyValue) -> list[KeyValue.Entry]:
    """Every entry of the bucket as it is now (deletions too), read with a watch."""
    watcher = await kv.watchall()
    entries: list[KeyValue.Entry] = []
    reading = FirstReading()
    try:
        while not reading.done:
            entry = await watcher.updates(timeout=TIMEOUT_S)  # type: ignore[no-untyped-call]
            if entry is None:
                reading.marker((await kv.status()).values)
            else:
                entries.append(entry)
                reading.entry(entry.delta)
    finally:
        await watcher.stop()  # type: ignore[no-untyped-call]
    return entries
