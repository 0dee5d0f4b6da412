"""Output paths: checked before any work, written without loss (app/outputs.py).

Everything here happens under pytest's tmp_path: a fifo made with os.mkfifo, symlinks, a socket;
devices are nodes made there with os.mknod (the null device's numbers), so that a bug that renamed
over a device would replace only that node, never /dev/null.
"""
from __future__ import annotations

import errno
import os
import socket
import stat
import subprocess
import sys
import threading

import pytest
from support import ROOT

from app.errors import OutputError, UsageError
from app.outputs import check_output, check_outputs, write_bytes, write_text


def _only(folder) -> list[str]:
    return sorted(os.listdir(folder))


def _file(path):
    path.write_text("x")
    return path


def test_regular_file_replaced_whole_mode_kept_user_tmp_untouched(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    user_tmp = tmp_path / "r.json.tmp"
    user_tmp.write_text("the user's own file")
    assert write_text(target, "new") == str(target)
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert user_tmp.read_text() == "the user's own file"
    assert _only(tmp_path) == ["r.json", "r.json.tmp"]  # no temporary file left


def test_tmp_name_a_folder_does_not_matter(tmp_path):
    (tmp_path / "r.json.tmp").mkdir()  # a fixed temporary name would fail here
    write_text(tmp_path / "r.json", "x")
    assert (tmp_path / "r.json").read_text() == "x" and (tmp_path / "r.json.tmp").is_dir()


def test_missing_folders_are_made(tmp_path):
    target = tmp_path / "out" / "sub" / "r.json"
    check_output("report", target)
    assert not (tmp_path / "out").exists()  # the check creates nothing
    write_text(target, "x")
    assert target.read_text() == "x"


def test_symlink_target_written_link_kept(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "made.json")
    check_output("report", dangling)
    write_text(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "made.json").read_text() == "made"


def test_symlink_loop_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(UsageError, match="symlink loop"):
        check_output("report", a)
    with pytest.raises(OutputError):
        write_text(a, "x")
    assert a.is_symlink() and b.is_symlink()


def test_fifo_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    check_output("trace", fifo)
    write_bytes(fifo, b"through the fifo")
    reader.join(10)
    assert got == [b"through the fifo"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _only(tmp_path) == ["pipe"]


def _null_node(tmp_path):
    """A character device with /dev/null's numbers, made under tmp_path (root only; a nodev mount
    refuses to open it): the output code sees a device, and nothing outside tmp_path is at risk."""
    node = tmp_path / "null-device"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        with open(node, "wb") as f:
            f.write(b"probe")
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make and open a device node under {tmp_path}: {exc}")
    return node


def test_a_device_and_a_symlink_to_it_written_through(tmp_path):
    node = _null_node(tmp_path)
    before = os.stat(node)
    link = tmp_path / "null.json"
    link.symlink_to(node)
    check_outputs({"report": link})
    write_text(link, "nothing")
    write_text(node, "nothing")
    after = os.stat(node)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert link.is_symlink() and _only(tmp_path) == ["null-device", "null.json"]


def test_link_to_an_open_file_is_written_through(tmp_path):
    """/dev/stdout and /proc/self/fd/N name an open file: written, never renamed over (a symlink in
    tmp_path stands for /dev/stdout so that no system path is at risk)."""
    target = tmp_path / "captured.txt"
    link = tmp_path / "stdout-link"
    code = ("import os, sys; sys.path.insert(0, sys.argv[1]); os.symlink('/proc/self/fd/1', sys.argv[2]);"
            "from app.outputs import check_output, write_text; check_output('report', sys.argv[2]);"
            "print('before', flush=True); write_text(sys.argv[2], 'REPORT\\n'); print('after', flush=True)")
    with open(target, "wb") as out:
        subprocess.run([sys.executable, "-c", code, ROOT, str(link)], stdout=out, check=True, timeout=60)
    assert target.read_text() == "before\nREPORT\nafter\n"
    assert link.is_symlink()


def test_dash_is_standard_output():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from app.outputs import write_bytes;"
            "print(write_bytes('-', b'DATA'), file=sys.stderr)")
    res = subprocess.run([sys.executable, "-c", code, ROOT], capture_output=True, check=True, timeout=60)
    assert res.stdout == b"DATA" and res.stderr.strip() == b"standard output"


@pytest.mark.parametrize("make, needle", [
    (lambda p: (p / "dir").mkdir() or p / "dir", "is a folder"),
    (lambda p: f"{p}/not_there/", "names a folder"),
    (lambda p: _file(p / "FILE") / "r.json", "is a file, not a folder"),
    (lambda p: _file(p / "FILE") / "deeper" / "r.json", "is a file, not a folder"),
    (lambda p: p / ("n" * 256), "256 bytes"),
    (lambda p: p / ("é" * 128) / "r.json", "256 bytes"),
    (lambda p: "", "empty path"),
])
def test_refused_with_one_line_creating_nothing(tmp_path, make, needle):
    path = make(tmp_path)
    before = _only(tmp_path)
    with pytest.raises(UsageError) as exc:
        check_output("report", path)
    assert needle in str(exc.value) and "\n" not in exc.value.one_line()
    assert exc.value.exit_code == 2
    assert _only(tmp_path) == before


def test_trailing_slash_names_a_folder(tmp_path):
    with pytest.raises(UsageError, match="names a folder"):
        check_output("report", f"{tmp_path}/dir_that_does_not_exist/")
    assert _only(tmp_path) == []


def test_longest_name_is_fine(tmp_path):
    target = tmp_path / ("n" * 255)
    check_output("report", target)
    write_text(target, "x")  # the temporary name must stay short too
    assert target.read_text() == "x" and _only(tmp_path) == ["n" * 255]


def test_socket_refused(tmp_path):
    path = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(path))
        with pytest.raises(UsageError, match="socket"):
            check_output("trace", path)
    finally:
        s.close()


