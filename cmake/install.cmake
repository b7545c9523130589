# Installs the public headers, the libraries, the programs and a CMake package
# (find_package(Volley) then volley::volley or a component), and describes the
# Debian package `make package` builds from the same tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VOLLEY_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Volley)
get_property(volley_libraries GLOBAL PROPERTY VOLLEY_LIBRARIES)

install(TARGETS ${volley_libraries} volley_all EXPORT VolleyTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/volley DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
        FILES_MATCHING PATTERN "*.hpp")
install(EXPORT VolleyTargets NAMESPACE volley:: FILE VolleyTargets.cmake DESTINATION ${VOLLEY_CMAKE_DIR}
        COMPONENT development)

# The component list the package checks `find_package(Volley COMPONENTS ...)` against.
set(VOLLEY_COMPONENTS "")
foreach(library IN LISTS volley_libraries)
  get_target_property(component ${library} EXPORT_NAME)
  list(APPEND VOLLEY_COMPONENTS ${component})
endforeach()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/VolleyConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/VolleyConfig.cmake INSTALL_DESTINATION ${VOLLEY_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/VolleyConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/VolleyConfig.cmake ${PROJECT_BINARY_DIR}/VolleyConfigVersion.cmake
        DESTINATION ${VOLLEY_CMAKE_DIR} COMPONENT development)

if(TARGET volley AND TARGET traffic_generator)
  install(TARGETS volley traffic_generator RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT programs)
endif()
# The Wireshark dissectors: copy (or link) into ~/.local/lib/wireshark/plugins/,
# or `make install-wireshark-plugin`.
install(FILES ${PROJECT_SOURCE_DIR}/tools/wireshark/volley.lua DESTINATION ${CMAKE_INSTALL_DATADIR}/volley/wireshark
        COMPONENT programs)
install(FILES ${PROJECT_SOURCE_DIR}/docs/WIRESHARK.md ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/GUIDE.md ${PROJECT_SOURCE_DIR}/docs/PROTOCOL.md
        ${PROJECT_SOURCE_DIR}/docs/TOOLS.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT development)

# `make package`: one .deb with the headers, libraries, CMake package and programs.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME volley)
set(CPACK_PACKAGE_VENDOR "Volley")
set(CPACK_PACKAGE_CONTACT "Volley developers <volley@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Volley: low-latency asynchronous messaging library and tools (C++20)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
# What a consumer of the static libraries and the programs needs at build and run time.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libboost1.81-dev, libssl-dev, libspdlog-dev, libfmt-dev, cmake (>= 3.25)")
include(CPack)
