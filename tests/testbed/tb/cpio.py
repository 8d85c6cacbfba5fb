"""Deterministic writer for the cpio "newc" format the kernel unpacks as initramfs.

Written here rather than driving cpio(1) so that images need no root (device
nodes, owner 0:0) and are byte-for-byte reproducible (fixed mtime and inode
numbers), which keeps the image cache keyed by inputs honest.
"""

import os
import stat

_TRAILER = "TRAILER!!!"


class CpioWriter:
    def __init__(self, fileobj):
        self._f = fileobj
        self._ino = 1
        self._dirs = {""}
        self._off = 0

    def _write(self, data):
        self._f.write(data)
        self._off += len(data)

    def _pad(self):
        rem = self._off % 4
        if rem:
            self._write(b"\0" * (4 - rem))

    def _header(self, name, mode, size, nlink=1, rdev=(0, 0)):
        name_b = name.encode() + b"\0"
        fields = [self._ino, mode, 0, 0, nlink, 0, size, 0, 0,
                  rdev[0], rdev[1], len(name_b), 0]
        self._ino += 1
        self._write(b"070701" + b"".join(b"%08X" % v for v in fields))
        self._write(name_b)
        self._pad()

    def _parents(self, path):
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self._dirs:
                self.add_dir(d)

    @staticmethod
    def _norm(path):
        path = path.strip("/")
        if not path:
            raise ValueError("empty path in cpio archive")
        return path

    def add_dir(self, path, mode=0o755):
        path = self._norm(path)
        if path in self._dirs:
            return
        self._parents(path)
        self._header(path, stat.S_IFDIR | mode, 0, nlink=2)
        self._dirs.add(path)

    def add_bytes(self, path, data, mode=0o644):
        path = self._norm(path)
        self._parents(path)
        self._header(path, stat.S_IFREG | mode, len(data))
        self._write(data)
        self._pad()

    def add_file(self, path, src, mode=None):
        """Copy host file src (symlinks followed) to path in the archive."""
        path = self._norm(path)
        st = os.stat(src)
        if mode is None:
            mode = stat.S_IMODE(st.st_mode)
        self._parents(path)
        self._header(path, stat.S_IFREG | mode, st.st_size)
        left = st.st_size
        with open(src, "rb") as f:
            while left:
                chunk = f.read(min(left, 1 << 20))
                if not chunk:
                    raise IOError(f"{src}: file shrank while archiving")
                self._write(chunk)
                left -= len(chunk)
        self._pad()

    def add_symlink(self, path, target):
        path = self._norm(path)
        self._parents(path)
        data = target.encode()
        self._header(path, stat.S_IFLNK | 0o777, len(data))
        self._write(data)
        self._pad()

    def add_chardev(self, path, major, minor, mode=0o600):
        path = self._norm(path)
        self._parents(path)
        self._header(path, stat.S_IFCHR | mode, 0, rdev=(major, minor))

    def add_tree(self, dest, src):
        """Add the directory tree src under dest, sorted, symlinks kept."""
        for root, dirs, files in os.walk(src):
            dirs.sort()
            rel = os.path.relpath(root, src)
            base = dest if rel == "." else f"{dest}/{rel}"
            self.add_dir(base)
            for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(root, d))]):
                p = os.path.join(root, name)
                if os.path.islink(p):
                    self.add_symlink(f"{base}/{name}", os.readlink(p))
                else:
                    self.add_file(f"{base}/{name}", p)

    def close(self):
        self._header(_TRAILER, 0, 0, nlink=1)
        # The kernel wants the archive padded to a 512-byte boundary.
        rem = self._off % 512
        if rem:
            self._write(b"\0" * (512 - rem))
