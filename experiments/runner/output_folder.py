"""An output folder has one writer, and its files are replaced whole or not at all.

One writer. ``claim(out)`` takes an advisory lock on ``out/.sparselab.lock`` (the
``filelock`` library: ``flock`` on POSIX) and records the holder (PID, host, start time) in
``out/.sparselab-writer.json``; the last ``release`` removes both (the lock file is unlinked
while still locked; filelock (>= 4) checks after locking that the file it locked still has a
name, so a process that opened the old file before it was unlinked never holds it beside
a new one), and removes ``out`` itself when the claim created it and nothing was written
there (a run that failed before its first file leaves no empty folder behind). A second
process asking for the folder is refused at once (``FolderBusy``, naming the holder's PID
and host), so two ``sparselab scale`` runs can never overwrite each other's rows. The
operating system drops the lock of a process that dies, however it dies; the next writer
finds the dead holder's record, takes the folder over and removes the temporary files it
left behind. Within a process the lock is re-entrant: the
sweep, its plots and ``config.json`` all write under the one claim.

Whole files. ``write_bytes``/``write_text``/``write_frame`` write a temporary file beside the
target and ``os.replace`` it over the target, so a reader (or a resume after a crash) sees the
old file or the new one, never half of one. The temporary file is created with mode 0666
minus the umask (0644 under the usual umask 022: what ``open`` gives every other file; the
``tempfile.mkstemp`` used before made ``results.csv`` 0600) and is removed on any failure. A
full disk and a refused permission become one-line ``OutputError`` messages naming the path.
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import secrets
import socket
import threading
import time

import filelock

__all__ = ["FolderBusy", "OutputError", "claim", "release", "writer", "holder",
           "write_bytes", "write_text", "write_frame", "make_folder", "prepare_folder",
           "LOCK_NAME", "HOLDER_NAME", "TEMP_PREFIX"]

#: The lock file and the holder's record, inside the folder.
LOCK_NAME = ".sparselab.lock"
HOLDER_NAME = ".sparselab-writer.json"
#: Prefix of the temporary files (``.<target name>.<random>.tmp``); older sparselab wrote
#: ``.results-*.csv``, removed too when a folder is taken over.
TEMP_PREFIX = "."
_TEMP_SUFFIX = ".tmp"
_OLD_TEMP_GLOB = ".results-*.csv"

_DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
_PERMISSION = {errno.EACCES, errno.EPERM, errno.EROFS}


class OutputError(ValueError):
    """A file of an output folder could not be written (disk full, no permission, …); the
    message is one line naming the path. A ``ValueError``, so the CLIs print it as one line."""


class FolderBusy(OutputError):
    """The folder is another live process's (``holder`` tells which)."""


# path (resolved) -> [FileLock, depth]; the lock is re-entrant within the process
_held: dict[pathlib.Path, list] = {}
_guard = threading.Lock()


def holder(out: str | os.PathLike) -> dict | None:
    """The record of the folder's last writer: {"pid", "host", "since" (Unix seconds),
    "alive" (bool or None where the host is another machine)}, None if there is none."""
    path = pathlib.Path(out) / HOLDER_NAME
    try:
        record = json.loads(path.read_text())
        record = {"pid": int(record["pid"]), "host": str(record["host"]),
                  "since": float(record.get("since", 0.0))}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    record["alive"] = _alive(record["pid"]) if record["host"] == socket.gethostname() else None
    return record


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def claim(out: str | os.PathLike) -> pathlib.Path:
    """Make this process the writer of folder ``out`` (created if missing), or refuse at once.

    Re-entrant: a process that holds ``out`` already only counts one more claim. The first
    claim writes the holder record and removes temporary files a dead writer left (nobody
    else can be writing them: the lock is ours).

    Arguments:
        out: the output folder.

    Returns:
        ``out`` as a ``pathlib.Path``.

    Raises:
        FolderBusy: another process holds the folder; the message names its PID and host.
        OutputError: the folder cannot be created or written (one line naming it).
    """
    out = pathlib.Path(out)
    key = out.resolve()
    with _guard:
        if key in _held:
            _held[key][1] += 1
            return out
        created = not out.exists()
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise OutputError(f"--out {out} is not writable: cannot create the folder "
                              f"({error.strerror or error})") from None
        # unlinked by ``release`` while still locked (filelock itself keeps it)
        lock = filelock.FileLock(str(out / LOCK_NAME), timeout=0, mode=_file_mode(),
                                 thread_local=False, preserve_lock_file=True)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise FolderBusy(_busy_message(out)) from None
        except OSError as error:
            raise _one_line(error, out / LOCK_NAME, "lock the folder") from None
        try:
            previous = holder(out)
            _remove_temporaries(out)
            write_text(out / HOLDER_NAME, json.dumps(
                {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(),
                 "took_over": previous if previous and previous["pid"] != os.getpid()
                 else None}))
        except BaseException:
            _unlink(out / LOCK_NAME)
            lock.release()
            _remove_if_empty(out, created)
            raise
        _held[key] = [lock, 1, created]
    return out


def _unlink(path: pathlib.Path) -> None:
    """Remove ``path`` if it can be (a read-only folder, or Windows, keeps it: harmless)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def _remove_if_empty(out: pathlib.Path, created: bool) -> None:
    """Remove folder ``out`` if this process's claim created it and it is empty."""
    if not created:
        return
    try:
        out.rmdir()  # refuses a folder that holds anything
    except OSError:
        pass


