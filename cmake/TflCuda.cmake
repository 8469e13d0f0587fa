# TflCuda: decides whether the CUDA backend is built, and sets TFL_HAVE_CUDA and
# TFL_HAVE_CUDNN (0/1) for <tapeflow/version.h>, which must say only what the library
# contains. The backend's sources live in framework/cuda/ (its CMakeLists.txt adds them):
#   TFL_CUDA=AUTO  builds it when its sources, a CUDA compiler, cuBLAS and cuDNN are all
#                  there (nvcc is on the CPU build machines too, so CI compiles CUDA code);
#                  otherwise builds the CPU library and says why;
#   TFL_CUDA=ON    requires all of them: an error names what is missing;
#   TFL_CUDA=OFF   never builds it.
# TFL_HAVE_CUDNN says whether cuDNN kernels are in the library: part 1 of the backend has
# none yet (convolutions and pooling run on the CPU), so it stays 0 until they exist.
# CMAKE_CUDA_ARCHITECTURES defaults to the data-centre GPUs: A100 (80), H100/H200 (90) as
# machine code, and B100/B200 (100) as machine code plus PTX for later GPUs.
set(TFL_HAVE_CUDA 0)
set(TFL_HAVE_CUDNN 0)
if(NOT TFL_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "TFL_CUDA must be AUTO, ON or OFF, got '${TFL_CUDA}'")
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
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ENV CUDNN_ROOT ENV CUDA_HOME /usr/local/cuda
    PATH_SUFFIXES include)
  find_library(CUDNN_LIBRARY cudnn HINTS ENV CUDNN_ROOT ENV CUDA_HOME /usr/local/cuda
    PATH_SUFFIXES lib64 lib)
  if(CMAKE_CUDA_COMPILER AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 100)   # explicit: build machines have no GPU
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY AND CUDAToolkit_FOUND
     AND TARGET CUDA::cublas AND TARGET CUDA::cudart_static)
    set(TFL_HAVE_CUDA 1)
  else()
    set(_tfl_cuda_why "nvcc (${CMAKE_CUDA_COMPILER}), cuBLAS/cudart_static (CUDAToolkit_FOUND=${CUDAToolkit_FOUND}) or cuDNN (${CUDNN_INCLUDE_DIR}, ${CUDNN_LIBRARY}) was not found")
    if(TFL_CUDA STREQUAL "ON")
      message(FATAL_ERROR "TFL_CUDA=ON but ${_tfl_cuda_why}")
    endif()
  endif()
endif()
if(TFL_HAVE_CUDA)
  message(STATUS "tapeflow: CUDA backend 1, cuDNN ${TFL_HAVE_CUDNN}")
else()
  message(STATUS "tapeflow: CUDA backend 0 (${_tfl_cuda_why}), cuDNN 0")
endif()
