# CAF 0.17.6 as imported targets CAF::core, CAF::io, CAF::openssl.
# Debian's libcaf-dev ships no CMake package, so the build and atrainConfig.cmake
# (installed next to this file) both import it by hand. Needs Threads and OpenSSL
# found first (the caller does: find_package in the build, find_dependency in the config).
if(TARGET CAF::core AND TARGET CAF::io AND TARGET CAF::openssl)
  return()
endif()
find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY NAMES caf_core)
find_library(CAF_IO_LIBRARY NAMES caf_io)
find_library(CAF_OPENSSL_LIBRARY NAMES caf_openssl)
if(NOT CAF_INCLUDE_DIR OR NOT CAF_CORE_LIBRARY OR NOT CAF_IO_LIBRARY OR NOT CAF_OPENSSL_LIBRARY)
  message(FATAL_ERROR "CAF 0.17 not found (caf/all.hpp: ${CAF_INCLUDE_DIR}, caf_core: ${CAF_CORE_LIBRARY}, "
                      "caf_io: ${CAF_IO_LIBRARY}, caf_openssl: ${CAF_OPENSSL_LIBRARY}): "
                      "install libcaf-dev (apps/setup.sh does)")
endif()
add_library(CAF::core UNKNOWN IMPORTED)
set_target_properties(CAF::core PROPERTIES
  IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES Threads::Threads)
add_library(CAF::io UNKNOWN IMPORTED)
set_target_properties(CAF::io PROPERTIES
  IMPORTED_LOCATION "${CAF_IO_LIBRARY}"
  INTERFACE_LINK_LIBRARIES CAF::core)
# Mutual TLS between hosts (libcaf-dev ships libcaf_openssl; OpenSSL from libssl-dev).
add_library(CAF::openssl UNKNOWN IMPORTED)
set_target_properties(CAF::openssl PROPERTIES
  IMPORTED_LOCATION "${CAF_OPENSSL_LIBRARY}"
  INTERFACE_LINK_LIBRARIES "CAF::io;OpenSSL::SSL;OpenSSL::Crypto")