def release(out: str | os.PathLike) -> None:
    """Undo one ``claim(out)``; the last one removes the holder record, frees the lock (its
    file removed), and removes ``out`` when the claim created it and it is empty. Releasing a
    folder this process does not hold does nothing."""
    key = pathlib.Path(out).resolve()
    with _guard:
        entry = _held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del _held[key]
        try:
            (pathlib.Path(out) / HOLDER_NAME).unlink(missing_ok=True)
        except OSError:
            pass  # a read-only folder keeps the record; the free lock says it is stale
        _unlink(pathlib.Path(out) / LOCK_NAME)  # while locked: see the module's docstring
        entry[0].release()
        _remove_if_empty(pathlib.Path(out), entry[2])


class writer:
    """``with writer(out):`` — ``claim(out)`` for the block, ``release`` after it."""

    def __init__(self, out: str | os.PathLike):
        self.out = pathlib.Path(out)

    def __enter__(self) -> pathlib.Path:
        return claim(self.out)

    def __exit__(self, *exc) -> None:
        release(self.out)


def _busy_message(out: pathlib.Path) -> str:
    record = holder(out)
    for _ in range(10):  # the holder may have the lock and not have written its record yet
        if record is not None and record["alive"] is not False:
            break
        time.sleep(0.1)
        record = holder(out)
    who = "another process" if record is None else (
        f"process {record['pid']} on host {record['host']} (since "
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(record['since']))})")
    return (f"--out {out} is being written by {who}; wait for it to finish, or write to "
            f"another --out folder")


def _remove_temporaries(out: pathlib.Path) -> None:
    for path in [*out.glob(f"{TEMP_PREFIX}*{_TEMP_SUFFIX}"), *out.glob(_OLD_TEMP_GLOB)]:
        try:
            path.unlink()
        except OSError:
            pass


def _file_mode() -> int:
    """0666 minus the process's umask (the mode ``open`` gives a new file)."""
    with _guard_umask:
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


_guard_umask = threading.Lock()


def _one_line(error: OSError, path: pathlib.Path, what: str = "write") -> OutputError:
    """One line naming ``path`` and what went wrong, for a full disk, a refused permission or
    any other ``OSError``."""
    if error.errno in _DISK_FULL:
        reason = "the disk is full (no space left on device); free space and rerun to resume"
    elif error.errno in _PERMISSION:
        reason = (f"permission denied ({error.strerror}); make the folder writable and rerun "
                  f"to resume")
    else:
        reason = error.strerror or str(error)
    return OutputError(f"cannot {what} {path}: {reason}")


def _open_temp(tmp: pathlib.Path) -> int:
    """Create ``tmp`` for writing, mode 0666 minus the umask; fail if it exists."""
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_bytes(path: str | os.PathLike, data: bytes) -> pathlib.Path:
    """Replace file ``path`` by ``data`` atomically: a temporary file beside it
    (``.<name>.<random>.tmp``, mode 0666 minus the umask), written whole and synced, then
    ``os.replace``-d over ``path``. On any failure the temporary file is removed and
    ``path`` is left as it was.

    Returns:
        ``path`` as a ``pathlib.Path``.

    Raises:
        OutputError: disk full, permission refused or any other ``OSError``: one line naming
            ``path``.
        TypeError: ``data`` is not bytes-like.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    path = pathlib.Path(path)
    tmp = path.with_name(f"{TEMP_PREFIX}{path.name}.{secrets.token_hex(4)}{_TEMP_SUFFIX}")
    try:
        fd = _open_temp(tmp)
    except OSError as error:
        raise _one_line(error, path) from None
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as error:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(error, OSError):
            raise _one_line(error, path) from None
        raise
    return path


def write_text(path: str | os.PathLike, text: str) -> pathlib.Path:
    """``write_bytes(path, text.encode("utf-8"))``.

    Raises:
        TypeError: ``text`` is not a str; else as ``write_bytes``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return write_bytes(path, text.encode("utf-8"))


def make_folder(out: str | os.PathLike, name: str = "out") -> pathlib.Path:
    """Create folder ``out`` with its parents (nothing if it exists) and return it.

    Raises:
        OutputError: (a ValueError) the folder cannot be created — a parent is a file, ``out``
            is a file, no permission — in one line naming the parameter ``name`` and the path.
    """
    out = pathlib.Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"{name} {out}: cannot create the folder "
                          f"({error.strerror or error})") from None
    return out


def write_frame(frame, path: str | os.PathLike) -> pathlib.Path:
    """Write a pandas DataFrame as CSV (no index) atomically (``write_bytes``)."""
    return write_text(path, frame.to_csv(index=False))


def prepare_folder(out: str | os.PathLike, force: bool = False,
                   results: str = "results.csv") -> pathlib.Path:
    """Make ``out`` ready for a run's rows: create it, check that a file can be written there
    (one is written and removed), and with ``force`` remove its ``results`` file so that the
    run starts over. A sweep (``experiments.runner.sweep.prepare_out``) and an image
    experiment (``experiments.papers.real_data``) prepare their folders so, under the claim
    they hold (``writer``).

    Arguments:
        out: the output folder. force: remove ``out/results`` first (bool).
        results: the results file's name.

    Returns:
        ``out`` as a ``pathlib.Path``.

    Raises:
        ValueError: "--out OUT is not writable: …" (``out`` a file, or a folder that cannot
            be created or written); ``force`` not a bool.
    """
    from routing.validation import check_bool

    force = check_bool(force, "force")
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is not writable: it is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_bytes(out / ".write-test", b"")
        (out / ".write-test").unlink()
    except (OSError, OutputError) as error:
        raise ValueError(f"--out {out} is not writable: {error}") from None
    if force:
        (out / results).unlink(missing_ok=True)
    return out
