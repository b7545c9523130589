#!/usr/bin/env bash
# A user's project built against an installed Volley alone:
#   consumer-test.sh install BUILD_DIR SOURCE_DIR   cmake --install into a scratch prefix
#   consumer-test.sh deb     BUILD_DIR SOURCE_DIR   cpack's .deb, unpacked with dpkg -x
#   consumer-test.sh subdirectory BUILD_DIR SOURCE_DIR   add_subdirectory(volley) in the user's tree
# The project is a copy of examples/ outside the source tree plus one file that
# includes every installed public header. It is configured with only the scratch
# prefix to find Volley, its compile commands are checked for any path into the
# source or build tree, and three examples are run.
set -euo pipefail
mode=$1 build=$(cd "$2" && pwd) source=$(cd "$3" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case "$mode" in
  install)
    cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
    prefix=$work/prefix ;;
  deb)
    (cd "$build" && cpack -G DEB -B "$work/deb" >"$work/cpack.log") || { cat "$work/cpack.log"; exit 1; }
    deb=$(ls "$work"/deb/volley_*.deb)
    echo "package: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
    dpkg-deb --field "$deb" Package Version Depends
    dpkg -x "$deb" "$work/root"
    prefix=$work/root/usr
    # Every library the programs load and every library the exported targets
    # link is a declared dependency, and Debian's own checker finds no error.
    /usr/bin/python3 "$source/tests/package/check-deb-depends.py" "$deb" "$work/root"
    if command -v lintian >/dev/null 2>&1; then
      lintian --fail-on error "$deb" || { echo "lintian reports errors on the .deb" >&2; exit 1; }
      echo "lintian: no error"
    else
      echo "lintian is not installed (scripts/install-deps.sh installs it): the .deb is not checked by it" >&2; exit 1
    fi ;;
  subdirectory)
    # Only the libraries are built: no tools, tests, benchmarks or examples, and
    # none of their dependencies (CLI11, GoogleTest, Google Benchmark) is looked for.
    mkdir -p "$work/user"
    cp "$source/examples/rpc_service.cpp" "$work/user/"
    cat >"$work/user/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(user LANGUAGES CXX)
add_subdirectory("$source" volley)
add_executable(rpc_service rpc_service.cpp)
target_link_libraries(rpc_service PRIVATE volley::rpc)
CMAKE
    cmake -S "$work/user" -B "$work/user-build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" ||
      { cat "$work/configure.log"; exit 1; }
    if grep -E -q "^(CLI11|GTest|benchmark)_DIR:PATH=[^-]" "$work/user-build/CMakeCache.txt"; then
      echo "as a subproject, Volley looked for its tools' or tests' dependencies:" >&2
      grep -E "^(CLI11|GTest|benchmark)_DIR" "$work/user-build/CMakeCache.txt" >&2; exit 1
    fi
    if ninja -C "$work/user-build" -t targets all | grep -E -q "^(volley|traffic_generator|volley_unit_tests|echo_server):"; then
      echo "as a subproject, Volley defined its programs, tests or examples" >&2; exit 1
    fi
    if [[ -d "$work/user-build/bin" ]]; then echo "as a subproject, Volley set an output folder" >&2; exit 1; fi
    cmake --build "$work/user-build" --target rpc_service >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
    "$work/user-build/rpc_service" | tee "$work/rpc.txt"
    grep -q "3 of 3 quotes answered" "$work/rpc.txt"
    echo "a user's project built Volley's libraries with add_subdirectory and ran an example"
    exit 0 ;;
  *) echo "usage: $0 install|deb|subdirectory BUILD_DIR SOURCE_DIR" >&2; exit 2 ;;
esac
test -f "$prefix/lib/cmake/Volley/VolleyConfig.cmake" || test -n "$(ls "$prefix"/lib/*/cmake/Volley/VolleyConfig.cmake 2>/dev/null)"
test -x "$prefix/bin/volley"
test -f "$prefix/share/volley/wireshark/volley.lua"
if [[ -e "$prefix/include/volley/net/udp_batch.hpp" ]]; then echo "a private header was installed" >&2; exit 1; fi

