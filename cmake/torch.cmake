# Finds libtorch (the C++ half of the torch wheel) for the model, trainer and distributed layers.
# Order: CMAKE_PREFIX_PATH as given; else ask EMBER_PYTHON (or python3) for
# torch.utils.cmake_prefix_path. Torch's config probes the CUDA toolkit; the architecture list
# is fixed to Hopper so that no GPU needs to be present at configure time.
set(EMBER_PYTHON "" CACHE FILEPATH "Python with pyarrow (tests) and torch (libtorch carrier)")
if(NOT TORCH_CUDA_ARCH_LIST)
  set(TORCH_CUDA_ARCH_LIST "9.0")
endif()
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  set(_ember_py "${EMBER_PYTHON}")
  if(NOT _ember_py)
    find_program(_ember_py NAMES python3)
  endif()
  if(_ember_py)
    execute_process(COMMAND ${_ember_py} -c "import torch; print(torch.utils.cmake_prefix_path)"
                    OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE _torch_rc ERROR_QUIET)
    if(_torch_rc EQUAL 0 AND _torch_prefix)
      list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
    endif()
  endif()
  find_package(Torch REQUIRED)
endif()
message(STATUS "libtorch ${Torch_VERSION}: ${TORCH_INSTALL_PREFIX}")

# The wheel's libtorch.so exports its own copies of some std::filesystem functions; an
# executable that lists libtorch.so before libstdc++.so binds to them and crashes in
# std::filesystem::remove_all. Naming libstdc++ first makes every program use the system's.
add_link_options("LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")