def test_two_outputs_one_file(tmp_path):
    real = tmp_path / "r.json"
    with pytest.raises(UsageError, match="--report and --trace both write"):
        check_outputs({"report": real, "trace": tmp_path / "." / "r.json"})
    real.write_text("x")
    (tmp_path / "alias.json").symlink_to(real)
    os.link(real, tmp_path / "hard.json")
    with pytest.raises(UsageError, match="--screenshot and --trace both write"):
        check_outputs({"screenshot": real, "trace": tmp_path / "alias.json"})
    with pytest.raises(UsageError, match="both write"):
        check_outputs({"screenshot": real, "trace": tmp_path / "hard.json"})
    with pytest.raises(UsageError, match="both write standard output"):
        check_outputs({"report": "-", "trace": "-"})
    check_outputs({"report": real, "trace": tmp_path / "t.json", "screenshot": "-"})
    node = _null_node(tmp_path)
    check_outputs({"report": node, "trace": node})  # a device takes both: nothing to lose


def test_failed_write_leaves_nothing_and_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text("old")
    real_write = os.write

    def full(fd, data):
        if len(data) > 4:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OutputError, match="No space left on device") as exc:
        write_text(target, "a longer report")
    assert str(target) in exc.value.one_line()
    assert target.read_text() == "old" and _only(tmp_path) == ["r.json"]


def test_file_size_limit_really_hit(tmp_path):
    """A real failed write (RLIMIT_FSIZE: the kernel refuses the bytes past 1000)."""
    target = tmp_path / "big.bin"
    target.write_bytes(b"old")
    code = ("import resource, sys; sys.path.insert(0, sys.argv[1]);"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000));"
            "from app.errors import OutputError; from app.outputs import write_bytes\n"
            "try:\n write_bytes(sys.argv[2], bytes(100000))\n"
            "except OutputError as e:\n print(e.one_line()); sys.exit(3)\n")
    res = subprocess.run([sys.executable, "-c", code, ROOT, str(target)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 3, res.stderr
    assert "File too large" in res.stdout
    assert target.read_bytes() == b"old" and _only(tmp_path) == ["big.bin"]


def test_through_a_symlinked_folder_and_a_name_that_is_not_utf8(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "via").symlink_to(real)
    name = os.fsdecode(b"r\xff\xfe.json")  # bytes no encoding decodes: kept as the file system has them
    check_output("report", tmp_path / "via" / name)
    write_text(tmp_path / "via" / name, "x")
    assert os.listdir(os.fsencode(real)) == [b"r\xff\xfe.json"]
    assert (tmp_path / "via").is_symlink()
