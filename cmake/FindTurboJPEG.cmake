# libturbojpeg0-dev: libjpeg-turbo's TurboJPEG API (ember's training shards hold JPEG frames).
find_path(TurboJPEG_INCLUDE_DIR turbojpeg.h)
find_library(TurboJPEG_LIBRARY NAMES turbojpeg)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(TurboJPEG REQUIRED_VARS TurboJPEG_LIBRARY TurboJPEG_INCLUDE_DIR)
if(TurboJPEG_FOUND AND NOT TARGET TurboJPEG::turbojpeg)
  add_library(TurboJPEG::turbojpeg UNKNOWN IMPORTED)
  set_target_properties(TurboJPEG::turbojpeg PROPERTIES IMPORTED_LOCATION ${TurboJPEG_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${TurboJPEG_INCLUDE_DIR})
endif()
