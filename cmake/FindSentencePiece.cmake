# Finds Debian's libsentencepiece-dev (no CMake config); defines SentencePiece::sentencepiece
# (the processor and the trainer library). pkg-config's answer is a hint only: the .pc file of
# an unpacked GPU-node bundle (scripts/gpu-unpack.sh) names /usr, not the bundle's prefix.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_SentencePiece QUIET sentencepiece)
endif()
find_path(SentencePiece_INCLUDE_DIR sentencepiece_processor.h HINTS ${PC_SentencePiece_INCLUDE_DIRS})
find_library(SentencePiece_LIBRARY NAMES sentencepiece HINTS ${PC_SentencePiece_LIBRARY_DIRS})
find_library(SentencePiece_TRAIN_LIBRARY NAMES sentencepiece_train HINTS ${PC_SentencePiece_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SentencePiece
  REQUIRED_VARS SentencePiece_LIBRARY SentencePiece_TRAIN_LIBRARY SentencePiece_INCLUDE_DIR
  VERSION_VAR PC_SentencePiece_VERSION)
if(SentencePiece_FOUND AND NOT TARGET SentencePiece::sentencepiece)
  add_library(SentencePiece::sentencepiece INTERFACE IMPORTED)
  set_target_properties(SentencePiece::sentencepiece PROPERTIES
    INTERFACE_LINK_LIBRARIES "${SentencePiece_TRAIN_LIBRARY};${SentencePiece_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SentencePiece_INCLUDE_DIR}")
endif()
