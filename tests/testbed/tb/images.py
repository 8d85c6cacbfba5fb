"""Build the testbed images from Debian packages, cached by a hash of their inputs.

Layout under $VTIER_CACHE/testbed (default /var/cache/vtier/testbed):

  kernel-<pkg>_<version>/     one per Debian kernel package version
      root/                   linux-image + linux-headers(-common) + linux-kbuild, extracted
      kernel-release          e.g. 6.12.95+deb12-amd64
      kdir                    path of the headers tree to build out-of-tree modules against
  images-<hash>/              one per set of inputs (see input_hash())
      vmlinuz                 the kernel, used for both L1 and L2
      l1.cpio                 L1 host root: busybox, modules, qemu-system-x86_64 + libs +
                              firmware, and the L2 images under /opt/vtier-tb/l2/
      l2.cpio                 L2 guest base root: busybox and a few modules
      manifest.json           the inputs and what was built

Nothing here is project code: the project's binaries, the L1/L2 scripts and the
scenario travel with each run (see runner.py), so editing them never rebuilds images.
"""

import fcntl
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from . import cpio

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # tests/testbed
BPO = "bookworm-backports"
QEMU_BIN = "/usr/bin/qemu-system-x86_64"
BUSYBOX = "/bin/busybox"
# Firmware the L2 guests may need: SeaBIOS, qboot, PVH and linuxboot option ROMs.
FIRMWARE = [
    "/usr/share/seabios/bios-256k.bin",
    "/usr/share/seabios/bios.bin",
    "/usr/share/seabios/bios-microvm.bin",
    "/usr/share/qemu/qboot.rom",
    "/usr/share/qemu/pvh.bin",
    "/usr/share/qemu/linuxboot.bin",
    "/usr/share/qemu/linuxboot_dma.bin",
    "/usr/share/qemu/kvmvapic.bin",
    "/usr/share/qemu/multiboot_dma.bin",
]
# Files whose content defines the images (besides the packages).
BUILDER_INPUTS = ["tb/images.py", "tb/cpio.py", "l1/init", "l1/modules.list",
                  "l2/init", "l2/modules.list"]


def log(msg):
    print(f"testbed-images: {msg}", file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, stdout=subprocess.PIPE, **kw).stdout


def cache_root():
    return os.path.join(os.environ.get("VTIER_CACHE", "/var/cache/vtier"), "testbed")


def sha256_file(path, h=None):
    h = h or hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h


# ---------------------------------------------------------------- packages

def bpo_version(pkg):
    """Version of pkg in bookworm-backports, from apt's local lists."""
    for line in run(["apt-cache", "madison", pkg]).splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) >= 3 and BPO in f[2] and "Packages" in f[2]:
            return f[1]
    return None


def depends_matching(pkg, version, pattern):
    out = run(["apt-cache", "depends", f"{pkg}={version}"])
    for line in out.splitlines():
        m = re.match(r"\s*\|?Depends:\s*(\S+)", line)
        if m and re.fullmatch(pattern, m.group(1)):
            return m.group(1)
    return None


def resolve_kernel():
    """(image package, version, kernel release) of the L1/L2 kernel.

    Default: what linux-image-amd64 in bookworm-backports depends on today.
    VTIER_TB_KERNEL_PKG=linux-image-X overrides the package.
    """
    pkg = os.environ.get("VTIER_TB_KERNEL_PKG")
    if not pkg:
        meta_ver = bpo_version("linux-image-amd64")
        if not meta_ver:
            die("linux-image-amd64 not found in bookworm-backports: run scripts/deps.sh "
                "(it adds backports and runs apt-get update)")
        pkg = depends_matching("linux-image-amd64", meta_ver, r"linux-image-[0-9].*-amd64")
        if not pkg:
            die(f"cannot resolve the kernel package behind linux-image-amd64={meta_ver}")
    ver = bpo_version(pkg)
    if not ver:
        die(f"{pkg} has no version in bookworm-backports (apt lists stale? run apt-get update)")
    return pkg, ver, pkg[len("linux-image-"):]


def download(pkgs, dest):
    os.makedirs(dest, exist_ok=True)
    os.chmod(dest, 0o777)   # apt's _apt sandbox user writes here
    log(f"apt-get download {' '.join(pkgs)}")
    subprocess.run(["apt-get", "download", "-q"] + pkgs, cwd=dest, check=True,
                   stdout=sys.stderr)
    return [os.path.join(dest, f) for f in sorted(os.listdir(dest)) if f.endswith(".deb")]


