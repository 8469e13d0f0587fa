# TflCuda: decides whether the CUDA backend is built. TFL_CUDA=AUTO turns it on when a CUDA
# compiler and cuDNN are found (nvcc is on the CPU build machines too, so CI compiles CUDA
# code); ON requires them; OFF skips them. Sets TFL_HAVE_CUDA and TFL_HAVE_CUDNN (0/1).
set(TFL_HAVE_CUDA 0)
set(TFL_HAVE_CUDNN 0)
if(NOT TFL_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ENV CUDNN_ROOT ENV CUDA_HOME /usr/local/cuda
    PATH_SUFFIXES include)
  find_library(CUDNN_LIBRARY cudnn HINTS ENV CUDNN_ROOT ENV CUDA_HOME /usr/local/cuda
    PATH_SUFFIXES lib64 lib)
  if(CMAKE_CUDA_COMPILER AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 75 80 90)   # explicit: build machines have no GPU
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(TFL_HAVE_CUDA 1)
    set(TFL_HAVE_CUDNN 1)
  elseif(TFL_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TFL_CUDA=ON but nvcc (${CMAKE_CUDA_COMPILER}) or cuDNN "
      "(${CUDNN_INCLUDE_DIR}, ${CUDNN_LIBRARY}) was not found")
  endif()
endif()
message(STATUS "tapeflow: CUDA backend ${TFL_HAVE_CUDA}, cuDNN ${TFL_HAVE_CUDNN}")
