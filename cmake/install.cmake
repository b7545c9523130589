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
# Debian wants a maintainer with an address; by default whoever made the
# commit the package is built from (git), else give -DVOLLEY_PACKAGE_MAINTAINER.
if(NOT VOLLEY_PACKAGE_MAINTAINER)
  execute_process(COMMAND git log -1 "--format=%an <%ae>" WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                  OUTPUT_VARIABLE volley_commit_author OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT volley_commit_author)  # not a git checkout: an unpacked source tree
    set(volley_commit_author "Volley developers <volley@localhost>")
  endif()
  set(VOLLEY_PACKAGE_MAINTAINER "${volley_commit_author}" CACHE STRING "The .deb's Maintainer: Name <address>" FORCE)
endif()
set(CPACK_PACKAGE_CONTACT "${VOLLEY_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "low-latency asynchronous messaging library and tools (C++20)")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "Volley is a C++20 toolkit for 5G RAN (gNB) and low-latency trading
services: strict wire protocols (gNB, a checked frame, RPC, ARQ, WebSocket,
HTTP/1.1), a runtime on Boost.Asio with sessions, TLS and reliable UDP, and
benchmark tools that compare every figure with a raw baseline.
.
This package holds the static libraries, headers and CMake package
(find_package(Volley)), the volley and traffic_generator programs, and the
Wireshark dissectors.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_STRIP_FILES ON)  # the programs; CMake leaves the static libraries' symbols alone
# Run time (the programs): what dpkg-shlibdeps reads from their dynamic links.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Build time (a consumer of the static libraries): every library the exported
# targets link, as its -dev package (tests/package/consumer-test.sh checks that
# none is missing).
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libboost1.81-dev, libssl-dev, libspdlog-dev, libfmt-dev, liburing-dev, libusrsctp-dev, cmake (>= 3.25)")
# Debian's changelog and copyright files, which every package carries.
set(volley_doc_build ${PROJECT_BINARY_DIR}/debian-doc)
file(MAKE_DIRECTORY ${volley_doc_build})
# The commit's date, so that the package of one commit is the same whenever it is built.
execute_process(COMMAND git log -1 --format=%cD WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                OUTPUT_VARIABLE volley_package_date OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT volley_package_date)
  string(TIMESTAMP volley_package_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
file(WRITE ${volley_doc_build}/changelog
     "volley (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
     "  * Built from the Volley source tree (README.md, docs/).\n\n"
     " -- ${VOLLEY_PACKAGE_MAINTAINER}  ${volley_package_date}\n")
configure_file(${PROJECT_SOURCE_DIR}/cmake/copyright.in ${volley_doc_build}/copyright @ONLY)
add_custom_command(OUTPUT ${volley_doc_build}/changelog.gz
                   COMMAND gzip -9n -c ${volley_doc_build}/changelog > ${volley_doc_build}/changelog.gz
                   DEPENDS ${volley_doc_build}/changelog)
add_custom_target(volley_debian_doc ALL DEPENDS ${volley_doc_build}/changelog.gz)
install(FILES ${volley_doc_build}/changelog.gz ${volley_doc_build}/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR}
        COMPONENT development)
include(CPack)
