# Finds Debian's libpcre2-dev (the 8-bit library); defines PCRE2::pcre2-8. The byte-level BPE
# tokenizers' pre-tokenizer regular expressions (src/ember/model/bpe_tokenizer.cc) run on it.
# pkg-config's answer is a hint only: the .pc file of an unpacked GPU-node bundle
# (scripts/gpu-unpack.sh) names /usr, not the bundle's prefix.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_PCRE2 QUIET libpcre2-8)
endif()
find_path(PCRE2_INCLUDE_DIR pcre2.h HINTS ${PC_PCRE2_INCLUDE_DIRS})
find_library(PCRE2_LIBRARY NAMES pcre2-8 HINTS ${PC_PCRE2_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(PCRE2 REQUIRED_VARS PCRE2_LIBRARY PCRE2_INCLUDE_DIR VERSION_VAR PC_PCRE2_VERSION)
if(PCRE2_FOUND AND NOT TARGET PCRE2::pcre2-8)
  add_library(PCRE2::pcre2-8 INTERFACE IMPORTED)
  set_target_properties(PCRE2::pcre2-8 PROPERTIES
    INTERFACE_LINK_LIBRARIES "${PCRE2_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${PCRE2_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS "PCRE2_CODE_UNIT_WIDTH=8")
endif()
