"""contract.files.write_atomic: a file is written whole or not at all; a failed write
leaves the old file and no temporary one, and its OSError keeps its errno,
names the file and says what was being written.  (A full disk, for real:
test_testbed.py's switch dump.)"""

from __future__ import annotations

import errno

import pytest

from contract.files import system_dir, temporary_for, write_atomic


def test_a_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "s1.json"
    path.write_text("old")
    write_atomic(path, "new", "s1's dump")
    assert path.read_text() == "new" and sorted(tmp_path.iterdir()) == [path]


def test_a_write_cut_short_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "s1.json"
    path.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(path, "half \udc80 written", "s1's dump")     # fails once the temporary exists
    assert path.read_text() == "old" and sorted(tmp_path.iterdir()) == [path]


def test_an_oserror_keeps_its_errno_and_says_what_and_where(tmp_path):
    path = tmp_path / "s1.json"
    path.mkdir()                                # the rename over it fails, after the whole write
    with pytest.raises(OSError) as err:
        write_atomic(path, "{}", "switch s1's registers and counters")
    exc = err.value
    assert exc.errno == errno.EISDIR and exc.filename == str(path)
    assert str(exc) == (f"[Errno {errno.EISDIR}] cannot write switch s1's registers and counters: "
                        f"Is a directory: '{path}'")
    assert not temporary_for(path).exists()


def test_a_system_directory_is_told_named_or_through_a_symlink(tmp_path):
    (tmp_path / "to-etc").symlink_to("/etc")
    (tmp_path / "to-usr").symlink_to("/usr/share")
    assert system_dir(tmp_path / "to-etc" / "ci4") == "/etc"         # the batch of issue 49 wrote /etc/ci4
    assert system_dir(tmp_path / "to-usr") == "/usr" and system_dir("/boot/x/y") == "/boot"
    assert system_dir("/") == "/" and system_dir("/tmp/../etc") == "/etc"
    # anywhere else, "/" below it included, is no system directory
    for path in (tmp_path, tmp_path / "not-yet" / "made", "/var/tmp/x", "/etcetera", "/root/results"):
        assert system_dir(path) is None, path
