# Install rules (cmake --install build [--prefix DIR]): the binary, both libraries, the public
# headers, pkg-config and CMake package files, the man page and the bash completion. Every path
# is relative to the prefix, so an install into any prefix works (the .pc and the CMake package
# find their prefix from where they lie).
include(CMakePackageConfigHelpers)

install(TARGETS natsd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS natsd_shared EXPORT natsdTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_BINARY_DIR}/libnatsd.a DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/natsd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")

# pkg-config: -lnatsd links libnatsd.so; with --static, Libs.private names the libraries the
# core is linked with, spelled from what find_library found (-lck -ljansson ...).
set(ND_PC_LIBS_PRIVATE "")
foreach(lib ${CK_LIB} ${JANSSON_LIB} ${MSGPACK_LIB} ${XXHASH_LIB} ${LZ4_LIB} ${CRYPT_LIB}
        ${OPENSSL_SSL_LIBRARY} ${OPENSSL_CRYPTO_LIBRARY})
  get_filename_component(name ${lib} NAME_WE)
  string(REGEX REPLACE "^lib" "" name ${name})
  string(APPEND ND_PC_LIBS_PRIVATE " -l${name}")
endforeach()
foreach(name ${ZLIB_LIBRARIES}) # from pkg-config: names already (z)
  string(APPEND ND_PC_LIBS_PRIVATE " -l${name}")
endforeach()
string(APPEND ND_PC_LIBS_PRIVATE " -pthread")
string(STRIP "${ND_PC_LIBS_PRIVATE}" ND_PC_LIBS_PRIVATE)
file(RELATIVE_PATH ND_PC_PREFIX_REL "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig"
     "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" ND_PC_PREFIX_REL "${ND_PC_PREFIX_REL}")
configure_file(cmake/natsd.pc.in natsd.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/natsd.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# find_package(natsd): natsd::natsd (the shared library, exported) and natsd::natsd_static
# (libnatsd.a, an imported target written in natsdConfig.cmake with the libraries it needs by
# name, as natsd.pc's Libs.private).
string(REPLACE "-l" "" ND_CMAKE_STATIC_LIBS "${ND_PC_LIBS_PRIVATE}")
string(REPLACE " -pthread" "" ND_CMAKE_STATIC_LIBS "${ND_CMAKE_STATIC_LIBS}")
string(REPLACE " " ";" ND_CMAKE_STATIC_LIBS "${ND_CMAKE_STATIC_LIBS}")
set(ND_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/natsd)
install(EXPORT natsdTargets NAMESPACE natsd:: DESTINATION ${ND_CMAKE_DIR})
configure_package_config_file(cmake/natsdConfig.cmake.in natsdConfig.cmake
                              INSTALL_DESTINATION ${ND_CMAKE_DIR})
write_basic_package_version_file(natsdConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/natsdConfig.cmake ${PROJECT_BINARY_DIR}/natsdConfigVersion.cmake
        DESTINATION ${ND_CMAKE_DIR})

install(FILES docs/natsd.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
install(FILES deploy/bash-completion/natsd
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES examples/embed.c DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
