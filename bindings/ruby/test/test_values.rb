# frozen_string_literal: true

# The values of 0.4.0's vocabulary: instants are Time values (UTC) in and out,
# durations Float seconds; the lease's text and json; RepairCounts; status names from
# the C library (and none for ClosedError); a scheduled batch event; the old names gone;
# the group listing's rows in Ruby values; publish's results (0.6.0): Integers from
# publish and publish_batch, with keys too; Published and PublishedBatch, plain values,
# from publish_with and publish_batch_with.
require_relative "test_helper"
require "set"

class TestValues < MongoMQTest::Case
  def test_instants_are_times
    now = @queue.now
    assert_kind_of Time, now
    assert now.utc?
    assert_in_delta Time.now, now, 60
    @queue.publish("g", "x", not_before: now - 1) # a Time in the past: due now
    lease = claim!(visibility: Rational(5, 2))
    assert_kind_of Time, lease.deadline
    assert_in_delta now + 2.5, lease.deadline, 2
    assert_equal 2.5, lease.visibility
    assert_kind_of Float, @queue.clock_offset
    peeked = @queue.peek.first
    assert_kind_of Time, peeked.published_at
    assert_kind_of Time, peeked.not_before
    assert peeked.published_at.utc?
    assert_kind_of Time, @queue.stats["now"]
    @queue.ack(lease)
  end

  def test_durations_are_seconds
    assert_nil @queue.claim(wait: 0)
    waited = timed { assert_nil @queue.claim(wait: Rational(3, 10)) }
    assert_operator waited, :>=, 0.25
    @queue.publish("g", "x")
    lease = claim!(visibility: 1)
    @queue.nack(lease, delay: 0.2)
    assert_nil @queue.claim
    refute_nil @queue.claim(wait: 5)
  end

  def test_lease_text_and_json
    @queue.publish("g", '{"order":1,"items":["a"]}')
    @queue.publish("h", "\xff\xfe".b)
    @queue.publish("i", "not json")
    lease = claim!
    assert_equal({ "order" => 1, "items" => ["a"] }, lease.json)
    assert_equal({ order: 1, items: ["a"] }, lease.json(symbolize_names: true))
    assert_equal Encoding::UTF_8, lease.text.encoding
    binary = claim!
    assert_raises(Encoding::InvalidByteSequenceError) { binary.text }
    assert_raises(Encoding::InvalidByteSequenceError) { binary.json }
    assert_equal "\xff\xfe".b, binary.event, "the bytes are still there"
    assert_raises(JSON::ParserError) { claim!.json }
    stored = @queue.peek(group: "g").first
    assert_equal 1, stored.json["order"]
    assert_raises(Encoding::InvalidByteSequenceError) { @queue.peek(group: "h").first.text }
  end

  def test_repair_counts_type
    counts = @queue.repair_counts
    assert_kind_of MongoMQ::RepairCounts, counts
    assert counts.frozen?
    assert_equal [0, 0], [counts.runs, counts.fixed]
    refute_respond_to @queue, :set_repair_interval, "one setter style: repair_interval ="
  end

  def test_status_names_from_the_library
    refute MongoMQ.const_defined?(:STATUSES), "no status table of the gem's own"
    @queue.publish("g", "x")
    stale = claim!(visibility: 0.2)
    sleep 0.4
    claim!(other_queue)
    lost = assert_raises(MongoMQ::LeaseLost) { @queue.ack(stale) }
    assert_equal ["MQ_LEASE_LOST", :lease_lost], [lost.status_name, lost.status]
    from_c = assert_raises(MongoMQ::ArgumentError) { @queue.publish("g", "x", priority: 9) }
    from_ruby = assert_raises(MongoMQ::ArgumentError) { @queue.publish("g", "x", priority: "9") }
    [from_c, from_ruby].each { |e| assert_equal ["MQ_ERR_ARG", :err_arg], [e.status_name, e.status] }
    queue = other_queue
    queue.close
    closed = assert_raises(MongoMQ::ClosedError) { queue.publish("g", "x") }
    assert_equal [nil, nil], [closed.status_name, closed.status], "closed is the gem's own, with no C status"
    assert_kind_of MongoMQ::Error, closed
  end

  def test_batch_scheduled_event
    later = @queue.now + 1.5
    first = @queue.publish_batch do |b|
      b.add("later", "l", not_before: later)
      b.add("now", "n", priority: 2)
    end
    lease = claim!
    assert_equal ["now", first + 1], [lease.group, lease.seq]
    @queue.ack(lease)
    assert_nil @queue.claim, "the scheduled batch event is not due yet"
    lease = claim!(wait: 10)
    assert_equal ["later", first], [lease.group, lease.seq]
    assert_in_delta later, @queue.peek(group: "later").first.not_before, 0.01
  end

  # GroupInfo's nulls are nil, instants Time (UTC), durations Float seconds: a lease
  # that ran out keeps its holder but has no deadline, a parked group is due at its
  # head's time, a group paused ahead has no events.
  def test_group_rows_are_ruby_values
    t = Time.utc(2031, 1, 1)
    clock = track(MongoMQ::ManualClock.new(t))
    @queue.clock = clock
    @queue.publish("lapsed", "x")
    assert_equal "lapsed", claim!(worker_id: "w1", visibility: 5).group
    clock.advance(10)
    seq = @queue.publish("parked", "x", not_before: t + 3600)
    @queue.pause_group("ahead")
    ahead, lapsed, parked = @queue.groups.groups
    assert_equal ["ahead", :paused, true, 0], [ahead.group, ahead.state, ahead.paused?, ahead.backlog]
    assert_equal [nil, nil, nil, nil], [ahead.head, ahead.head_age_s, ahead.holder, ahead.held_for_s]
    assert_equal [:ready, "w1", 1], [lapsed.state, lapsed.holder, lapsed.attempts], "its last holder"
    assert_equal [nil, nil], [lapsed.held_for_s, lapsed.lease_deadline], "not held any more"
    assert_equal [t + 5, 10.0], [lapsed.available_at, lapsed.head_age_s]
    assert_kind_of Float, lapsed.head_age_s
    assert_equal Encoding::UTF_8, lapsed.holder.encoding
    assert_equal [:parked, seq, 1, nil], [parked.state, parked.head, parked.backlog, parked.holder]
    assert_equal t + 3600, parked.available_at
    assert parked.available_at.utc?
    assert_equal %w[parked], @queue.groups(states: "parked").groups.map(&:group)
    assert_equal %w[ahead parked], @queue.groups(states: Set[:parked, :paused]).groups.map(&:group)
    assert_equal %w[parked], @queue.groups(parked_beyond: Rational(59 * 60)).groups.map(&:group)
    assert_equal %w[ahead lapsed parked], @queue.groups(id_prefix: "").groups.map(&:group), "'': every id"
    assert_raises(FrozenError) { ahead.state = :ready }
  end

  def test_published_values
    added = MongoMQ::Published.from_c(7)
    dup = MongoMQ::Published.from_c(-7)
    assert_equal [7, false, 7, true], [added.seq, added.duplicate?, dup.seq, dup.duplicate?]
    assert dup.frozen?
    assert_raises(FrozenError) { dup.duplicate = false }
    assert_equal "#<MongoMQ::Published seq=7 duplicate>", dup.inspect
    assert_equal ["#<MongoMQ::Published seq=7>", 7], [added.to_s, added.to_i]
    refute_equal added, dup, "the same seq, one a duplicate"
    assert_equal added, MongoMQ::Published.new(7, false)
    # A plain value, no stand-in for an Integer: publish returns the Integer itself.
    refute_equal 7, added
    refute_respond_to added, :to_int
    refute_respond_to added, :coerce
    assert_equal({ added => 1 }, { MongoMQ::Published.new(7, false) => 1 }, "hashed by its fields")
    batch = MongoMQ::PublishedBatch.new(5, 2, [5, -3])
    assert_equal [5, 2, 1, true], [batch.first_seq, batch.size, batch.added, batch.duplicates?]
    assert_equal [MongoMQ::Published.new(5, false), MongoMQ::Published.new(3, true)], batch.outcomes
    assert [batch, batch.outcomes].all?(&:frozen?)
    assert_equal batch, MongoMQ::PublishedBatch.new(5, 2, [5, -3])
    refute_equal 5, batch
  end

  def test_publish_results
    # publish and publish_batch return Integers, as before 0.6.0, with or without keys.
    seq = @queue.publish("g", "x")
    assert_kind_of Integer, seq
    lease = claim!
    assert_equal seq, lease.seq
    @queue.ack(lease)
    keyed = @queue.publish("g", "y", dedup_key: "y")
    assert_equal [Integer, seq + 1], [keyed.class, keyed]
    assert_equal keyed, @queue.publish("h", "y again", dedup_key: "y"), "a duplicate: the seq of the event holding the key"
    first = @queue.publish_batch { |b| b.add("g", "a").add("h", "b", dedup_key: "b") }
    assert_kind_of Integer, first
    assert_operator first, :>, keyed # (a duplicate publish took a seq too: the counter came first)
    assert_equal [first, first + 1], @queue.peek(group: "g").map(&:seq).last(1) + @queue.peek(group: "h").map(&:seq)
    again = @queue.publish_batch { |b| b.add("g", "a2").add("h", "b2", dedup_key: "b") }
    assert_kind_of Integer, again
    assert_operator again, :>, first + 1, "the first seq the library took for the batch, a duplicate in it"
    @queue.purge_group("g")
    @queue.purge_group("h")
    # publish_with: Published; publish_batch_with: PublishedBatch.
    added = @queue.publish_with("g", "x", dedup_key: "x")
    assert_kind_of MongoMQ::Published, added
    refute added.duplicate?
    assert_equal MongoMQ::Published.new(added.seq, true), @queue.publish_with("h", "x", dedup_key: "x")
    scheduled = @queue.publish_with("s", "later", priority: 3, not_before: @queue.now + 3600)
    refute scheduled.duplicate?
    assert_equal [3, scheduled.seq], [@queue.peek(group: "s").first.priority, @queue.peek(group: "s").first.seq]
    # A batch without keys: the first seq, and its outcomes follow it by 1.
    plain = @queue.publish_batch_with { |b| b.add("g", "a").add("h", "b").add("g", "c") }
    assert_kind_of MongoMQ::PublishedBatch, plain
    assert_equal [scheduled.seq + 1, 3, 3, false], [plain.first_seq, plain.size, plain.added, plain.duplicates?]
    assert_equal Array.new(3) { |i| [plain.first_seq + i, false] }, plain.outcomes.map { |o| [o.seq, o.duplicate?] }
    assert plain.outcomes.frozen?
    assert_equal "#<MongoMQ::PublishedBatch first_seq=#{plain.first_seq} size=3 added=3>", plain.inspect
    # A keyed batch published again: every keyed event a duplicate of its first publish.
    batch = track(MongoMQ::Batch.new)
    batch.add("k", "1", dedup_key: "one").add("k", "2", dedup_key: "two").add("k", "3")
    once = @queue.publish_batch_with(batch)
    twice = @queue.publish_batch_with(batch)
    assert_equal [false, false, false], once.outcomes.map(&:duplicate?)
    assert_equal [[once.outcomes[0].seq, true], [once.outcomes[1].seq, true], [twice.outcomes[2].seq, false]],
                 twice.outcomes.map { |o| [o.seq, o.duplicate?] }
    assert_equal [1, true], [twice.added, twice.duplicates?]
    assert_operator twice.outcomes[2].seq, :>, once.outcomes[2].seq
    assert_equal 1 + 1 + 3 + 3 + 1, @queue.stats["messages"]
    error = assert_raises(MongoMQ::ArgumentError) { @queue.publish_batch_with }
    assert_match(/publish_batch_with/, error.message)
  end

  def test_old_names_are_gone
    refute_respond_to @queue, :publish_at
    refute_respond_to @queue, :claim_batch
    refute_respond_to MongoMQ::ManualClock.new(Time.now).tap { |c| track(c) }, :set
    assert_raises(::ArgumentError) { @queue.publish("g", "x", at: Time.now) }
    assert_raises(::ArgumentError) { MongoMQ::Batch.new.tap { |b| track(b) }.add("g", "x", at: Time.now) }
  end

  # Attributes (0.7.0): a Hash of Strings (Symbol keys as their names) in its order;
  # other types and a NUL are the argument error before C (a NUL would split the
  # packing); the rest is the library's, naming attrs[i]. Nothing is published.
  def test_attrs_values
    @queue.publish("g", "x", attrs: { z: "1", "a" => "é".encode(Encoding::ISO_8859_1) }) # Symbol keys are Strings
    @queue.publish("g", "y", attrs: {})
    [[%w[k v]], "k=v", 1].each do |bad|
      e = assert_raises(MongoMQ::ArgumentError) { @queue.publish("g", "x", attrs: bad) }
      assert_match(/attrs must be a Hash/, e.message)
    end
    [[{ 1 => "v" }, /attrs\[0\]\.key must be a String/], [{ "k" => 1 }, /attrs\[0\]\.value \(key "k"\) must be/],
     [{ k: "v", "k" => "w" }, /attrs\[1\]\.key "k" appears twice/],
     [{ "k" => "v", "a\0b" => "v" }, /attrs\[1\]\.key "a\\u0000b" contains a NUL/],
     [{ "k" => "a\0" }, /attrs\[0\]\.value \(key "k"\) contains a NUL/],
     [{ "" => "v" }, /empty/], [{ "k" * (MongoMQ::ATTR_KEY_MAX + 1) => "v" }, /MQ_ATTR_KEY_MAX/],
     [{ "k" => "v" * (MongoMQ::ATTR_VALUE_MAX + 1) }, /MQ_ATTR_VALUE_MAX/], [{ "k" => "\xff".b }, /UTF-8/],
     [{ "k\u00e9" => "v" }, /ASCII/]].each do |bad, says|
      e = assert_raises(MongoMQ::ArgumentError) { @queue.publish("g", "x", attrs: bad) }
      assert_match says, e.message
      assert_raises(MongoMQ::ArgumentError) { track(MongoMQ::Batch.new).add("g", "x", attrs: bad) }
    end
    big = { "k" * MongoMQ::ATTR_KEY_MAX => "v" * MongoMQ::ATTR_VALUE_MAX }
    (MongoMQ::ATTR_MAX - 1).times { |i| big["k#{i}"] = "" }
    @queue.publish("g", "z", attrs: big)
    assert_equal [16, 128, 4096], [MongoMQ::ATTR_MAX, MongoMQ::ATTR_KEY_MAX, MongoMQ::ATTR_VALUE_MAX]
    assert_equal %w[x y z], @queue.peek.map(&:event)

    lease = claim!(max_events: 3)
    assert_equal({ "z" => "1", "a" => "é" }, lease.attrs)
    assert_equal Encoding::UTF_8, lease.attrs["a"].encoding
    lease.attrs["extra"] = "mine" # a new Hash each time
    assert_equal %w[z a], lease.attrs.keys
    assert_equal({}, lease.attrs_at(1))
    assert_equal lease.attrs_at(2), lease.attrs_at(-1)
    assert_equal 16, lease.attrs_at(2).size
    assert_nil lease.attr("a\0b")
    assert_raises(IndexError) { lease.attrs_at(-4) }
    assert_raises(MongoMQ::ArgumentError) { lease.attrs_at("0") }
    assert_equal "1", lease.attr(:z) # a Symbol names the same key
    assert_raises(MongoMQ::ArgumentError) { lease.attr(1) }
    @queue.ack(lease)
    lease.close
    assert_raises(MongoMQ::ClosedError) { lease.attrs }
    assert_raises(MongoMQ::ClosedError) { lease.attr("z") }

    @queue.publish("s", "x", attrs: { "k" => "v" })
    stored = @queue.peek(group: "s").first
    assert_equal({ "k" => "v" }, stored.attrs)
    assert stored.attrs.frozen?
  end

  # Partitions (0.8.0): the queue option an Integer, a claim's and a worker's an Array
  # (or a Range) of Integers, nil or empty for every partition; anything else is a
  # MongoMQ::ArgumentError before C, the numbers the library's to check.
  def test_partitions_values
    assert_equal 1024, MongoMQ::PARTITIONS_MAX
    ["4", 4.0, nil, 2**31].each do |bad|
      assert_raises(MongoMQ::ArgumentError, bad.inspect) { @client.queue(@db, "p", partitions: bad) }
    end
    assert_raises(MongoMQ::ArgumentError) { MongoMQ.group_partition(:a, 4) }
    assert_raises(MongoMQ::ArgumentError) { MongoMQ.group_partition("a", "4") }
    assert_raises(MongoMQ::ArgumentError) { MongoMQ.group_partition("a\0b", 4) }
    assert_kind_of Integer, MongoMQ.group_partition("a", 4)
    q = track(@client.queue(@db, "p", partitions: 2))
    assert_equal 2, q.partitions
    q.publish("g", "x")
    ["0", 0, { 0 => 1 }, [0.0], [nil], ["0"], [2**31]].each do |bad|
      assert_raises(MongoMQ::ArgumentError, bad.inspect) { q.claim(partitions: bad) }
      assert_raises(MongoMQ::ArgumentError, bad.inspect) { q.worker(partitions: bad) { nil } }
    end
    [[[0, 1, 0], /partitions\.size is 3/], [[0, -1], /partitions\[1\] is -1/]].each do |bad, says|
      assert_match says, assert_raises(MongoMQ::ArgumentError) { q.claim(partitions: bad) }.message
      assert_match says, assert_raises(MongoMQ::ArgumentError) { q.worker(partitions: bad) { nil } }.message
    end
    assert_equal 0, q.stats["groups"]["leased"], "no bad claim took anything"
    lease = claim!(q, partitions: 0..1) # a Range
    assert_kind_of Integer, lease.partition
    assert_equal MongoMQ.group_partition("g", 2), lease.partition
    q.nack(lease)
    lease = claim!(q, partitions: []) # empty: every partition
    assert_equal 2, lease.attempts
    q.ack(lease)
    assert_equal [1], MongoMQ::Worker.new(q, partitions: [1]) { nil }.partitions
    assert_equal [], MongoMQ::Worker.new(q) { nil }.partitions
    q.drop
  end
end
