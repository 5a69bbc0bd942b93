# Cross-compiling tailcut for aarch64 (ARM64) Linux on a Debian 12 x86-64 host
# (docs/EDGE.md). Needs crossbuild-essential-arm64 and the arm64 multiarch dev
# packages (scripts/cross-arm64.sh installs them); the code generator (protoc)
# is the host's, the libraries and headers are the arm64 ones in
# /usr/lib/aarch64-linux-gnu. Use with -DTAILCUT_CUDA=OFF.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Multiarch: target libraries live under / in /usr/lib/aarch64-linux-gnu, so
# the root is / and CMAKE_LIBRARY_ARCHITECTURE picks the arm64 directories.
# Programs (protoc) are always the host's.
set(CMAKE_FIND_ROOT_PATH /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(Protobuf_PROTOC_EXECUTABLE /usr/bin/protoc CACHE FILEPATH "host protoc")

# pkg-config (libzmq) must read the arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Running a cross-built program here (try_run, tests) goes through qemu.
find_program(TAILCUT_QEMU_AARCH64 qemu-aarch64-static)
if(TAILCUT_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TAILCUT_QEMU_AARCH64} -L /)
endif()
