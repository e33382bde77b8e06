# Finds Debian's libsnappy-dev (it ships no CMake config); defines Snappy::snappy.
find_path(Snappy_INCLUDE_DIR snappy.h)
find_library(Snappy_LIBRARY NAMES snappy)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Snappy REQUIRED_VARS Snappy_LIBRARY Snappy_INCLUDE_DIR)
if(Snappy_FOUND AND NOT TARGET Snappy::snappy)
  add_library(Snappy::snappy UNKNOWN IMPORTED)
  set_target_properties(Snappy::snappy PROPERTIES IMPORTED_LOCATION "${Snappy_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${Snappy_INCLUDE_DIR}")
endif()
