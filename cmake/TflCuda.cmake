# TflCuda: decides whether the CUDA backend is built, and sets TFL_HAVE_CUDA and
# TFL_HAVE_CUDNN (0/1) for <tapeflow/version.h>, which must say only what the library
# contains. The backend's sources live in framework/cuda/ (its CMakeLists.txt adds them):
#   TFL_CUDA=AUTO  builds it when its sources, a CUDA compiler and cuBLAS are there (nvcc is
#                  on the CPU build machines too, so CI compiles CUDA code); otherwise builds
#                  the CPU library and says why;
#   TFL_CUDA=ON    requires all of them: an error names what is missing;
#   TFL_CUDA=OFF   never builds it.
# cuDNN (framework/cuda/cudnn_conv.c: the convolutions through cuDNN's legacy API; without it
# they run as im2col + cuBLAS) is TFL_CUDNN's:
#   TFL_CUDNN=AUTO  used when the backend is built and cudnn.h and libcudnn are found;
#   TFL_CUDNN=ON    required: an error names what is missing;
#   TFL_CUDNN=OFF   never used: no cuDNN header or library takes part in the build.
# TFL_HAVE_CUDNN says whether cuDNN kernels are in the library.
# CMAKE_CUDA_ARCHITECTURES defaults to the data-centre GPUs: A100 (80), H100/H200 (90) as
# machine code, and B100/B200 (100) as machine code plus PTX for later GPUs.
set(TFL_HAVE_CUDA 0)
set(TFL_HAVE_CUDNN 0)
if(NOT TFL_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "TFL_CUDA must be AUTO, ON or OFF, got '${TFL_CUDA}'")
endif()
if(NOT TFL_CUDNN MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "TFL_CUDNN must be AUTO, ON or OFF, got '${TFL_CUDNN}'")
endif()
set(TFL_CUDA_SOURCE_DIR "${PROJECT_SOURCE_DIR}/framework/cuda")
if(TFL_CUDA STREQUAL "OFF")
  set(_tfl_cuda_why "TFL_CUDA=OFF")
elseif(NOT EXISTS "${TFL_CUDA_SOURCE_DIR}/CMakeLists.txt")
  set(_tfl_cuda_why "this tapeflow has no CUDA backend yet (no ${TFL_CUDA_SOURCE_DIR}/CMakeLists.txt)")
  if(TFL_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TFL_CUDA=ON, but ${_tfl_cuda_why}: configure with -DTFL_CUDA=AUTO or OFF")
  endif()
else()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 100)   # explicit: build machines have no GPU
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND TARGET CUDA::cublas
     AND TARGET CUDA::cudart_static)
    set(TFL_HAVE_CUDA 1)
  else()
    set(_tfl_cuda_why "nvcc (${CMAKE_CUDA_COMPILER}) or cuBLAS/cudart_static (CUDAToolkit_FOUND=${CUDAToolkit_FOUND}) was not found")
    if(TFL_CUDA STREQUAL "ON")
      message(FATAL_ERROR "TFL_CUDA=ON but ${_tfl_cuda_why}")
    endif()
  endif()
endif()
set(_tfl_cudnn_why "TFL_CUDNN=OFF")
if(TFL_HAVE_CUDA AND NOT TFL_CUDNN STREQUAL "OFF")
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ENV CUDNN_ROOT ENV CUDA_HOME ${CUDAToolkit_LIBRARY_ROOT}
    /usr/local/cuda PATH_SUFFIXES include)
  find_library(CUDNN_LIBRARY cudnn HINTS ENV CUDNN_ROOT ENV CUDA_HOME ${CUDAToolkit_LIBRARY_ROOT}
    /usr/local/cuda PATH_SUFFIXES lib64 lib)
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    set(TFL_HAVE_CUDNN 1)
  else()
    set(_tfl_cudnn_why "cudnn.h (${CUDNN_INCLUDE_DIR}) or libcudnn (${CUDNN_LIBRARY}) was not found")
    if(TFL_CUDNN STREQUAL "ON")
      message(FATAL_ERROR "TFL_CUDNN=ON but ${_tfl_cudnn_why}")
    endif()
  endif()
elseif(NOT TFL_HAVE_CUDA AND TFL_CUDNN STREQUAL "ON")
  message(FATAL_ERROR "TFL_CUDNN=ON needs the CUDA backend, which is not built (${_tfl_cuda_why})")
endif()
if(TFL_HAVE_CUDA)
  if(TFL_HAVE_CUDNN)
    message(STATUS "tapeflow: CUDA backend 1, cuDNN 1 (${CUDNN_LIBRARY})")
  else()
    message(STATUS "tapeflow: CUDA backend 1, cuDNN 0 (${_tfl_cudnn_why}): convolutions run as im2col + cuBLAS")
  endif()
else()
  message(STATUS "tapeflow: CUDA backend 0 (${_tfl_cuda_why}), cuDNN 0")
endif()
