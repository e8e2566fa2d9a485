# Install rules, included at the end of CMakeLists.txt. Two installs share them:
#   pip install .   (scikit-build-core sets SKBUILD): the Python package's compiled parts:
#                   the libraries in rowfuse/_lib/, the public headers and the package shim
#                   the kernel generator compiles in rowfuse/_data/, the CLI in the
#                   environment's bin/ (python/rowfuse/capi/locate.py finds them).
#   cmake --install BUILD --prefix PREFIX   the C API: headers (include/rowfuse), the core
#                   library librowfuse.so, librowfuse_runtime.so when CUDA was found, the
#                   CLI, a CMake package (find_package(rowfuse): rowfuse::core,
#                   rowfuse::runtime) and pkg-config files (rowfuse, rowfuse-runtime).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(RF_INSTALL_TARGETS rowfuse rowfuse_shared)
if(TARGET rowfuse_runtime_shared)
  list(APPEND RF_INSTALL_TARGETS rowfuse_runtime_shared)
endif()
# What an install needs built (pyproject.toml's build.targets), not the tests.
add_custom_target(rowfuse_install_parts DEPENDS ${RF_INSTALL_TARGETS})
# Installed copies find the system libraries they link (libcublasLt, libcjson) where the
# build found them.
set_target_properties(${RF_INSTALL_TARGETS} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)

if(SKBUILD)
  install(TARGETS rowfuse RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR})
  install(TARGETS ${RF_INSTALL_TARGETS} LIBRARY DESTINATION rowfuse/_lib)
  install(DIRECTORY include/rowfuse DESTINATION rowfuse/_data/include)
  install(FILES src/pkg/rf_pkg_shim.c DESTINATION rowfuse/_data/src/pkg)
  return()
endif()

# The version: pyproject.toml's, the one place it is written.
set(RF_INSTALL_VERSION 0)
file(STRINGS ${PROJECT_SOURCE_DIR}/pyproject.toml RF_INSTALL_VERSION_LINE
     REGEX "^version *= *\"[0-9.]+\"")
if(RF_INSTALL_VERSION_LINE MATCHES "\"([0-9.]+)\"")
  set(RF_INSTALL_VERSION ${CMAKE_MATCH_1})
endif()

install(TARGETS ${RF_INSTALL_TARGETS}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/rowfuse DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(RF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rowfuse)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/rowfuseConfig.cmake.in
  ${CMAKE_BINARY_DIR}/install/rowfuseConfig.cmake
  INSTALL_DESTINATION ${RF_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/install/rowfuseConfigVersion.cmake
  VERSION ${RF_INSTALL_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/install/rowfuseConfig.cmake
  ${CMAKE_BINARY_DIR}/install/rowfuseConfigVersion.cmake DESTINATION ${RF_CMAKE_DIR})

set(RF_PC_LIB rowfuse)
set(RF_PC_DESCRIPTION "rowfuse core: ONNX import, verification, CPU reference and compiler")
configure_file(${CMAKE_CURRENT_LIST_DIR}/rowfuse.pc.in ${CMAKE_BINARY_DIR}/install/rowfuse.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/install/rowfuse.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(TARGET rowfuse_runtime_shared)
  set(RF_PC_LIB rowfuse_runtime)
  set(RF_PC_DESCRIPTION "rowfuse runtime: load a package, run it, replay it through a CUDA Graph")
  configure_file(${CMAKE_CURRENT_LIST_DIR}/rowfuse.pc.in
    ${CMAKE_BINARY_DIR}/install/rowfuse-runtime.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/install/rowfuse-runtime.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
