# CMake toolchain file: cross-compile the engine for 64-bit Windows on Linux with
# Debian's mingw-w64 (package g++-mingw-w64-x86-64-posix). The "-posix" compilers use the
# winpthreads thread model, which std::thread and std::mutex in llama.cpp need.
#
#   cmake -DCMAKE_TOOLCHAIN_FILE=packaging/windows/mingw-w64-x86_64.cmake ...
#
# packaging/windows_engine.py passes it (with the compatibility header below) when it
# builds llama-cpp-python for a Windows bundle.

set(CMAKE_SYSTEM_NAME Windows)
# ggml picks its x86 CPU variants from this name (x86_64, AMD64 and amd64 all match).
set(CMAKE_SYSTEM_PROCESSOR x86_64)

set(TOOLCHAIN_PREFIX x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${TOOLCHAIN_PREFIX}-gcc-posix)
set(CMAKE_CXX_COMPILER ${TOOLCHAIN_PREFIX}-g++-posix)
set(CMAKE_RC_COMPILER ${TOOLCHAIN_PREFIX}-windres)

# Libraries and headers come from the mingw-w64 sysroot only, programs from the build host.
set(CMAKE_FIND_ROOT_PATH /usr/${TOOLCHAIN_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
