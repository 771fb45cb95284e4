# xgrammar's C++ core (Apache-2.0), the grammar engine behind structured output (src/grammar). Debian does not
# package it; its PyPI source package carries the C++ core, so scripts/setup.sh fetches that sdist at a pinned
# version into .deps/ (sha256 checked there and again here) and this file builds it into the build tree as the
# static library `tinfer_xgrammar`. Nothing of it is committed.
#
# The sdist's own CMakeLists is not used: its cmake/config.cmake forces the Python bindings on (nanobind/tvm_ffi)
# and it adds -Werror and LTO to the flags. We compile cpp/*.cc, cpp/support/*.cc and cpp/converter_ext/*.cc
# (everything but cpp/tvm_ffi, the Python binding) with our flags and no warnings (it is not our code).
set(TINFER_XGRAMMAR_VERSION 0.2.9)
set(TINFER_XGRAMMAR_SHA256 87b466bca2475e29bb0323abc62c6c33cbcbcff47e5fb800a3e2099ac9620b90)
set(TINFER_XGRAMMAR_SDIST "${CMAKE_SOURCE_DIR}/.deps/xgrammar-${TINFER_XGRAMMAR_VERSION}.tar.gz"
    CACHE FILEPATH "xgrammar's PyPI source package (scripts/setup.sh fetches it)")

if(NOT EXISTS "${TINFER_XGRAMMAR_SDIST}")
  message(FATAL_ERROR "xgrammar ${TINFER_XGRAMMAR_VERSION} source package not found at ${TINFER_XGRAMMAR_SDIST}: "
                      "run scripts/setup.sh (it fetches it from PyPI), or set TINFER_XGRAMMAR_SDIST")
endif()
file(SHA256 "${TINFER_XGRAMMAR_SDIST}" _xg_sha)
if(NOT _xg_sha STREQUAL TINFER_XGRAMMAR_SHA256)
  message(FATAL_ERROR "${TINFER_XGRAMMAR_SDIST}: sha256 ${_xg_sha}, expected ${TINFER_XGRAMMAR_SHA256}")
endif()

set(_xg_root "${CMAKE_BINARY_DIR}/_deps/xgrammar-${TINFER_XGRAMMAR_VERSION}")
if(NOT EXISTS "${_xg_root}/.extracted-${TINFER_XGRAMMAR_SHA256}")
  file(REMOVE_RECURSE "${_xg_root}")
  file(ARCHIVE_EXTRACT INPUT "${TINFER_XGRAMMAR_SDIST}" DESTINATION "${CMAKE_BINARY_DIR}/_deps")
  file(TOUCH "${_xg_root}/.extracted-${TINFER_XGRAMMAR_SHA256}")
endif()

file(GLOB _xg_sources "${_xg_root}/cpp/*.cc" "${_xg_root}/cpp/support/*.cc" "${_xg_root}/cpp/converter_ext/*.cc")
add_library(tinfer_xgrammar STATIC ${_xg_sources})
set_target_properties(tinfer_xgrammar PROPERTIES CXX_STANDARD 17 CXX_EXTENSIONS OFF)
target_compile_options(tinfer_xgrammar PRIVATE -w)
target_include_directories(tinfer_xgrammar SYSTEM PUBLIC "${_xg_root}/include" "${_xg_root}/3rdparty/picojson"
                                                         "${_xg_root}/3rdparty/dlpack/include")
target_compile_definitions(tinfer_xgrammar PUBLIC XGRAMMAR_ENABLE_CPPTRACE=0)
target_link_libraries(tinfer_xgrammar PUBLIC Threads::Threads)
