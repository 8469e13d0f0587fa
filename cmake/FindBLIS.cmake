# FindBLIS: Debian's BLIS has neither a .pc nor a CMake config; its header and library sit
# in a folder per threading model (blis-openmp, blis-pthread, ...). Give a prefix with
# BLIS_ROOT (or CMAKE_PREFIX_PATH). Defines BLIS::BLIS and BLIS_FOUND.
set(_blis_suffixes blis-openmp blis blis-pthread blis-serial)
find_path(BLIS_INCLUDE_DIR blis.h
  HINTS ${BLIS_ROOT} ENV BLIS_ROOT
  PATH_SUFFIXES include ${_blis_suffixes} include/blis
    include/${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp include/${CMAKE_LIBRARY_ARCHITECTURE})
find_library(BLIS_LIBRARY NAMES blis blis-mt
  HINTS ${BLIS_ROOT} ENV BLIS_ROOT
  PATH_SUFFIXES lib lib64 ${_blis_suffixes} lib/${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp)
# The archive of the same build, for libtapeflow.so's private copy (see framework/cpu/k_matmul.c).
find_library(BLIS_STATIC_LIBRARY NAMES libblis.a
  HINTS ${BLIS_ROOT} ENV BLIS_ROOT
  PATH_SUFFIXES lib lib64 ${_blis_suffixes} lib/${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(BLIS REQUIRED_VARS BLIS_LIBRARY BLIS_INCLUDE_DIR)
if(BLIS_FOUND AND NOT TARGET BLIS::BLIS)
  add_library(BLIS::BLIS UNKNOWN IMPORTED)
  set_target_properties(BLIS::BLIS PROPERTIES IMPORTED_LOCATION "${BLIS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${BLIS_INCLUDE_DIR}")
endif()
mark_as_advanced(BLIS_INCLUDE_DIR BLIS_LIBRARY BLIS_STATIC_LIBRARY)
