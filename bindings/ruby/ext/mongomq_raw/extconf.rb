# Builds MongoMQ::Raw (mongomq_raw.so) from the SWIG wrapper the gem ships, against the
# libmongomq that pkg-config finds (set PKG_CONFIG_PATH for a library installed outside
# the default prefix). No SWIG is needed here.
require "mkmf"

unless pkg_config("mongomq")
  abort <<~MSG
    mongomq: pkg-config cannot find libmongomq (mongomq.pc).
    Install libmongomq first, or point PKG_CONFIG_PATH at the directory that holds
    mongomq.pc (e.g. PKG_CONFIG_PATH=/opt/mongomq/lib/pkgconfig gem install mongomq).
  MSG
end
abort "mongomq: mongomq.h not found" unless have_header("mongomq.h")
abort "mongomq: mq_claim_wait_cancel not found (libmongomq >= 0.3.0 is needed)" unless have_func("mq_claim_wait_cancel", "mongomq.h")
abort "mongomq: rb_thread_call_without_gvl2 not found" unless have_func("rb_thread_call_without_gvl2", "ruby/thread.h")

# Find libmongomq at run time where pkg-config found it, without LD_LIBRARY_PATH.
libdir = pkg_config("mongomq", "variable=libdir")
$LDFLAGS << " -Wl,-rpath,#{libdir}" if libdir && !libdir.empty? && !%w[/usr/lib /lib].include?(libdir)

$CFLAGS << " -std=gnu99 -Wall -Wno-unused-parameter -Wno-unused-function"

create_makefile("mongomq/mongomq_raw")
