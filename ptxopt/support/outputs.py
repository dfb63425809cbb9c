"""Writing the files a command produces: whole, or not at all.

Final outputs (``--json``, ``-o`` PTX, plots, checkpoints, pipelines files,
``train.json``) go through :func:`write_atomic` / :func:`atomic_path`: the
bytes go to a temporary file in the same folder, are flushed to the disk
(``fsync``) and renamed over the target in one step. A full disk (ENOSPC), a
file-size limit (EFBIG) or a read-only file system (EROFS) therefore leaves
the previous file as it was and raises :class:`OutputNotWritable` -- an
:class:`~ptxopt.kernels.inputs.InputError`, so the CLI prints one line naming the
path and exits 2 (``output-not-writable``).

Streamed outputs (``--record``, the training log) grow while the run goes
on; :class:`StreamLock` keeps two live runs from interleaving them: a sidecar
``PATH.lock`` held with ``flock`` for the run's lifetime (the kernel drops it
when the process ends, however it ends), and :func:`append_synced` appends
and fsyncs each record.

No output may name what the run reads or keeps: :func:`collision` says
which protected file or folder an output path would overwrite, comparing
resolved paths (symlinks) and inodes (hard links); the command line applies
it to every output option before any work (:mod:`ptxopt.cli.output_rule`).
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ptxopt.kernels.inputs import InputError


class OutputNotWritable(InputError):
    """An output file could not be written; the previous one (if any) is kept."""

    def __init__(self, path, err: OSError | str):
        why = err if isinstance(err, str) else (err.strerror or str(err))
        try:  # a name no file system holds (ENAMETOOLONG) must not raise again here
            kept = " (the previous file is kept)" if Path(path).exists() else ""
        except OSError:
            kept = ""
        super().__init__(f"output not writable: {path}: {why}{kept}")
        self.path = Path(path)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: str | Path, sync: bool = True):
    """A temporary path beside ``path`` for a writer that wants a file name
    (``savefig``, ``torch.save``); renamed over ``path`` once the block ends
    without an error. Raises :class:`OutputNotWritable`. ``sync=False`` skips
    the ``fsync`` calls: for caches, where a file lost in a crash is only
    recomputed, but a half-written one must still never be read."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        tmp = _new_temp(folder, path.name)
    except OSError as e:
        raise OutputNotWritable(path, e) from None
    try:
        yield Path(tmp)
        if sync:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        _unlink(tmp)
        raise OutputNotWritable(path, e) from None
    except BaseException:
        _unlink(tmp)
        raise
    if sync:
        _fsync_dir(folder)


def _new_temp(folder: Path, name: str) -> str:
    """An empty new file beside the target, with the permissions a plain
    ``open(path, "w")`` would give (mkstemp's are 0600)."""
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.{next(tempfile._get_candidate_names())}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {folder}")


def write_atomic(path: str | Path, data: str | bytes, sync: bool = True) -> Path:
    """Replace ``path`` by ``data`` (text is written as UTF-8) in one step
    (``sync``: see :func:`atomic_path`)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path, sync) as tmp:
        with open(tmp, "wb") as f:
            f.write(raw)
    return Path(path)


def _unlink(p) -> None:
    try:
        os.unlink(p)
    except OSError:
        pass


class StreamLock:
    """``PATH.lock`` held for as long as this run streams into ``PATH``.

    A second live run asking for the same path gets :class:`OutputNotWritable`
    ("being written by another run"), before it truncates anything."""

    def __init__(self, path: str | Path):
        import fcntl

        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.fd = None
        while self.fd is None:
            try:
                fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as e:
                raise OutputNotWritable(self.path, e) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                other = _read_pid(fd)
                os.close(fd)
                by = f" (pid {other})" if other else ""
                raise OutputNotWritable(self.path, f"being written by another running ptxopt{by}; give this run "
                                                   "another path or wait for that one") from None
            try:  # the holder before us may have removed the file after we opened it: lock the one in place
                same = os.fstat(fd).st_ino == os.stat(self.lock_path).st_ino
            except OSError:
                same = False
            if same:
                self.fd = fd
            else:
                os.close(fd)
        os.ftruncate(self.fd, 0)
        os.write(self.fd, f"{os.getpid()}\n".encode())

    def release(self) -> None:
        if self.fd is not None:
            _unlink(self.lock_path)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "StreamLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _read_pid(fd: int) -> str | None:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if text.isdigit() else None


def append_synced(f, text: str) -> None:
    """Append ``text`` to the open file ``f`` and push it to the disk; an
    OSError becomes :class:`OutputNotWritable`."""
    try:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    except OSError as e:
        raise OutputNotWritable(getattr(f, "name", "?"), e) from None


# -- the one rule for outputs: never an input, the cache or a store ------------

def _resolved(path) -> Path | None:
    try:
        return Path(os.path.abspath(path)).resolve()
    except (OSError, RuntimeError, ValueError):
        return None


def same_file(a, b) -> bool:
    """``a`` and ``b`` name one file: the same resolved path (symlinks
    followed), or the same inode (hard links, bind mounts)."""
    ra, rb = _resolved(a), _resolved(b)
    if ra is not None and ra == rb:
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def inside(path, folder) -> bool:
    """``path`` (resolved) lies in ``folder`` (resolved) or is it."""
    rp, rf = _resolved(path), _resolved(folder)
    if rp is None or rf is None:
        return False
    return rp == rf or rf in rp.parents


def _inode(path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


class Protected:
    """Files and folders no output may overwrite, indexed for many lookups:
    ``entries`` are ``(what, path, is_folder)``; :meth:`hit` says what an
    output path would overwrite -- a file it names (:func:`same_file`: the
    resolved path or the inode), or a folder it lies in -- or None."""

    def __init__(self, entries=()):
        self.by_path: dict[Path, str] = {}
        self.by_inode: dict[tuple[int, int], str] = {}
        self.folders: list[tuple[str, Path]] = []
        for what, path, folder in entries:
            self.add(what, path, folder)

    def add(self, what: str, path, folder: bool = False) -> None:
        if path is None:
            return
        r = _resolved(path)
        if folder:
            if r is not None:
                self.folders.append((what, r))
            return
        if r is not None:
            self.by_path.setdefault(r, what)
        ino = _inode(path)
        if ino is not None:
            self.by_inode.setdefault(ino, what)

    def hit(self, out) -> str | None:
        r = _resolved(out)
        if r is not None and r in self.by_path:
            return self.by_path[r]
        ino = _inode(out)
        if ino is not None and ino in self.by_inode:
            return self.by_inode[ino]
        if r is not None:
            for what, folder in self.folders:
                if r == folder or folder in r.parents:
                    return what
        return None


def collision(out, protected) -> str | None:
    """What ``out`` would overwrite among ``protected`` (``(what, path,
    is_folder)`` triples or a :class:`Protected`), or None."""
    if not isinstance(protected, Protected):
        protected = Protected(protected)
    return protected.hit(out)


__all__ = ["OutputNotWritable", "write_atomic", "atomic_path", "StreamLock", "append_synced", "same_file",
           "inside", "collision", "Protected"]