def fix_headers_makefile(d, kver):
    """Debian's linux-headers-KVER/Makefile includes an absolute /usr/src path;
    point it at the extracted tree so `make -C KDIR M=...` works from the cache."""
    mk = os.path.join(d, "root/usr/src", f"linux-headers-{kver}", "Makefile")
    with open(mk) as f:
        text = f.read()
    fixed = re.sub(r"^include /usr/src/", f"include {d}/root/usr/src/", text, flags=re.M)
    if fixed != text:
        with open(mk, "w") as f:
            f.write(fixed)


def ensure_kernel(pkg, ver, kver):
    """Extract the kernel image and its headers once per package version."""
    d = os.path.join(cache_root(), f"kernel-{pkg}_{ver}".replace(":", "_").replace("~", "_"))
    if os.path.exists(os.path.join(d, ".complete")):
        fix_headers_makefile(d, kver)
        return d
    log(f"preparing kernel {pkg} {ver} in {d}")
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    hdr = f"linux-headers-{kver}"
    common = depends_matching(hdr, ver, r"linux-headers-.*-common")
    kbuild = depends_matching(hdr, ver, r"linux-kbuild-.*")
    if not common or not kbuild:
        die(f"cannot resolve {hdr}'s -common and kbuild packages")
    debs = download([f"{pkg}={ver}", f"{hdr}={ver}", f"{common}={ver}", f"{kbuild}={ver}"],
                    os.path.join(tmp, "debs"))
    root = os.path.join(tmp, "root")
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    shutil.rmtree(os.path.join(tmp, "debs"))
    moddir = os.path.join(root, "lib/modules", kver)
    if not os.path.isdir(moddir):
        die(f"{pkg} has no /lib/modules/{kver}")
    subprocess.run(["depmod", "-b", root, kver], check=True)
    kdir = os.path.join(d, "root/usr/src", hdr)
    if not os.path.exists(os.path.join(root, "usr/src", hdr, "Makefile")):
        die(f"{hdr} has no Makefile: headers incomplete")
    with open(os.path.join(tmp, "kernel-release"), "w") as f:
        f.write(kver + "\n")
    with open(os.path.join(tmp, "kdir"), "w") as f:
        f.write(kdir + "\n")
    with open(os.path.join(tmp, "package"), "w") as f:
        f.write(f"{pkg} {ver}\n")
    open(os.path.join(tmp, ".complete"), "w").close()
    shutil.rmtree(d, ignore_errors=True)
    os.rename(tmp, d)
    fix_headers_makefile(d, kver)
    return d


# ---------------------------------------------------------------- inputs

def lib_closure(binary):
    """Shared libraries of binary as (path-in-image, host-path), via ldd."""
    out = run(["ldd", binary])
    libs = []
    for line in out.splitlines():
        line = line.strip()
        m = re.match(r"\S+ => (/\S+) \(0x", line) or re.match(r"(/\S+) \(0x", line)
        if m:
            libs.append(m.group(1))
        elif "not found" in line:
            die(f"{binary}: missing library: {line}")
    return libs


def read_list(path):
    items = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                items.append(line)
    return items