# The consumer: the examples, and every public header compiled on its own include path.
mkdir -p "$work/consumer"
cp "$source"/examples/*.cpp "$source"/examples/CMakeLists.txt "$work/consumer/"
(cd "$prefix/include" && find volley -name '*.hpp' | sort | sed 's/.*/#include <&>/') >"$work/consumer/all_headers.cpp"
echo "int main() {}" >>"$work/consumer/all_headers.cpp"
cat >>"$work/consumer/CMakeLists.txt" <<'CMAKE'
add_executable(all_headers all_headers.cpp)
target_link_libraries(all_headers PRIVATE volley::volley)
CMAKE
echo "headers: $(grep -c '#include' "$work/consumer/all_headers.cpp") public headers compiled together"
# The README's complete programs (its cpp blocks with a main), built as printed.
/usr/bin/python3 - "$source/README.md" "$work/consumer" <<'PY'
import pathlib, re, sys
blocks = [b for b in re.findall(r"```cpp\n(.*?)```", pathlib.Path(sys.argv[1]).read_text(), re.S) if "int main(" in b]
assert blocks, "the README has no complete program"
cmake = pathlib.Path(sys.argv[2]) / "CMakeLists.txt"
for i, b in enumerate(blocks):
    (pathlib.Path(sys.argv[2]) / f"readme_{i}.cpp").write_text(b)
    cmake.write_text(cmake.read_text() + f"add_executable(readme_{i} readme_{i}.cpp)\n"
                     f"target_link_libraries(readme_{i} PRIVATE volley::net)\n")
print(f"readme: {len(blocks)} complete program(s) built as printed")
PY

cmake -S "$work/consumer" -B "$work/consumer-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
grep -q "Volley_DIR:PATH=$prefix" "$work/consumer-build/CMakeCache.txt" || {
  echo "Volley was not found in the scratch prefix:" >&2; grep Volley_DIR "$work/consumer-build/CMakeCache.txt" >&2; exit 1; }
if grep -E -q "($source|$build)/" "$work/consumer-build/compile_commands.json"; then
  echo "the consumer's compile commands reach into Volley's source or build tree:" >&2
  grep -E -o "[^ \"]*($source|$build)/[^ \"]*" "$work/consumer-build/compile_commands.json" | sort -u >&2
  exit 1
fi
cmake --build "$work/consumer-build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
if grep -q "warning:" "$work/build.log"; then cat "$work/build.log"; echo "warnings in the consumer build" >&2; exit 1; fi

cd "$work/consumer-build"
./rpc_service | tee "$work/rpc.txt"
grep -q "3 of 3 quotes answered" "$work/rpc.txt"
./arq_transfer | tee "$work/arq.txt"
grep -q "delivered 1000 of 1000 in order" "$work/arq.txt"
if [[ -x ./netem_in_a_unit_test ]]; then ./netem_in_a_unit_test --gtest_brief=1; fi
"$prefix/bin/volley" --help | head -n 1
if [[ $mode == install ]]; then
  # The installed benchmark tool needs nothing from the source tree: scenario 1
  # of the ARQ benchmarks, selective repeat and SCTP (which runs the installed
  # volley as processes), from a folder of its own.
  (cd "$work" && "$prefix/bin/volley" arq-bench --scenario 1 --variant sr --variant sctp --no-tcp --out arq \
     >arq.md 2>arq.log) || { cat "$work/arq.log"; exit 1; }
  /usr/bin/python3 - "$work/arq/summary.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))
assert [r["variant"] for r in runs] == ["sr", "sctp"], runs
for r in runs:
    assert r["error"] == "" and r["delay"]["count"] == 100, r
print("installed arq-bench: scenario 1 delivered 100/100 over selective repeat and SCTP")
PY
fi
echo "consumer built and ran against the $mode of Volley at $prefix"
