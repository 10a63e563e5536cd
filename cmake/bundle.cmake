# The bundled build's dependencies as the two imported targets the system build gets
# from pkg-config (PkgConfig::MONGOC, PkgConfig::JANSSON), but static: libmongoc and
# libbson from MONGOMQ_BUNDLE_MONGOC, jansson and OpenSSL from their static archives.
# Only glibc's libraries stay dynamic (scripts/bundle-check.sh checks the result).
set(_bundle_lib ${MONGOMQ_BUNDLE_MONGOC}/lib)
foreach(_name libjansson.a libssl.a libcrypto.a)
  string(MAKE_C_IDENTIFIER ${_name} _var)
  find_library(MONGOMQ_BUNDLE_${_var} NAMES ${_name} REQUIRED)
endforeach()
add_library(PkgConfig::MONGOC INTERFACE IMPORTED)
target_include_directories(PkgConfig::MONGOC INTERFACE
  ${MONGOMQ_BUNDLE_MONGOC}/include/libmongoc-1.0 ${MONGOMQ_BUNDLE_MONGOC}/include/libbson-1.0)
target_compile_definitions(PkgConfig::MONGOC INTERFACE MONGOC_STATIC BSON_STATIC)
target_link_libraries(PkgConfig::MONGOC INTERFACE
  ${_bundle_lib}/libmongoc-static-1.0.a ${_bundle_lib}/libbson-static-1.0.a
  ${MONGOMQ_BUNDLE_libssl_a} ${MONGOMQ_BUNDLE_libcrypto_a} resolv rt pthread dl m)
add_library(PkgConfig::JANSSON INTERFACE IMPORTED)
target_link_libraries(PkgConfig::JANSSON INTERFACE ${MONGOMQ_BUNDLE_libjansson_a})
