# Finds MuJoCo (Debian's libmujoco-dev, or the same package unpacked into a prefix by
# scripts/gpu-unpack.sh) and defines MuJoCo::MuJoCo. GL libraries are not linked: ember's sim
# layer opens OSMesa or EGL with dlopen at run time (src/ember/sim/gl_context.h).
find_path(MuJoCo_INCLUDE_DIR mujoco/mujoco.h)
find_library(MuJoCo_LIBRARY NAMES mujoco)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MuJoCo REQUIRED_VARS MuJoCo_LIBRARY MuJoCo_INCLUDE_DIR)
if(MuJoCo_FOUND AND NOT TARGET MuJoCo::MuJoCo)
  add_library(MuJoCo::MuJoCo UNKNOWN IMPORTED)
  set_target_properties(MuJoCo::MuJoCo PROPERTIES IMPORTED_LOCATION "${MuJoCo_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${MuJoCo_INCLUDE_DIR}")
endif()
mark_as_advanced(MuJoCo_INCLUDE_DIR MuJoCo_LIBRARY)
