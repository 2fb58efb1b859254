# Decides whether the Python module is built (HFSTATIC_PYTHON_MODULE). It needs Python's headers
# and pybind11; sanitizer and fuzz builds leave it out, since a sanitized extension cannot load
# into an unsanitized interpreter. The module links the same static libraries as the tool, so
# when it is built every library is compiled position-independent (without semantic
# interposition, which keeps the code as the executable's).
set(HFSTATIC_PYTHON_MODULE OFF)
if(NOT HFSTATIC_PYTHON)
  message(STATUS "Python module: off (HFSTATIC_PYTHON=OFF)")
elseif(HFSTATIC_SANITIZE OR HFSTATIC_FUZZ)
  message(STATUS "Python module: off in sanitizer and fuzz builds")
else()
  find_package(Python3 COMPONENTS Interpreter Development.Module)
  find_package(pybind11 2.6 CONFIG QUIET)
  if(NOT Python3_Development.Module_FOUND)
    message(STATUS "Python module: skipped, Python's headers were not found (Debian: python3-dev)")
  elseif(NOT pybind11_FOUND)
    message(STATUS "Python module: skipped, pybind11 was not found (Debian: pybind11-dev)")
  else()
    message(STATUS "Python module: on, for ${Python3_EXECUTABLE} (Python ${Python3_VERSION}, pybind11 ${pybind11_VERSION})")
    set(HFSTATIC_PYTHON_MODULE ON)
    set(CMAKE_POSITION_INDEPENDENT_CODE ON)
    add_compile_options(-fno-semantic-interposition)
  endif()
endif()
