"""The `fs` seam on this machine's disk.

Only regular files are read or written. Every open is non-blocking, does not follow a final
symlink and never makes a terminal ours, and the opened file is checked with `fstat` before a byte
moves: a FIFO, a device or a socket in the project is an error, never a hang (a FIFO without a
writer would block a read forever, `/dev/zero` would fill memory).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio

from tether.engine.local.nofollow import PROC_FD, fd_path, parent_dir
from tether.engine.local.trash import trash_entry
from tether.engine.seam import TEXT_MAX_BYTES, DirEntry, FileKind, FileStat
from tether.errors import ErrorCode, SeamError

_T = TypeVar("_T")
_COMMON = os.O_NONBLOCK | os.O_NOCTTY if os.name == "posix" else 0
_COMMON |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_READ = os.O_RDONLY | _COMMON
_WRITE = os.O_WRONLY | _COMMON
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _COMMON
_COPY_CHUNK = 1024 * 1024
BINARY_SNIFF_BYTES = 8192  # a NUL byte this early means binary, as git and grep decide


def kind_of(mode: int) -> FileKind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def seam_error(exc: OSError | ValueError, path: Path) -> SeamError:
    """An OS failure as an error the model reads."""
    if isinstance(exc, ValueError):
        return SeamError("INVALID_PATH", f"{path}: {exc}")
    codes: dict[int, ErrorCode] = {
        errno.ENOENT: "FILE_NOT_FOUND",
        errno.EISDIR: "IS_A_DIRECTORY",
        errno.ENOTDIR: "NOT_A_DIRECTORY",
        errno.EACCES: "PERMISSION_DENIED",
        errno.EPERM: "PERMISSION_DENIED",
        errno.EEXIST: "FILE_EXISTS",
        errno.ELOOP: "INVALID_PATH",
        errno.ENAMETOOLONG: "INVALID_PATH",
        errno.ENXIO: "NOT_A_REGULAR_FILE",
        errno.ENOSPC: "DISK_FULL",
    }
    code = codes.get(exc.errno or 0, "IO_ERROR")
    where = exc.filename or path
    return SeamError(code, f"{where}: {exc.strerror or exc}")


def not_regular(path: Path, mode: int) -> SeamError:
    if stat.S_ISDIR(mode):
        return SeamError("IS_A_DIRECTORY", f"{path} is a directory")
    what = {
        stat.S_IFIFO: "a FIFO (named pipe)",
        stat.S_IFCHR: "a character device",
        stat.S_IFBLK: "a block device",
        stat.S_IFSOCK: "a socket",
        stat.S_IFLNK: "a symbolic link",
    }.get(stat.S_IFMT(mode), "not a regular file")
    return SeamError(
        "NOT_A_REGULAR_FILE", f"{path} is {what}; only regular files are read or written"
    )


def linked_read(path: Path, links: int) -> SeamError:
    return SeamError(
        "HARD_LINK",
        f"{path} has {links} hard links: it is also another file under another name, which may "
        "lie outside the project or be one tether may not read (a `.env`), so it is not read "
        "or copied. Ask the user for its content if you need it.",
    )


def hard_linked(path: Path, links: int) -> SeamError:
    return SeamError(
        "HARD_LINK",
        f"{path} has {links} hard links: writing it would change the same file under its other "
        "names, which may lie outside the project. Copy it to a new file and edit that instead.",
    )


def _open_regular(path: Path, flags: int, *, single: bool = False) -> tuple[int, os.stat_result]:
    """`single`: refuse a file with several hard links (a read or a copy: its other name may
    be outside the project or denylisted, and a name is all the policy can check)."""
    before = os.lstat(path)
    if not stat.S_ISREG(before.st_mode):
        raise not_regular(path, before.st_mode)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between lstat and open
            raise not_regular(path, st.st_mode)
        if single and st.st_nlink > 1:
            raise linked_read(path, st.st_nlink)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _read_at(fd: int, offset: int, size: int) -> bytes:
    chunks: list[bytes] = []
    os.lseek(fd, offset, os.SEEK_SET)
    while size > 0:
        data = os.read(fd, min(size, _COPY_CHUNK))
        if not data:
            break
        chunks.append(data)
        offset += len(data)
        size -= len(data)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class LocalFileSystem:
    async def stat(self, path: Path) -> FileStat | None:
        return await _run(self.stat_sync, path)

    async def read_text(self, path: Path, *, max_bytes: int = TEXT_MAX_BYTES) -> str:
        return decode_text(path, await _run(self._read_whole, path, max_bytes))

    async def read_bytes(self, path: Path, *, offset: int = 0, max_bytes: int) -> bytes:
        return await _run(self._read_bytes, path, offset, max_bytes)

    async def write_text(self, path: Path, content: str) -> None:
        await _run(self._write, path, content.encode("utf-8"))

    async def list_dir(self, path: Path) -> list[DirEntry]:
        return await _run(self._list, path)

    async def copy(self, src: Path, dst: Path) -> None:
        await _run(self._copy, src, dst)

    async def move(self, src: Path, dst: Path) -> None:
        await _run(self._move, src, dst)

    async def delete(self, path: Path, *, permanent: bool) -> None:
        await _run(self._delete, path, permanent)

    # For a client that reads and writes for us: the same refusals, without the I/O.

    async def check_readable(self, path: Path, max_bytes: int) -> None:
        await _run(self._check_readable, path, max_bytes)

    async def prepare_write(self, path: Path) -> None:
        await _run(self._prepare_write, path)

    # --- the work, on a worker thread ------------------------------------------------------

    def stat_sync(self, path: Path) -> FileStat | None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None
        return FileStat(kind_of(st.st_mode), st.st_size, st.st_mtime_ns, st.st_nlink)

    def _read_whole(self, path: Path, max_bytes: int) -> bytes:
        fd, st = _open_regular(path, _READ, single=True)
        try:
            if st.st_size > max_bytes:
                raise _too_large(path, st.st_size, max_bytes)
            data = _read_at(fd, 0, max_bytes + 1)
        finally:
            os.close(fd)
        if len(data) > max_bytes:  # it grew while we read
            raise _too_large(path, len(data), max_bytes)
        return data

    def _read_bytes(self, path: Path, offset: int, max_bytes: int) -> bytes:
        fd, _ = _open_regular(path, _READ, single=True)
        try:
            return _read_at(fd, offset, max_bytes)
        finally:
            os.close(fd)

    def _check_readable(self, path: Path, max_bytes: int) -> None:
        fd, st = _open_regular(path, _READ, single=True)
        os.close(fd)
        if st.st_size > max_bytes:
            raise _too_large(path, st.st_size, max_bytes)

    def _prepare_write(self, path: Path) -> None:
        with parent_dir(path, create=True) as (parent, name):
            _check_writable(parent, name, path)

    def _write(self, path: Path, data: bytes) -> None:
        with parent_dir(path, create=True) as (parent, name):
            _check_writable(parent, name, path)
            try:
                fd = os.open(name, _CREATE, 0o666, dir_fd=parent)
            except FileExistsError:
                fd, st = _open_regular_at(parent, name, path, _WRITE)
                if st.st_nlink > 1:
                    os.close(fd)
                    raise hard_linked(path, st.st_nlink) from None
                try:
                    os.ftruncate(fd, 0)
                except BaseException:
                    os.close(fd)
                    raise
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)

    def _list(self, path: Path) -> list[DirEntry]:
        out: list[DirEntry] = []
        with os.scandir(path) as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue  # vanished while listing
                kind = kind_of(st.st_mode)
                target = _target_kind(e.path) if kind == "symlink" else None
                out.append(DirEntry(e.name, kind, st.st_size, target))
        return out

    def _copy(self, src: Path, dst: Path) -> None:
        with parent_dir(src) as (sparent, sname):
            st = os.stat(sname, dir_fd=sparent, follow_symlinks=False)
            source = fd_path(sparent, sname) if PROC_FD.is_dir() else str(src)
            if stat.S_ISDIR(st.st_mode):
                _refuse_special(Path(source))
            with parent_dir(dst, create=True) as (dparent, dname):
                _absent(dparent, dname, dst)
                target = fd_path(dparent, dname) if PROC_FD.is_dir() else str(dst)
                if stat.S_ISDIR(st.st_mode):
                    shutil.copytree(source, target, symlinks=True, copy_function=_copy_file)
                else:
                    _copy_file(source, target)

    def _move(self, src: Path, dst: Path) -> None:
        with parent_dir(src) as (sparent, sname), parent_dir(dst, create=True) as (dparent, dname):
            os.stat(sname, dir_fd=sparent, follow_symlinks=False)
            _absent(dparent, dname, dst)
            try:
                os.rename(sname, dname, src_dir_fd=sparent, dst_dir_fd=dparent)
            except OSError as exc:
                if exc.errno != errno.EXDEV or not PROC_FD.is_dir():
                    raise
                source, target = fd_path(sparent, sname), fd_path(dparent, dname)
                shutil.move(source, target, copy_function=_copy_file)

    def _delete(self, path: Path, permanent: bool) -> None:
        with parent_dir(path) as (parent, name):
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            if not permanent:
                trash_entry(parent, name, path)
            elif stat.S_ISDIR(st.st_mode):
                shutil.rmtree(name, dir_fd=parent)
            else:
                os.unlink(name, dir_fd=parent)


def _check_writable(parent: int, name: str, path: Path) -> None:
    try:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(path, st.st_mode)
    if st.st_nlink > 1:
        raise hard_linked(path, st.st_nlink)


def _absent(parent: int, name: str, path: Path) -> None:
    try:
        os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    raise SeamError("FILE_EXISTS", f"{path} already exists")


def _open_regular_at(parent: int, name: str, path: Path, flags: int) -> tuple[int, os.stat_result]:
    fd = os.open(name, flags, dir_fd=parent)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _refuse_special(root: Path) -> None:
    """A tree to copy holds only directories, regular files with one name each and symlinks
    (copied as links): checked before anything is copied."""
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            st = os.lstat(os.path.join(folder, name))
            if not (
                stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)
            ):
                raise not_regular(Path(folder, name), st.st_mode)
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                raise linked_read(Path(folder, name), st.st_nlink)


def decode_text(path: Path, data: bytes) -> str:
    """`data` as UTF-8 text, or BINARY_FILE: replacement characters would feed the model
    garbage, and a file read as garbage and written back is a file destroyed."""
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise SeamError(
            "BINARY_FILE", f"{path} is a binary file ({len(data)} bytes); read_file reads text only"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SeamError(
            "BINARY_FILE",
            f"{path} is not UTF-8 text (byte {exc.start} of {len(data)}); "
            "read_file reads UTF-8 text only",
        ) from None


def _too_large(path: Path, size: int, limit: int) -> SeamError:
    return SeamError(
        "FILE_TOO_LARGE", f"{path} has {size} bytes, more than the {limit} bytes read whole"
    )


def _target_kind(path: str) -> FileKind | None:
    try:
        return kind_of(os.stat(path).st_mode)
    except (OSError, ValueError):
        return None


def _copy_file(src: str, dst: str) -> str:
    """Copy one regular file (never a FIFO or device: reading those could block or never end;
    never one with several hard links, whose other name the policy never saw)."""
    fd, st = _open_regular(Path(src), _READ, single=True)
    try:
        out = os.open(dst, _CREATE, stat.S_IMODE(st.st_mode) | 0o200)
        try:
            offset = 0
            while chunk := _read_at(fd, offset, _COPY_CHUNK):
                _write_all(out, chunk)
                offset += len(chunk)
        finally:
            os.close(out)
    finally:
        os.close(fd)
    return dst


async def _run(fn: Callable[..., _T], *args: object) -> _T:
    try:
        return await anyio.to_thread.run_sync(fn, *args)
    except SeamError:
        raise
    except shutil.Error as exc:  # copytree's list of failures
        raise SeamError("IO_ERROR", f"{args[0]}: {exc}") from None
    except (OSError, ValueError) as exc:
        raise seam_error(exc, Path(str(args[0]))) from None
