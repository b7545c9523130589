"""The .deb declares every package its contents need: each shared library the
installed programs load (found with `dpkg -S`, the package that owns it), and
each library the exported CMake targets link, as its -dev package.
Usage: check-deb-depends.py DEB UNPACKED_ROOT"""
import pathlib
import re
import subprocess
import sys

deb, root = sys.argv[1], pathlib.Path(sys.argv[2])
depends_field = subprocess.run(["dpkg-deb", "--field", deb, "Depends"], capture_output=True, text=True,
                               check=True).stdout
declared = {re.sub(r"\s*\(.*\)", "", d).strip() for d in depends_field.replace("\n", " ").split(",") if d.strip()}
problems = []

# Run time: the programs' dynamic links.
programs = sorted(p for p in (root / "usr/bin").iterdir() if p.is_file())
needed = set()
for p in programs:
    dynamic = subprocess.run(["readelf", "-d", str(p)], capture_output=True, text=True, check=True).stdout
    needed |= set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
cache = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout  # where each library is
for lib in sorted(needed):
    match = re.search(r"^\s*" + re.escape(lib) + r" \([^)]*\) => (\S+)$", cache, re.M)
    if not match:
        problems.append(f"{lib}: needed by the programs, not found on this machine")
        continue
    owner = subprocess.run(["dpkg", "-S", match.group(1)], capture_output=True, text=True)
    if owner.returncode != 0:  # a path through a symbolic link: ask for the real file
        owner = subprocess.run(["dpkg", "-S", str(pathlib.Path(match.group(1)).resolve())], capture_output=True, text=True)
    package = owner.stdout.split(":")[0] if owner.returncode == 0 else None
    if package is None:
        problems.append(f"{lib}: no Debian package owns {match.group(1)}")
    else:
        # Declared by name, or by a virtual package it provides (libspdlog1.10 provides libspdlog1.10-fmt9).
        provides = subprocess.run(["dpkg-query", "-W", "-f=${Provides}", package], capture_output=True,
                                  text=True).stdout
        names = {package} | {re.sub(r"\s*\(.*\)", "", v).strip() for v in provides.split(",") if v.strip()}
        if not names & declared:
            problems.append(f"{lib} (package {package}): loaded by the programs, not in Depends")

# Build time: what the exported targets link, beyond Volley's own targets.
dev_packages = {
    "Boost::headers": "libboost1.81-dev", "OpenSSL::SSL": "libssl-dev", "OpenSSL::Crypto": "libssl-dev",
    "spdlog::spdlog": "libspdlog-dev", "fmt::fmt": "libfmt-dev", "uring": "liburing-dev",
    "usrsctp": "libusrsctp-dev", "Threads::Threads": None,  # the C library's own
}
linked = set()
for f in root.glob("usr/lib/**/cmake/Volley/VolleyTargets.cmake"):
    for value in re.findall(r'INTERFACE_LINK_LIBRARIES "([^"]*)"', f.read_text()):
        for item in value.split(";"):
            item = re.sub(r"^\\?\$<LINK_ONLY:(.*)>$", r"\1", item)
            if item and not item.startswith("volley::"):
                linked.add(item)
if not linked:
    problems.append("no exported target links anything outside Volley: VolleyTargets.cmake was not read")
for item in sorted(linked):
    if item not in dev_packages:
        problems.append(f"{item}: linked by an exported target, and this check does not know its package: add it")
    elif dev_packages[item] is not None and dev_packages[item] not in declared:
        problems.append(f"{item} (package {dev_packages[item]}): linked by an exported target, not in Depends")

for p in problems:
    print("deb depends:", p, file=sys.stderr)
print(f"deb depends: {len(needed)} libraries the programs load and {len(linked)} the exported targets link, "
      f"{len(problems)} not declared")
sys.exit(1 if problems else 0)
