# frozen_string_literal: true

# libmongoc's log the Ruby way: by default into MongoMQ.logger (a Logger on $stderr at
# WARN: warnings reach it, debug lines do not), installed by the first client;
# MONGOMQ_LIBMONGOC_LOG=keep leaves libmongoc's own handler; an explicit
# log_handler = nil before it silences; the level map of log_to_logger.
require_relative "test_helper"
require "stringio"

class TestLog < MongoMQTest::Case
  FIXTURE = File.join(__dir__, "fixtures", "default_log.rb")
  WARNING = /mongomqnosuchoption/i

  # Runs the fixture; returns [stdout lines, stderr].
  def child(mode, env = {})
    out_r, out_w = IO.pipe
    err_r, err_w = IO.pipe
    pid = Process.spawn({ "MONGOMQ_LIBMONGOC_LOG" => nil }.merge(env), RbConfig.ruby,
                        *$LOAD_PATH.flat_map { |p| ["-I", p] }, FIXTURE, mode, out: out_w, err: err_w)
    out_w.close
    err_w.close
    out = Thread.new { out_r.read }
    err = Thread.new { err_r.read }
    Process.wait(pid)
    assert_equal 0, $?.exitstatus, "the child: #{err.value}"
    [out.value.lines.map(&:chomp), err.value]
  ensure
    [out_r, err_r].each { |io| io&.close }
  end

  def test_default_logs_warnings_to_logger
    out, err = child("default")
    assert_equal ["queue: MongoMQ::ConnectError", "handler: log_to_logger"], out
    line = err.lines.find { |l| l.match?(WARNING) }
    refute_nil line, "libmongoc's warning reached the logger: #{err}"
    assert_match(/\AW, \[.*\] +WARN -- mongomq: mongoc: /, line, "Logger's format, WARN, progname mongomq, domain")
    refute_match(/DEBUG/, err, "debug lines are off by default (the monitor's failures are debug)")
  end

  def test_keep_leaves_libmongoc_handler
    out, err = child("default", "MONGOMQ_LIBMONGOC_LOG" => "keep")
    assert_includes out, "handler: nil"
    line = err.lines.find { |l| l.match?(WARNING) }
    refute_nil line, "libmongoc's own handler printed its warning: #{err}"
    assert_match(/WARNING: +mongoc: /, line, "libmongoc's own format")
    refute_match(/-- mongomq:/, err, "nothing went to the gem's logger")
  end

  def test_silence_before_first_client
    out, err = child("silence")
    assert_includes out, "handler: nil"
    refute_match(WARNING, err, "silenced: no line anywhere")
  end

  def test_log_to_logger_levels
    io = StringIO.new
    old = MongoMQ.logger
    MongoMQ.logger = Logger.new(io, level: Logger::DEBUG, formatter: ->(sev, _, prog, msg) { "#{sev} #{prog} #{msg}\n" })
    (0..6).each { |level| MongoMQ.log_to_logger(level, "d", "m#{level}") }
    assert_equal ["ERROR mongomq d: m0", "ERROR mongomq d: m1", "WARN mongomq d: m2", "INFO mongomq d: m3",
                  "INFO mongomq d: m4", "DEBUG mongomq d: m5", "DEBUG mongomq d: m6"], io.string.lines.map(&:chomp)
    io.truncate(0)
    io.rewind
    MongoMQ.logger.level = Logger::WARN
    (0..6).each { |level| MongoMQ.log_to_logger(level, "d", "m#{level}") }
    assert_equal %w[ERROR ERROR WARN], io.string.lines.map { |l| l.split.first }, "WARN and above at WARN"
    assert_raises(MongoMQ::ArgumentError) { MongoMQ.logger = 42 }
  ensure
    MongoMQ.logger = old
  end

  # The default handler, set explicitly (as the first client sets it), delivers a
  # real libmongoc warning to MongoMQ.logger on the gem's log thread.
  def test_logger_gets_libmongoc_warning
    lines = Thread::Queue.new
    old = MongoMQ.logger
    MongoMQ.logger = Logger.new(StringIO.new, level: Logger::WARN).tap do |logger|
      logger.formatter = ->(sev, _, _, msg) { lines << [sev, msg, Thread.current.name] if msg.match?(WARNING) }
    end
    MongoMQ.log_handler = MongoMQ.method(:log_to_logger)
    track(MongoMQ::Client.new("mongodb://127.0.0.1:1/?mongomqNoSuchOption=1"))
    sev, msg, thread = Timeout.timeout(10) { lines.pop }
    assert_equal ["WARN", "mongomq log"], [sev, thread]
    assert_match(/\Amongoc: /, msg)
  ensure
    MongoMQ.log_handler = nil
    MongoMQ.logger = old
  end
end
