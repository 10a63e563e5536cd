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
# The wrapper calls the partitioned queues section of mongomq.h (0.8.0): look for its
# entry, so an older libmongomq is refused here with its name rather than at load time.
abort "mongomq: mq_queue_new_with not found (a libmongomq with partitioned queues, 0.8.0, is needed)" unless
  have_func("mq_queue_new_with", "mongomq.h")
abort "mongomq: rb_thread_call_without_gvl2 not found" unless have_func("rb_thread_call_without_gvl2", "ruby/thread.h")

# Find a libmongomq installed outside the system's directories at run time too,
# without LD_LIBRARY_PATH: its directory goes in the extension's run path.
libdir = pkg_config("mongomq", "variable=libdir").to_s.strip
libdir = File.expand_path(libdir) unless libdir.empty?
system_dir = %r{\A(/usr)?/lib(64|/[^/]+-linux-gnu[^/]*)?/?\z|\A/usr/local/lib/?\z}
$LDFLAGS << " -Wl,-rpath,#{libdir}" unless libdir.empty? || libdir.match?(system_dir)

create_makefile("mongomq/mongomq_raw")