def check_host_tools():
    if not os.path.exists(QEMU_BIN):
        die(f"{QEMU_BIN} missing: run scripts/deps.sh (installs qemu-system-x86 from backports)")
    qver = run(["dpkg-query", "-W", "-f=${Version}", "qemu-system-x86"]).strip()
    if not re.match(r"1:(1[0-9])\.", qver):
        die(f"qemu-system-x86 {qver} installed; the testbed needs >= 10 from bookworm-backports "
            "(scripts/deps.sh installs it)")
    if not os.path.exists(BUSYBOX):
        die(f"{BUSYBOX} missing: install busybox-static (scripts/deps.sh)")
    ldd = subprocess.run(["ldd", BUSYBOX], text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    if "not a dynamic executable" not in ldd.stdout:
        die(f"{BUSYBOX} is not static: install busybox-static")
    for f in FIRMWARE:
        if not os.path.exists(f):
            die(f"{f} missing (qemu-system-x86/seabios packages incomplete)")
    return qver


def input_hash(kernel, qver, qemu_files):
    h = hashlib.sha256()
    h.update(f"kernel {kernel[0]} {kernel[1]}\nqemu {qver}\n".encode())
    for rel in BUILDER_INPUTS:
        h.update(f"file {rel}\n".encode())
        sha256_file(os.path.join(HERE, rel), h)
    for path in [BUSYBOX] + qemu_files:
        h.update(f"file {path}\n".encode())
        sha256_file(path, h)
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- images

def add_busybox(w):
    w.add_file("bin/busybox", BUSYBOX, 0o755)
    applets = run([BUSYBOX, "--list-full"]).split()
    for a in applets:
        if a in ("bin/busybox",):
            continue
        w.add_symlink(a, "/bin/busybox")
    for d in ("proc", "sys", "dev", "run", "tmp", "mnt", "root", "etc", "var"):
        w.add_dir(d, 0o1777 if d == "tmp" else 0o755)
    w.add_chardev("dev/console", 5, 1)
    w.add_chardev("dev/null", 1, 3, 0o666)
    w.add_bytes("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    w.add_bytes("etc/group", b"root:x:0:\n")
    w.add_symlink("var/run", "/run")


def add_modules(w, kroot, kver, names, staging):
    """Add names and their dependencies, decompressed, with a fresh modules.dep."""
    if not names:
        return []
    mods = []
    for name in names:
        out = run(["modprobe", "-d", kroot, "-S", kver, "--show-depends", name])
        for line in out.splitlines():
            m = re.match(r"insmod (\S+)", line)
            if m and m.group(1) not in mods:
                mods.append(m.group(1))
    src_base = os.path.join(kroot, "lib/modules", kver)
    dst_base = os.path.join(staging, "lib/modules", kver)
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(dst_base)
    for f in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
        shutil.copy(os.path.join(src_base, f), dst_base)
    for m in mods:
        rel = os.path.relpath(m, src_base)
        dst = os.path.join(dst_base, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if rel.endswith(".xz"):
            with lzma.open(m) as fi, open(dst[:-3], "wb") as fo:
                shutil.copyfileobj(fi, fo)
        else:
            shutil.copy(m, dst)
    subprocess.run(["depmod", "-b", staging, kver], check=True)
    # usr/lib: in L1, /lib is a symlink to usr/lib (merged /usr, like Debian)
    w.add_tree(f"usr/lib/modules/{kver}", dst_base)
    return [os.path.basename(m).split(".ko")[0] for m in mods]


def build_l2(path, kdir, kver, staging):
    kroot = os.path.join(kdir, "root")
    with open(path, "wb") as f:
        w = cpio.CpioWriter(f)
        add_busybox(w)
        w.add_file("init", os.path.join(HERE, "l2/init"), 0o755)
        mods = add_modules(w, kroot, kver, read_list(os.path.join(HERE, "l2/modules.list")),
                           staging)
        w.close()
    return mods


def build_l1(path, kdir, kver, vmlinuz, l2_cpio, qemu_libs, staging):
    kroot = os.path.join(kdir, "root")
    with open(path, "wb") as f:
        w = cpio.CpioWriter(f)
        add_busybox(w)
        # merged-/usr layout, like Debian: libraries resolve through /lib -> usr/lib
        w.add_symlink("lib64", "usr/lib64")
        w.add_symlink("lib", "usr/lib")
        w.add_file("init", os.path.join(HERE, "l1/init"), 0o755)
        mods = add_modules(w, kroot, kver, read_list(os.path.join(HERE, "l1/modules.list")),
                           staging)
        w.add_file("usr/bin/qemu-system-x86_64", QEMU_BIN, 0o755)
        for lib in qemu_libs:
            real = os.path.realpath(lib)
            dst = lib if lib.startswith("/usr/") else "/usr" + lib
            w.add_file(dst, real, 0o755)
        for fw in FIRMWARE:
            w.add_file(fw, fw, 0o644)
        w.add_file("opt/vtier-tb/l2/vmlinuz", vmlinuz, 0o644)
        w.add_file("opt/vtier-tb/l2/l2.cpio", l2_cpio, 0o644)
        w.close()
    return mods


def prune_cache(root, keep_days=14):
    """Drop image sets (and kernels no image set uses) unused for keep_days."""
    now = time.time()
    used_kernels = set()
    for name in os.listdir(root):
        d = os.path.join(root, name)
        if not name.startswith("images-") or "." in name:
            continue
        stamp = os.path.join(d, ".last-used")
        try:
            age = now - os.path.getmtime(stamp)
        except OSError:
            age = now - os.path.getmtime(d)
        if age > keep_days * 86400:
            log(f"pruning {d} (unused for {age / 86400:.0f} days)")
            shutil.rmtree(d, ignore_errors=True)
            continue
        try:
            with open(os.path.join(d, "manifest.json")) as f:
                used_kernels.add(os.path.basename(json.load(f)["kernel_dir"]))
        except (OSError, ValueError, KeyError):
            pass
    for name in os.listdir(root):
        if name.startswith("kernel-") and not name.endswith(".tmp") and name not in used_kernels:
            d = os.path.join(root, name)
            if now - os.path.getmtime(d) > keep_days * 86400:
                log(f"pruning {d} (no image set uses it)")
                shutil.rmtree(d, ignore_errors=True)


def touch(path):
    with open(path, "a"):
        os.utime(path)


def ensure_images():
    qver = check_host_tools()
    kernel = resolve_kernel()
    pkg, ver, kver = kernel
    qemu_files = [QEMU_BIN] + lib_closure(QEMU_BIN) + FIRMWARE
    ihash = input_hash(kernel, qver, qemu_files)
    root = cache_root()
    out = os.path.join(root, f"images-{ihash}")
    if os.path.exists(os.path.join(out, ".complete")):
        touch(os.path.join(out, ".last-used"))
        return out
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, ".lock"), "w") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(out, ".complete")):
            return out
        prune_cache(root)
        t0 = time.monotonic()
        kdir = ensure_kernel(pkg, ver, kver)
        log(f"building images {ihash} (kernel {kver}, qemu {qver})")
        tmp = tempfile.mkdtemp(prefix=f"images-{ihash}.", dir=root)
        try:
            vmlinuz = os.path.join(kdir, "root/boot", f"vmlinuz-{kver}")
            shutil.copy(vmlinuz, os.path.join(tmp, "vmlinuz"))
            l2 = os.path.join(tmp, "l2.cpio")
            l2_mods = build_l2(l2, kdir, kver, os.path.join(tmp, "staging"))
            l1_mods = build_l1(os.path.join(tmp, "l1.cpio"), kdir, kver, vmlinuz, l2,
                               lib_closure(QEMU_BIN), os.path.join(tmp, "staging"))
            shutil.rmtree(os.path.join(tmp, "staging"))
            manifest = {
                "hash": ihash,
                "kernel_package": pkg, "kernel_version": ver, "kernel_release": kver,
                "kernel_dir": kdir,
                "kdir": os.path.join(kdir, "root/usr/src", f"linux-headers-{kver}"),
                "qemu_version": qver,
                "l1_modules": l1_mods, "l2_modules": l2_mods,
                "l1_cpio_bytes": os.path.getsize(os.path.join(tmp, "l1.cpio")),
                "l2_cpio_bytes": os.path.getsize(l2),
                "build_seconds": round(time.monotonic() - t0, 1),
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            with open(os.path.join(tmp, "manifest.json"), "w") as f:
                json.dump(manifest, f, indent=2)
                f.write("\n")
            open(os.path.join(tmp, ".complete"), "w").close()
            touch(os.path.join(tmp, ".last-used"))
            os.chmod(tmp, 0o755)
            shutil.rmtree(out, ignore_errors=True)
            os.rename(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        log(f"built {out} in {manifest['build_seconds']} s")
    return out


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="tests/testbed/images",
                                 description="Build (if needed) and locate the testbed images.")
    ap.add_argument("what", nargs="?", default="path",
                    choices=["path", "kdir", "kernel-release", "manifest"],
                    help="path: images directory (default); kdir: kernel headers tree for "
                         "out-of-tree modules; kernel-release; manifest: print manifest.json")
    args = ap.parse_args(argv)
    out = ensure_images()
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    if args.what == "path":
        print(out)
    elif args.what == "kdir":
        print(manifest["kdir"])
    elif args.what == "kernel-release":
        print(manifest["kernel_release"])
    else:
        print(json.dumps(manifest, indent=2))
    return 0
