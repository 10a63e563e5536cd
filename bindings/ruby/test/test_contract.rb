# frozen_string_literal: true

# Every scenario of bindings/CONTRACT.md, under its name.
require_relative "test_helper"

class TestContract < MongoMQTest::Case
  # ---- the harel cases ---------------------------------------------------------

  def test_fifo_in_group
    seqs = Array.new(5) { |i| @queue.publish("g", "e#{i}") }
    got = Array.new(5) do
      lease = claim!
      @queue.ack(lease)
      [lease.seq, lease.event]
    end
    assert_equal seqs.zip(Array.new(5) { |i| "e#{i}" }), got
    assert_nil @queue.claim
  end

  def test_one_lease_per_group
    b = MongoMQTest.same_partition("A", "B") # B's place in line behind A: one partition's line
    @queue.publish("A", "a1")
    @queue.publish("A", "a2")
    @queue.publish(b, "b1")
    first = claim!
    second = claim!
    assert_equal "A", first.group
    assert_equal b, second.group
    assert_nil @queue.claim, "a third claim gets nothing while A and B are leased"
  end

  def test_every_ready_group_claimed
    10.times { |i| @queue.publish("g#{i}", "e#{i}") }
    groups = Array.new(10) { claim!.group }
    assert_equal Array.new(10) { |i| "g#{i}" }.sort, groups.sort
    assert_nil @queue.claim
  end

  def test_round_robin
    b = MongoMQTest.same_partition("A", "B") # round-robin is each partition's
    3.times { |i| @queue.publish("A", "a#{i}") }
    3.times { |i| @queue.publish(b, "b#{i}") }
    order = Array.new(6) do
      lease = claim!
      @queue.ack(lease)
      lease.event
    end
    assert_equal %w[a0 b0 a1 b1 a2 b2], order
  end

  def test_priority_floor
    # p1..p3 in p0's partition: p0, which waited longest, is next in line below
    p1, p2, p3 = %w[p1 p2 p3].map { |g| MongoMQTest.same_partition("p0", g) }
    @queue.publish("p0", "zero", priority: 0)
    @queue.publish(p1, "one", priority: 1)
    @queue.publish(p2, "two", priority: 2)
    @queue.publish(p3, "three", priority: 3)
    lease = claim!(min_priority: 3)
    assert_equal [p3, "three"], [lease.group, lease.event]
    assert_nil @queue.claim(min_priority: 3)
    assert_equal "p0", claim!(min_priority: 0).group
  end

  def test_priority_reset_on_drain
    @queue.publish("g", "first", priority: 4)
    lease = claim!(min_priority: 4)
    @queue.ack(lease) # the group drains
    @queue.publish("g", "second", priority: 1)
    assert_nil @queue.claim(min_priority: 2), "the group now has the new publish's priority, 1"
    assert_equal "second", claim!(min_priority: 1).event
    assert_equal 1, @queue.stats["priorities"][1]["groups"]
  end

  def test_ack_removes
    @queue.publish("g", "x")
    @queue.ack(claim!)
    assert_equal 0, @queue.stats["messages"]
    assert_nil @queue.claim
  end

  def test_nack_now
    seq = @queue.publish("g", "x")
    lease = claim!
    assert_equal 1, lease.attempts
    @queue.nack(lease, delay: 0)
    again = claim!
    assert_equal [seq, 2, "x"], [again.seq, again.attempts, again.event]
  end

  def test_nack_delay_parks
    seq = @queue.publish("g", "x")
    @queue.nack(claim!, delay: 2.0)
    assert_nil @queue.claim, "nothing is claimable while the nack's delay runs"
    again = @queue.claim(wait: 10)
    refute_nil again, "the event comes back once the delay has passed"
    assert_equal [seq, 2], [again.seq, again.attempts]
  end

  def test_stale_owner_lease_lost
    @queue.publish("g", "x")
    stale = claim!(visibility: 0.3)
    sleep 0.5
    fresh = claim!(other_queue, visibility: 30)
    assert_equal stale.seq, fresh.seq
    error = assert_raises(MongoMQ::LeaseLost) { @queue.ack(stale) }
    assert_equal :lease_lost, error.status
    other_queue.ack(fresh)
  end

  def test_extend_keeps_lease
    @queue.publish("g", "x")
    lease = claim!(visibility: 1)
    @queue.extend_lease(lease, visibility: 10)
    sleep 1.3
    assert_nil other_queue.claim, "an extended lease is not claimable past its first visibility"
    @queue.ack(lease)
  end

  def test_lease_expiry_redelivers
    seq = @queue.publish("g", "x")
    first = claim!(visibility: 0.3)
    sleep 0.5
    again = claim!
    assert_equal [seq, first.attempts + 1], [again.seq, again.attempts]
  end

  def test_unclaim_keeps_attempts
    a = @queue.publish("A", "a")
    b = @queue.publish(MongoMQTest.same_partition("A", "B"), "b") # "ahead of B": one partition's line
    first = claim!
    assert_equal ["A", 1], [first.group, first.attempts]
    assert_nil @queue.unclaim(first) # no handler ran
    again = claim!
    assert_equal ["A", a, 1], [again.group, again.seq, again.attempts],
                 "A kept its place in line, ahead of B, and the give-back was not a delivery"
    @queue.ack(again)

    # A lease that ran out and whose group another claim took: unclaim is LeaseLost and
    # leaves the new holder's lease alone.
    stale = claim!(visibility: 0.3)
    assert_equal b, stale.seq
    sleep 0.5
    other = other_queue
    taken = claim!(other, visibility: 30)
    assert_equal [b, 2], [taken.seq, taken.attempts]
    error = assert_raises(MongoMQ::LeaseLost) { @queue.unclaim(stale) }
    assert_equal :lease_lost, error.status
    assert_nil @queue.claim, "B is still the new holder's"
    assert_nil other.ack(taken)
    assert_equal 0, @queue.stats["messages"]
  end

  # ---- bytes ---------------------------------------------------------------------

  def round_trip(event, group = "g")
    @queue.publish(group, event)
    lease = claim!
    @queue.ack(lease)
    lease
  end

  def test_bytes_text
    text = "héllo wörld ✓ 日本語 🎉"
    lease = round_trip(text)
    assert_equal text.b, lease.event
    assert_equal Encoding::ASCII_8BIT, lease.event.encoding
    assert_equal text, lease.text
  end

  def test_bytes_binary_nul
    bytes = "\x00abc\x00\xff\xfe\xc3\x28\x00".b
    assert_equal bytes, round_trip(bytes).event
  end

  def test_bytes_empty
    event = round_trip("").event
    assert_equal "".b, event
    assert_equal Encoding::ASCII_8BIT, event.encoding
  end

  def test_bytes_1mib
    bytes = Random.new(42).bytes(1024 * 1024)
    assert_equal bytes, round_trip(bytes).event
  end

  def test_group_utf8
    group = "grüppe-Ω-日本-🎉"
    lease = round_trip("x", group)
    assert_equal group, lease.group
    assert_equal Encoding::UTF_8, lease.group.encoding
  end

  # ---- features ------------------------------------------------------------------

  def test_batch_publish_claim
    # g1 and g2 in g0's partition: g0's lease first, and the seqs are one partition's
    # (consecutive with one partition; with P, unique and increasing within a group)
    g1, g2 = %w[g1 g2].map { |g| MongoMQTest.same_partition("g0", g) }
    seqs = (1..12).map { |n| MongoMQTest.nth_seq("g0", n) } # a fresh queue's
    batch = track(MongoMQ::Batch.new)
    5.times { |i| batch.add("g0", "a#{i}") }
    5.times { |i| batch.add(g1, "b#{i}", priority: 1) }
    assert_equal 10, batch.size
    first = @queue.publish_batch(batch)
    assert_equal seqs[0], first
    lease = claim!(max_events: 5)
    assert_equal "g0", lease.group
    assert_equal 5, lease.count
    assert_equal seqs[0, 5], lease.seqs
    assert_equal Array.new(5) { |i| "a#{i}" }, lease.events
    @queue.ack(lease)
    assert_equal 5, @queue.stats["messages"]
    other = claim!(max_events: 10)
    assert_equal seqs[5, 5], other.seqs
    # the block form
    seq = @queue.publish_batch { |b| b.add(g2, "c0").add(g2, "c1") }
    assert_equal seqs[10], seq
    assert_equal (1..12).to_a, seqs if MongoMQTest.partitions == 1 # consecutive
  end

  def test_scheduled_event
    seq = @queue.publish("g", "later", not_before: @queue.now + 2.0)
    assert_nil @queue.claim, "not claimable before its time"
    lease = @queue.claim(wait: 10)
    refute_nil lease, "claimable after its time"
    assert_equal seq, lease.seq
    @queue.ack(lease)
    @queue.publish("h", "much later", not_before: @queue.now + 600)
    assert_nil @queue.claim
  end

  def test_attributes_round_trip
    attrs = { "content-type" => "application/json", "tenant.id" => "t-42", "empty" => "" }
    seq = @queue.publish("g", "{}", attrs: attrs)
    lease = claim!
    assert_equal seq, lease.seq
    assert_equal attrs.to_a, lease.attrs.to_a, "exactly those, in that order"
    assert_equal lease.attrs, lease.attrs_at(0)
    assert_equal "t-42", lease.attr("tenant.id")
    assert_equal "", lease.attr("empty")
    assert_nil lease.attr("absent")
    @queue.nack(lease, delay: 0)
    again = claim!
    assert_equal [seq, 2], [again.seq, again.attempts]
    assert_equal attrs.to_a, again.attrs.to_a
    assert_equal "t-42", again.attr("tenant.id")
    assert_nil again.attr("absent")
    @queue.ack(again)

    # A batch: each event its own, in one batch lease.
    published = @queue.publish_batch_with do |b|
      b.add("b", "1", attrs: { "n" => "1" }).add("b", "2").add("b", "3", attrs: { "n" => "2", "extra" => "yes" })
    end
    peeked = @queue.peek(group: "b")
    assert_equal published.outcomes.map(&:seq), peeked.map(&:seq)
    assert_equal [[%w[n 1]], [], [%w[n 2], %w[extra yes]]], peeked.map { |e| e.attrs.to_a }
    lease = claim!(max_events: 3)
    assert_equal 3, lease.count
    assert_equal [{ "n" => "1" }, {}, { "n" => "2", "extra" => "yes" }], Array.new(3) { |i| lease.attrs_at(i) }
    assert_equal %w[n extra], lease.attrs_at(2).keys
    assert_equal({ "n" => "1" }, lease.attrs)
    assert_nil lease.attr("extra"), "attr is the head's"
    assert_raises(IndexError) { lease.attrs_at(3) }
    @queue.ack(lease)

    # The dead letters show them, and a requeue keeps them.
    @queue.max_attempts = 1
    dead_seq = @queue.publish("d", "poison", attrs: { "tenant.id" => "t-7", "why" => "test" })
    @queue.nack(claim!, delay: 0)
    assert_nil @queue.claim, "dead now"
    dead = @queue.dead_list
    assert_equal [dead_seq], dead.map(&:seq)
    assert_equal [%w[tenant.id t-7], %w[why test]], dead.first.attrs.to_a
    assert_equal({ "tenant.id" => "t-7", "why" => "test" }, @queue.dead_page.letters.first.attrs)
    new_seq = @queue.dead_requeue(dead_seq)
    assert_equal [[%w[tenant.id t-7], %w[why test]]], @queue.peek(group: "d").map { |e| e.attrs.to_a }
    requeued = claim!
    assert_equal new_seq, requeued.seq
    assert_equal({ "tenant.id" => "t-7", "why" => "test" }, requeued.attrs)
    @queue.ack(requeued)
    @queue.max_attempts = 0

    # Bad attributes: the argument error naming them, and nothing is published (a key
    # given twice cannot be written as a Hash).
    too_many = Array.new(MongoMQ::ATTR_MAX + 1) { |i| ["k#{i}", "v"] }.to_h
    [[too_many, /MQ_ATTR_MAX/], [{ "a key" => "v" }, /attrs\[0\]\.key "a key"/]].each do |bad, says|
      e = assert_raises(MongoMQ::ArgumentError) { @queue.publish("bad", "x", attrs: bad) }
      assert_match says, e.message
      assert_equal :err_arg, e.status
      batch = track(MongoMQ::Batch.new)
      assert_raises(MongoMQ::ArgumentError) { batch.add("bad", "x", attrs: bad) }
      assert_equal 0, batch.size
      assert_raises(MongoMQ::ArgumentError) { @queue.publish_with("bad", "x", attrs: bad) }
    end
    assert_equal [], @queue.peek
    assert_equal 0, @queue.stats["messages"]
  end

  def test_dead_letters
    @queue.max_attempts = 2
    seq = @queue.publish("g", "poison")
    2.times { @queue.nack(claim!, delay: 0) }
    assert_nil @queue.claim, "the third delivery goes to the dead letters instead"
    assert_equal 1, @queue.dead_count
    new_seq = @queue.dead_requeue(seq)
    assert_operator new_seq, :>, seq
    assert_equal 0, @queue.dead_count
    lease = claim!
    assert_equal [new_seq, "poison"], [lease.seq, lease.event]
    @queue.nack(lease, delay: 0)
    @queue.nack(claim!, delay: 0)
    assert_nil @queue.claim
    assert_equal 1, @queue.dead_count
    assert_equal 1, @queue.dead_purge
    assert_equal 0, @queue.dead_count
  end

  def test_stats_parsed
    @queue.publish("g1", "a", priority: 1)
    @queue.publish("g1", "b", priority: 1)
    @queue.publish("g2", "c", priority: 3)
    claim!(min_priority: 3)
    stats = @queue.stats
    assert_kind_of Hash, stats
    assert_equal %w[dead groups handle messages now oldest_message_age_s partitions priorities published queue],
                 stats.keys.sort
    assert_equal MongoMQTest.partitions, stats["partitions"]
    assert_kind_of String, stats["handle"]["change_streams"] # this queue object's own state (libmongomq 0.4.0)
    assert_equal %w[failed fixed runs], stats["handle"]["repair"].keys.sort
    assert_equal 3, stats["messages"]
    assert_equal 0, stats["dead"]
    assert_equal 3, stats["published"]
    assert_equal({ "leased" => 1, "parked" => 0, "paused" => 0, "ready" => 1, "total" => 2 }, stats["groups"])
    assert_equal [0, 1, 2, 3, 4], stats["priorities"].keys.sort
    assert_equal({ "groups" => 1, "messages" => 2 }, stats["priorities"][1])
    assert_equal({ "groups" => 1, "messages" => 1 }, stats["priorities"][3])
    assert_equal "#{@db}.q", stats["queue"]
    assert_kind_of Time, stats["now"]
    assert_kind_of Float, stats["oldest_message_age_s"]
    @queue.pause_group("g1")
    stats = @queue.stats
    assert_equal({ "leased" => 1, "parked" => 0, "paused" => 1, "ready" => 0, "total" => 2 }, stats["groups"],
                 "the paused group is counted in paused only")
  end

  def test_repair
    seq = @queue.publish("g", "orphan")
    assert_equal 1, MongoMQTest::RawMongo.delete_all(MongoMQTest.uri, @db, "q_locks")
    assert_nil @queue.claim, "no lock, no claim"
    assert_equal 1, @queue.repair
    lease = claim!
    assert_equal seq, lease.seq
    @queue.ack(lease)
    assert_equal 0, @queue.repair
  end

  def test_automatic_repair
    @queue.repair_interval = 0.2
    assert_equal MongoMQ::RepairCounts.new(runs: 0, fixed: 0), @queue.repair_counts
    seq = @queue.publish("g", "orphan")
    assert_equal 1, MongoMQTest::RawMongo.delete_all(MongoMQTest.uri, @db, "q_locks")
    assert_nil @queue.claim, "the first empty claim only starts the period"
    lease = nil
    eventually(within: 10, what: "the automatic repair") do
      sleep 0.1
      lease = @queue.claim
    end
    assert_equal seq, lease.seq
    @queue.ack(lease)
    counts = @queue.repair_counts
    assert_operator counts.runs, :>=, 1
    assert_equal 1, counts.fixed
  end

  def test_automatic_repair_off
    @queue.repair_interval = 0
    @queue.publish("g", "orphan")
    assert_equal 1, MongoMQTest::RawMongo.delete_all(MongoMQTest.uri, @db, "q_locks")
    5.times do
      assert_nil @queue.claim
      sleep 0.05
    end
    assert_equal MongoMQ::RepairCounts.new(runs: 0, fixed: 0), @queue.repair_counts
    assert_equal 1, @queue.repair, "the orphan was still there"
    [-1, Float::NAN, Float::INFINITY, "5", nil].each do |bad|
      e = assert_raises(MongoMQ::ArgumentError) { @queue.repair_interval = bad }
      assert_match(/repair_interval/, e.message)
    end
  end

  def test_peek
    t0 = @queue.now
    s1 = @queue.publish("g1", "héllo", priority: 2)
    s2 = @queue.publish("g2", "\xff\x00bin".b)
    later = @queue.now + 3600
    s3 = @queue.publish("g1", "later", not_before: later)
    all = @queue.peek
    assert_equal [s1, s2, s3], all.map(&:seq)
    assert(all.all? { |e| e.is_a?(MongoMQ::StoredEvent) && e.frozen? })
    first = all[0]
    assert_equal ["g1", 2, "héllo".b], [first.group, first.priority, first.event]
    assert_equal Encoding::ASCII_8BIT, first.event.encoding
    assert_equal "héllo", first.text
    assert_kind_of Time, first.published_at
    assert_in_delta t0, first.published_at, 60
    assert_nil first.not_before
    assert_nil first.dead_at
    assert_equal "\xff\x00bin".b, all[1].event
    assert_in_delta later, all[2].not_before, 0.01
    assert_equal [s1, s3], @queue.peek(group: "g1").map(&:seq)
    assert_equal [s1], @queue.peek(limit: 1).map(&:seq)
    assert_equal [], @queue.peek(group: "nobody")
    lease = claim!
    assert_equal [s1, 1], [lease.seq, lease.attempts], "peek claimed nothing"
    assert_equal [s1, s3], @queue.peek(group: "g1").map(&:seq), "a leased event is still there until acked"
    @queue.ack(lease)
    assert_equal [s2, s3], @queue.peek.map(&:seq)
    [0, -1, "2", nil].each { |bad| assert_raises(MongoMQ::ArgumentError) { @queue.peek(limit: bad) } }
    e = assert_raises(MongoMQ::ArgumentError) { @queue.peek(limit: 1_000_000) }
    assert_match(/limit/, e.message)
    assert_raises(MongoMQ::ArgumentError) { @queue.peek(group: "") }
    assert_raises(MongoMQ::ArgumentError) { @queue.peek(group: 42) }
  end

  def test_dead_list
    assert_equal [], @queue.dead_list
    @queue.max_attempts = 1
    seq = @queue.publish("g", "poison\0".b)
    @queue.nack(claim!, delay: 0)
    assert_nil @queue.claim, "the second delivery goes to the dead letters"
    dead = @queue.dead_list
    assert_equal 1, dead.size
    d = dead.first
    assert_equal [seq, "g", "poison\0".b], [d.seq, d.group, d.event]
    assert_operator d.attempts, :>=, 1
    assert_kind_of Time, d.dead_at
    assert_operator d.dead_at, :>=, d.published_at
    assert_equal [], @queue.peek, "the dead letter is not in the queue"
    @queue.publish("g", "poison 2")
    @queue.nack(claim!, delay: 0)
    assert_nil @queue.claim
    assert_equal [seq], @queue.dead_list(limit: 1).map(&:seq)
    assert_equal 2, @queue.dead_list(limit: 10).size
    assert_raises(MongoMQ::ArgumentError) { @queue.dead_list(limit: 0) }
  end

  def test_write_concern_errors
    @queue.publish("g", "x")
    @queue.ack(claim!)
    count = @client.write_concern_errors
    assert_kind_of Integer, count
    assert_equal 0, count, "the test server confirms every write"
    @client.close
    assert_raises(MongoMQ::ClosedError) { @client.write_concern_errors }
  end

  def test_purge_group
    other = MongoMQTest.same_partition("g", "other") # g's lease first: one partition's line
    @queue.publish("g", "a")
    @queue.publish("g", "b")
    @queue.publish(other, "c")
    lease = claim!
    assert_equal "g", lease.group
    @queue.purge_group("g")
    assert_raises(MongoMQ::LeaseLost) { @queue.ack(lease) }
    rest = claim!
    assert_equal other, rest.group
    @queue.ack(rest)
    assert_nil @queue.claim
    assert_equal 0, @queue.stats["messages"]
  end

  def test_drop
    @queue.publish("g", "a")
    @queue.publish("g", "b")
    @queue.drop
    reopened = other_queue
    assert_equal 0, reopened.stats["messages"]
    assert_nil reopened.claim
    assert_equal MongoMQTest.nth_seq("g", 1), reopened.publish("g", "c"), "seq 1 (its partition's first: k + 1)"
  end

  def test_lease_deadline
    @queue.publish("g", "x")
    before = @queue.now
    lease = claim!(visibility: 10)
    after = @queue.now
    # (the queue clock of `now` and of the claim may differ by the offset's error: ms)
    assert_operator lease.deadline, :>=, before + 10 - 0.5
    assert_operator lease.deadline, :<=, after + 10 + 0.5
    @queue.extend_lease(lease, visibility: 60)
    assert_in_delta @queue.now + 60, lease.deadline, 2.0
    @queue.extend_lease(lease) # the claim's visibility again
    assert_in_delta @queue.now + 10, lease.deadline, 2.0
  end

  # ---- groups (0.5.0) ----------------------------------------------------------------

  def test_pause_resume
    first = @queue.publish("P", "p1", priority: 2)
    second = @queue.publish("P", "p2", priority: 2)
    assert_nil @queue.pause_group("P")
    assert_nil @queue.claim, "a paused group is not claimed"
    groups = @queue.stats["groups"]
    assert_equal [1, 0, 1], groups.values_at("paused", "ready", "total"), groups.inspect
    @queue.pause_group("P") # again: nothing changes
    assert_nil @queue.claim

    assert_nil @queue.resume_group("P")
    assert_equal 0, @queue.stats["groups"]["paused"]
    held = claim!(min_priority: 2) # resumed, at its priority 2
    assert_equal ["P", first, 1], [held.group, held.seq, held.attempts]

    # Paused while held: the holder keeps its lease; the next event waits.
    @queue.pause_group("P")
    @queue.ack(held)
    assert_nil @queue.claim, "P's second event is not claimable while paused"
    assert_equal 1, @queue.stats["groups"]["paused"]

    # Its second event's lease acked while paused too: P drains and stays paused.
    @queue.resume_group("P")
    last = claim!
    assert_equal second, last.seq
    @queue.pause_group("P")
    @queue.ack(last)
    stats = @queue.stats
    assert_equal [0, 1], [stats["messages"], stats["groups"]["paused"]], "drained, still paused"
    third = @queue.publish("P", "p3")
    assert_nil @queue.claim, "a new publish to a paused group is not claimable"
    @queue.resume_group("P")
    lease = claim!
    assert_equal [third, "p3"], [lease.seq, lease.event]
    @queue.ack(lease)

    # Resuming a group that is not paused (or has no lock at all) is OK.
    @queue.resume_group("P")
    @queue.resume_group("never-seen")
    stats = @queue.stats
    assert_equal [0, 0, 3], [stats["groups"]["paused"], stats["groups"]["total"], stats["published"]]
    [-> { @queue.pause_group("") }, -> { @queue.resume_group("a\0b") }, -> { @queue.pause_group(5) },
     -> { @queue.resume_group(nil) }].each_with_index do |call, i|
      error = assert_raises(MongoMQ::ArgumentError, "case #{i}") { call.call }
      assert_match(/\bgroup\b/, error.message, "case #{i}")
    end
  end

  def test_group_listing
    # On a manual clock, so that ages and deadlines are exact: b leased by w-b at T,
    # a published at T + 1 s, c at T + 2 s and paused; listed at T + 4 s.
    t = Time.at(1_000_000_000).utc
    clock = track(MongoMQ::ManualClock.new(t))
    @queue.clock = clock
    @queue.publish("b", "b1", priority: 1)
    b_lease = claim!(visibility: 60, worker_id: "w-b")
    assert_equal "b", b_lease.group
    clock.advance(1)
    a1 = @queue.publish("a", "a1")
    @queue.publish("a", "a2")
    clock.advance(1)
    @queue.publish("c", "c1", priority: 3)
    @queue.pause_group("c")
    clock.advance(2)
    ids = ->(**options) { @queue.groups(**options).groups.map(&:group) }

    page = @queue.groups
    assert_kind_of MongoMQ::GroupsPage, page
    assert page.frozen? && page.groups.frozen?
    assert_equal %w[a b c], page.groups.map(&:group), "by id"
    assert_nil page.next
    assert_equal t + 4, page.now
    a, b, c = page.groups
    assert(page.groups.all? { |g| g.is_a?(MongoMQ::GroupInfo) && g.frozen? })
    assert_equal [:ready, false, 2, 0, 0], [a.state, a.paused?, a.backlog, a.priority, a.attempts]
    assert_equal [a1, 3.0, nil, nil, nil], [a.head, a.head_age_s, a.holder, a.held_for_s, a.lease_deadline]
    assert_kind_of Time, a.available_at
    assert a.available_at.utc?
    assert_equal [:leased, "w-b", 1, 1, 1], [b.state, b.holder, b.attempts, b.backlog, b.priority]
    assert_kind_of Float, b.held_for_s
    assert_equal 4.0, b.held_for_s
    assert_equal t + 60, b.lease_deadline
    assert_equal b_lease.deadline, b.lease_deadline, "the lease's own deadline"
    assert_equal [:paused, true, 3, 1], [c.state, c.paused, c.priority, c.backlog], "the priority kept"

    assert_equal %w[b], ids.call(states: [:leased])
    assert_equal %w[b], ids.call(states: :leased)
    assert_equal %w[a c], ids.call(states: %w[ready paused])
    assert_equal %w[a b c], ids.call(states: []), "no states: every state"
    assert_equal %w[c], ids.call(id_prefix: "c")
    assert_equal %w[b], ids.call(held_longer_than: 3)
    assert_equal [], ids.call(held_longer_than: 5.0)
    assert_equal %w[b], ids.call(min_attempts: 1)
    assert_equal %w[b], ids.call(parked_beyond: 30), "b is due at T + 60 s"
    assert_equal [], ids.call(parked_beyond: 60)

    # Pages of 2: a and b with a cursor, then c and none.
    first = @queue.groups(limit: 2)
    assert_equal %w[a b], first.groups.map(&:group)
    assert_kind_of String, first.next, "a next cursor after a full page"
    second = @queue.groups(limit: 2, after: first.next)
    assert_equal %w[c], second.groups.map(&:group)
    assert_nil second.next

    # By due: a (due since T + 1 s), the paused c (T + 2 s) in its place, b (held to T + 60 s).
    assert_equal %w[a c b], ids.call(sort: :due)
    due_first = @queue.groups(sort: :due, limit: 1)
    assert_equal %w[a], due_first.groups.map(&:group)
    assert_equal %w[c b], ids.call(sort: :due, after: due_first.next)

    # Bad options are the argument error, naming the option.
    {
      "limit" => [{ limit: 1001 }, { limit: 0 }, { limit: "2" }],
      "states" => [{ states: [:ready, :bogus] }, { states: :Ready }, { states: 5 }, { states: [1] }],
      "sort" => [{ sort: :name }, { sort: 1 }],
      "after" => [{ after: due_first.next }, { after: 7 }, { after: "id:\0" }], # another sort's cursor first
      "id_prefix" => [{ id_prefix: "c\0" }, { id_prefix: :c }],
      "min_attempts" => [{ min_attempts: -1 }, { min_attempts: 2**31 }],
      "held_longer_than" => [{ held_longer_than: -1 }, { held_longer_than: "3" }],
      "parked_beyond" => [{ parked_beyond: Float::NAN }]
    }.each do |name, cases|
      cases.each do |options|
        error = assert_raises(MongoMQ::ArgumentError, options.inspect) { @queue.groups(**options) }
        assert_equal :err_arg, error.status
        assert_match(/\b#{name}\b/, error.message, "#{options.inspect}: the message names the option")
      end
    end
    assert_raises(::ArgumentError) { @queue.groups(bogus: 1) }
    @queue.ack(b_lease)

    # Dead letters by page: 3 letters, a page of 2 from offset 1 is the 2nd and 3rd.
    d = track(@client.queue("#{@db}_dead", "q", partitions: MongoMQTest.partitions))
    begin
      d.max_attempts = 1
      dead = Array.new(3) do |i|
        seq = d.publish("d#{i}", "dead #{i}")
        d.nack(claim!(d))
        assert_nil d.claim, "its second delivery went to the dead letters"
        seq
      end
      by_seq = dead.sort # the dead letters' order (over partitions not the publishes')
      page = d.dead_page(offset: 1, limit: 2)
      assert_kind_of MongoMQ::DeadPage, page
      assert page.frozen?
      assert_equal by_seq[1..], page.letters.map(&:seq)
      assert_equal [1, 3], [page.offset, page.total]
      assert_kind_of MongoMQ::StoredEvent, page.letters[0]
      assert_equal "dead #{dead.index(by_seq[1])}".b, page.letters[0].event
      assert_kind_of Time, page.letters[0].dead_at
      assert_equal by_seq, d.dead_page.letters.map(&:seq), "offset 0, limit 50 by default"
      past = d.dead_page(offset: 3, limit: 2)
      assert_equal [[], 3], [past.letters, past.total]
      { "limit" => [{ limit: 1001 }, { limit: 0 }], "offset" => [{ offset: -1 }, { offset: "1" }] }.each do |name, cases|
        cases.each do |options|
          error = assert_raises(MongoMQ::ArgumentError, options.inspect) { d.dead_page(**options) }
          assert_match(/\b#{name}\b/, error.message)
        end
      end
    ensure
      d.drop
    end
  end

  # ---- deduplication (0.6.0) ----------------------------------------------------------
  # The duplicate flag comes from publish_with / publish_batch_with; publish and
  # publish_batch take the same keys and return the Integer seq, as before 0.6.0.

  def test_dedup_same_key
    first = @queue.publish_with("A", "from A", dedup_key: "k")
    assert_kind_of MongoMQ::Published, first
    refute first.duplicate?
    s = first.seq
    assert_kind_of Integer, s
    again = @queue.publish_with("B", "from B", dedup_key: "k") # another group, the same key
    assert_equal [s, true], [again.seq, again.duplicate?], again.inspect
    assert_equal s, @queue.publish("B", "from B", dedup_key: "k"), "plain publish: the holder's seq, an Integer"
    assert_equal 1, @queue.stats["messages"]
    lease = claim!
    assert_equal ["A", s, "from A"], [lease.group, lease.seq, lease.event]
    @queue.ack(lease)
    third = @queue.publish_with("A", "once more", dedup_key: "k") # acked, but within the 5-minute window
    assert_equal [s, true], [third.seq, third.duplicate?], third.inspect
    assert_equal 0, @queue.stats["messages"]
    assert_nil @queue.claim
  end

  def test_dedup_different_keys
    p1 = @queue.publish_with("g", "one", dedup_key: "k1")
    p2 = @queue.publish_with("g", "two", dedup_key: "k2")
    assert_equal [false, false], [p1.duplicate?, p2.duplicate?]
    assert_operator p2.seq, :>, p1.seq
    got = Array.new(2) do
      lease = claim!
      @queue.ack(lease)
      [lease.seq, lease.event]
    end
    assert_equal [[p1.seq, "one"], [p2.seq, "two"]], got
    assert_nil @queue.claim
  end

  def test_dedup_retry_after_lost_reply
    # The test server applies the insert of a key with this prefix and then answers,
    # once per key, with a step-down (10107): the outcome is unknown to the library,
    # which reports the connect error (tests/server/README.md). A unique key per run.
    key = "mongomq-test-stepdown-rb-#{SecureRandom.hex(8)}"
    first = begin
      @queue.publish_with("g", "exactly once", dedup_key: key)
    rescue MongoMQ::ConnectError
      nil # the hook: applied, reply lost
    end
    refute first.duplicate?, "a server without the hook: the first publish added it" if first
    retry_ = @queue.publish_with("g", "exactly once", dedup_key: key)
    assert retry_.duplicate?, retry_.inspect
    assert_equal first.seq, retry_.seq if first
    assert_equal 1, @queue.stats["messages"], "exactly one event"
    assert_equal [retry_.seq], @queue.peek(limit: 10).map(&:seq)
    lease = claim!
    assert_equal [retry_.seq, "exactly once", 1], [lease.seq, lease.event, lease.count]
    @queue.ack(lease)
    assert_nil @queue.claim
  end

  def test_dedup_batch
    batch = track(MongoMQ::Batch.new)
    batch.add("g1", "a1", dedup_key: "a").add("g1", "b1", dedup_key: "b")
    batch.add("g2", "a2", dedup_key: "a").add("g2", "plain")
    result = @queue.publish_batch_with(batch)
    assert_kind_of MongoMQ::PublishedBatch, result
    out = result.outcomes
    assert_equal [4, 3, true], [out.size, result.added, result.duplicates?]
    assert_equal [false, false, true, false], out.map(&:duplicate?)
    assert_equal out[0].seq, out[2].seq, "the third is a duplicate of the first"
    assert_equal 3, [out[0].seq, out[1].seq, out[3].seq].uniq.size
    second = @queue.publish_batch_with do |b|
      b.add("g1", "b again", dedup_key: "b").add("g3", "c3", dedup_key: "c")
    end
    o1, o2 = second.outcomes
    assert_equal [out[1].seq, true], [o1.seq, o1.duplicate?], "a duplicate of the first batch's second event"
    assert_equal [false, 1], [o2.duplicate?, second.added]
    assert_equal 4, @queue.stats["messages"]
    stored = @queue.peek(limit: 10).to_h { |e| [e.seq, [e.group, e.event]] }
    assert_equal({ out[0].seq => %w[g1 a1], out[1].seq => %w[g1 b1], out[3].seq => %w[g2 plain],
                   o2.seq => %w[g3 c3] }, stored)
  end

  def test_dedup_scope_group
    @queue.dedup_scope = :group
    a = @queue.publish_with("A", "a", dedup_key: "k")
    b = @queue.publish_with("B", "b", dedup_key: "k")
    assert_equal [false, false], [a.duplicate?, b.duplicate?]
    refute_equal a.seq, b.seq
    again = @queue.publish_with("A", "a again", dedup_key: "k")
    assert_equal [a.seq, true], [again.seq, again.duplicate?], again.inspect
    assert_equal 2, @queue.stats["messages"]
    @queue.dedup_scope = "queue" # a String is taken too
    [:shard, "partition", 1, nil].each do |bad|
      error = assert_raises(MongoMQ::ArgumentError, bad.inspect) { @queue.dedup_scope = bad }
      assert_match(/dedup_scope/, error.message)
    end
  end

  def test_dedup_bad_key
    cases = {
      "empty" => -> { @queue.publish_with("g", "x", dedup_key: "") },
      "empty, plain publish" => -> { @queue.publish("g", "x", dedup_key: "") },
      "513 bytes" => -> { @queue.publish_with("g", "x", dedup_key: "k" * (MongoMQ::DEDUP_KEY_MAX + 1)) },
      "empty in a batch" => -> { MongoMQ::Batch.new.add("g", "x", dedup_key: "") },
      "a NUL" => -> { @queue.publish_with("g", "x", dedup_key: "a\0b") },
      "not a String" => -> { @queue.publish_with("g", "x", dedup_key: :k) }
    }
    cases.each do |what, call|
      error = assert_raises(MongoMQ::ArgumentError, what) { call.call }
      assert_match(/\bdedup_key\b/, error.message, what)
      assert_equal "MQ_ERR_ARG", error.status_name, what
    end
    [0.5, 8 * 86_400, Float::NAN, "300"].each do |bad|
      error = assert_raises(MongoMQ::ArgumentError, bad.inspect) { @queue.dedup_window = bad }
      assert_match(/dedup_window/, error.message, bad.inspect)
    end
    assert_equal 0, @queue.stats["messages"], "nothing was published"
    # The bounds themselves are fine: a key of 512 bytes, windows of 1 s and 7 days.
    assert_equal 512, MongoMQ::DEDUP_KEY_MAX
    @queue.dedup_window = 1
    @queue.dedup_window = 7 * 86_400
    refute @queue.publish_with("g", "x", dedup_key: "k" * 512).duplicate?
    assert_equal 1, @queue.stats["messages"]
  end

  # ---- partitions (0.8.0) ------------------------------------------------------------
  # Each opens its own queue of 4 partitions (or more), whatever MongoMQTest.partitions is.

  def test_partitions_open
    q = track(@client.queue(@db, "p4", partitions: 4))
    assert_equal 4, q.partitions
    assert_equal 4, q.stats["partitions"]
    [-> { @client.queue(@db, "p4") }, -> { @client.queue(@db, "p4", partitions: 1) },
     -> { @client.queue(@db, "p4", partitions: 8) }].each do |again|
      error = assert_raises(MongoMQ::ArgumentError) { again.call }
      assert_match(/4 partitions/, error.message)
      assert_equal :err_arg, error.status
    end
    assert_equal 4, track(@client.queue(@db, "p4", partitions: 4)).partitions, "the same number opens it"
    q.drop
    [0, 1025].each do |bad|
      error = assert_raises(MongoMQ::ArgumentError) { @client.queue(@db, "other", partitions: bad) }
      assert_match(/partitions/, error.message)
    end
    plain = track(@client.queue(@db, "plain"))
    assert_equal 1, plain.partitions
    assert_equal 1, plain.stats["partitions"]
    plain.drop
  end

  def test_partitions_group_hash
    four = { "a" => 3, "b" => 0, "customer-17" => 1, "g1" => 1, "g2" => 3, "g3" => 0 }
    assert_equal four, four.keys.to_h { |g| [g, MongoMQ.group_partition(g, 4)] }
    sixteen = { "a" => 11, "customer-17" => 9, "g2" => 7 }
    assert_equal sixteen, sixteen.keys.to_h { |g| [g, MongoMQ.group_partition(g, 16)] }
    (four.keys + ["Kunde-Müller/東京/🚚"]).each { |g| assert_equal 0, MongoMQ.group_partition(g, 1), g }
    [0, 1025, -1].each do |bad|
      error = assert_raises(MongoMQ::ArgumentError) { MongoMQ.group_partition("a", bad) }
      assert_match(/partitions/, error.message)
    end
  end

  def test_partitions_fifo
    groups = (1..8).map { |i| "g#{i}" }
    assert_operator groups.map { |g| MongoMQ.group_partition(g, 4) }.uniq.size, :>, 1, "spread over partitions"
    q = track(@client.queue(@db, "p4", partitions: 4))
    published = Hash.new { |h, k| h[k] = [] } # group => [[seq, event]] in publish order
    5.times do |n|
      groups.each { |g| published[g] << [q.publish(g, "#{g}-#{n}"), "#{g}-#{n}"] } # interleaved
    end
    seen = Hash.new { |h, k| h[k] = [] }
    seqs = []
    41.times do
      break unless (lease = q.claim)

      assert_equal MongoMQ.group_partition(lease.group, 4), lease.partition, lease.inspect
      seen[lease.group] << [lease.seq, lease.event]
      seqs << lease.seq
      q.ack(lease)
    end
    assert_equal 40, seqs.size
    assert_equal 40, seqs.uniq.size, "the 40 seqs are distinct"
    groups.each do |g|
      assert_equal published[g], seen[g], "#{g} in publish order"
      in_group = seen[g].map(&:first)
      assert_equal in_group.sort, in_group, "#{g}'s seqs increase"
    end
    stats = q.stats
    assert_equal [0, 40], [stats["messages"], stats["published"]]
    q.drop
  end

  def test_partitions_claim_subset
    assert_equal [0, 1], [MongoMQ.group_partition("b", 4), MongoMQ.group_partition("customer-17", 4)]
    q = track(@client.queue(@db, "p4", partitions: 4))
    b = Array.new(2) { |i| q.publish("b", "b#{i}") }
    c = Array.new(2) { |i| q.publish("customer-17", "c#{i}") }
    2.times do |i|
      lease = claim!(q, partitions: [1])
      assert_equal ["customer-17", c[i], 1], [lease.group, lease.seq, lease.partition]
      q.ack(lease)
    end
    assert_nil q.claim(partitions: [1])
    assert_equal 2, q.stats["messages"], "b's, which partition 1's claims never see"
    assert_equal b, q.peek(group: "b").map(&:seq)

    # A worker of partition 0 handles b's two, and nothing of partition 3's a.
    q.publish("a", "a0")
    handled = []
    q.work(partitions: [0], idle_timeout: 1) { |lease| handled << [lease.group, lease.seq, lease.partition] }
    assert_equal [["b", b[0], 0], ["b", b[1], 0]], handled
    assert_equal [%w[a a0]], q.peek.map { |e| [e.group, e.event] }

    [[[4], /partitions\[0\] is 4/], [[0, 0], /partitions\[1\] is 0, given twice/]].each do |bad, says|
      [-> { q.claim(partitions: bad) }, -> { q.claim(partitions: bad, wait: 1) },
       -> { q.worker(partitions: bad) { nil } }].each do |call|
        error = assert_raises(MongoMQ::ArgumentError) { call.call }
        assert_match says, error.message
      end
    end
    assert_equal 1, q.stats["messages"]
    q.drop
  end

  def test_partitions_wait_hint
    assert_equal [3, 0], [MongoMQ.group_partition("a", 4), MongoMQ.group_partition("b", 4)]
    q = track(@client.queue(@db, "p4", partitions: 4))
    publisher = Thread.new do
      sleep 0.1
      q.publish("b", "not this one")
      sleep 0.1
      q.publish("a", "this one")
    end
    lease = nil
    elapsed = timed { lease = q.claim(wait: 10, partitions: [3]) }
    publisher.join
    refute_nil lease
    assert_equal ["a", "this one", 3], [lease.group, lease.event, lease.partition]
    assert_operator elapsed, :<, 5, "the publish to partition 3 woke the claim well before its 10 s"
    q.ack(lease)
    left = claim!(q, partitions: [0])
    assert_equal ["b", "not this one"], [left.group, left.event], "b's event is still there, in its partition"
    q.ack(left)
    q.drop
  end

  # ---- waiting claims --------------------------------------------------------------

  def test_wait_woken_by_publish
    waiter = Thread.new { @queue.claim(wait: 10) }
    sleep 0.2
    elapsed = timed do
      @queue.publish("g", "wake")
      lease = waiter.value
      refute_nil lease
      assert_equal "wake", lease.event
    end
    assert_operator elapsed, :<, 5, "the publish woke the claim well before its 10 s"
  end

  def test_wait_cancel_one
    killed = Thread.new { @queue.claim(wait: 30) }
    other = Thread.new { @queue.claim(wait: 30) }
    sleep 0.3
    elapsed = timed do
      killed.kill
      refute_nil killed.join(10), "Thread#kill ended the waiting claim"
    end
    assert_operator elapsed, :<, 5
    assert other.alive?, "the other waiter still waits"
    @queue.publish("g", "next")
    lease = other.value
    refute_nil lease
    assert_equal "next", lease.event
  end

  def test_interrupt_stops_all
    waiters = Array.new(2) { quiet_thread { @queue.claim(wait: 30) } }
    sleep 0.3
    elapsed = timed do
      @queue.interrupt
      waiters.each { |t| assert_raises(MongoMQ::Interrupted) { t.join(10) } }
    end
    assert_operator elapsed, :<, 5
    later = timed { assert_raises(MongoMQ::Interrupted) { @queue.claim(wait: 30) } }
    assert_operator later, :<, 5, "later waits end at once"
    seq = @queue.publish("g", "still works")
    assert_kind_of Integer, seq
    lease = claim!
    assert_equal [seq, "still works"], [lease.seq, lease.event], "a plain claim (no wait) still works"
    @queue.ack(lease)
    assert_nil @queue.claim, "and finds nothing when nothing is due"
  end

  # ---- errors ------------------------------------------------------------------------

  def test_error_bad_argument
    @queue.publish("g", "x")
    lease = claim!
    cases = {
      "group" => [-> { @queue.publish("", "x") }, -> { @queue.publish(nil, "x") }, -> { @queue.publish("a\0b", "x") },
                  -> { @queue.publish("\xff".b, "x") }, -> { @queue.purge_group("") }],
      "event" => [-> { @queue.publish("g", nil) }, -> { @queue.publish("g", 42) }],
      "priority" => [-> { @queue.publish("g", "x", priority: 5) }, -> { @queue.publish("g", "x", priority: -1) },
                     -> { @queue.publish("g", "x", priority: "2") }],
      "visibility" => [-> { @queue.claim(visibility: -1) }, -> { @queue.claim(visibility: 0) },
                       -> { @queue.claim(visibility: "30") }, -> { @queue.extend_lease(lease, visibility: 0) }],
      "min_priority" => [-> { @queue.claim(min_priority: -1) }, -> { @queue.claim(min_priority: 5) }],
      "wait" => [-> { @queue.claim(wait: -1) }, -> { @queue.claim(wait: Float::NAN) }, -> { @queue.claim(wait: nil) }],
      "max_events" => [-> { @queue.claim(max_events: 0) }, -> { @queue.claim(max_events: 10_001) }],
      "delay" => [-> { @queue.nack(lease, delay: -1) }],
      "not_before" => [-> { @queue.publish("g", "x", not_before: Time.at(-5)) },
                       -> { @queue.publish("g", "x", not_before: "tomorrow") },
                       -> { @queue.publish("g", "x", not_before: 1_900_000_000) },
                       -> { MongoMQ::Batch.new.tap { |b| track(b) }.add("g", "x", not_before: 5) }],
      "max_attempts" => [-> { @queue.max_attempts = -1 }],
      "db_name" => [-> { @client.queue("bad.name", "q") }],
      "prefix" => [-> { @client.queue(@db, "") }],
      "lease" => [-> { @queue.ack(nil) }, -> { @queue.nack("lease") }, -> { @queue.unclaim(nil) }],
      "uri" => [-> { MongoMQ::Client.new("not a uri") }, -> { MongoMQ::Client.new(nil) }]
    }
    cases.each do |name, calls|
      calls.each_with_index do |call, i|
        error = assert_raises(::ArgumentError, "#{name} case #{i}") { call.call }
        assert_kind_of MongoMQ::ArgumentError, error, "#{name} case #{i}"
        assert_equal :err_arg, error.status
        assert_match(/\b#{name}\b/, error.message, "#{name} case #{i}: the message names the argument")
      end
    end
    @queue.ack(lease) # nothing above changed the queue
  end

  def test_error_connect
    client = track(MongoMQ::Client.new("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200"))
    error = assert_raises(MongoMQ::ConnectError) { client.queue("x", "q") }
    assert_kind_of MongoMQ::Error, error
    assert_equal :err_connect, error.status
    assert_equal "MQ_ERR_CONNECT", error.status_name
  end

  def test_error_lease_lost_type
    assert_operator MongoMQ::LeaseLost, :<, MongoMQ::Error
    assert_operator MongoMQ::Error, :<, StandardError
    @queue.publish("g", "x")
    stale = claim!(visibility: 0.2)
    sleep 0.4
    claim!(other_queue)
    error = assert_raises(MongoMQ::LeaseLost) { @queue.nack(stale) }
    assert_kind_of MongoMQ::Error, error
    assert_equal [:lease_lost, 0], [error.status, error.server_code]
    assert_raises(MongoMQ::LeaseLost) { @queue.extend_lease(stale) }
  end

  # ---- concurrency ---------------------------------------------------------------------

  # uri with one more option: after "&" when it has options, else after "?" (with a "/"
  # first when it has no path).
  def with_option(uri, option)
    return uri + (uri.end_with?("?", "&") ? "" : "&") + option if uri.include?("?")

    uri + (uri.index("/", uri.index("://") + 3) ? "?" : "/?") + option
  end

  # Runs the block on a thread of its own and waits for it at most `seconds`: a call
  # that hangs fails the test instead of hanging it (the binding releases the GVL in
  # its blocking calls, so this thread's Timeout goes off whatever that one does).
  def bounded(what, seconds: 60, &block)
    call = quiet_thread(&block)
    Timeout.timeout(seconds) { call.value }
  rescue Timeout::Error
    flunk "#{what} did not return within #{seconds} s with maxPoolSize=1"
  end

  def test_small_pool
    assert_equal "mongodb://h:1/?maxPoolSize=1", with_option("mongodb://h:1", "maxPoolSize=1")
    assert_equal "mongodb://h:1/?maxPoolSize=1", with_option("mongodb://h:1/", "maxPoolSize=1")
    assert_equal "mongodb://h:1/db?maxPoolSize=1", with_option("mongodb://h:1/db", "maxPoolSize=1")
    assert_equal "mongodb://h:1/?w=1&maxPoolSize=1", with_option("mongodb://h:1/?w=1", "maxPoolSize=1")
    client = track(MongoMQ::Client.new(with_option(MongoMQTest.uri, "maxPoolSize=1")))
    q = track(bounded("queue open") { client.queue(@db, "q", partitions: MongoMQTest.partitions) })

    g = MongoMQTest.same_partition("a", "b") # a's lease first: one partition's line
    bounded("publish") { q.publish("a", "a1") }
    batch = bounded("batch publish") { q.publish_batch_with { |b| b.add("a", "a2").add(g, "b1").add(g, "b2") } }
    b1 = batch.outcomes[1].seq
    l1 = bounded("claim") { claim!(q) }
    assert_equal "a1", l1.event
    bounded("extend") { q.extend_lease(l1, visibility: 30) }
    bounded("nack") { q.nack(l1, delay: 0) }
    l2 = bounded("batch claim") { claim!(q, max_events: 2) }
    assert_equal [%w[a1 a2], 2], [l2.events, l2.attempts]
    bounded("unclaim") { q.unclaim(l2) }
    l3 = bounded("waiting claim") { claim!(q, max_events: 2, wait: 10) }
    assert_equal ["a", 2, 2], [l3.group, l3.count, l3.attempts]
    bounded("ack") { q.ack(l3) }

    bounded("max_attempts=") { q.max_attempts = 1 }
    l4 = bounded("claim") { claim!(q) }
    assert_equal b1, l4.seq
    bounded("nack") { q.nack(l4) }
    l5 = bounded("claim past max attempts") { claim!(q) }
    assert_equal "b2", l5.event, "b1 went to the dead letters, the claim went on with b2"
    bounded("ack") { q.ack(l5) }
    assert_equal 1, bounded("dead_count") { q.dead_count }
    again = bounded("dead_requeue") { q.dead_requeue(b1) }
    bounded("max_attempts=") { q.max_attempts = 0 }
    assert_equal 0, bounded("repair") { q.repair }
    assert_equal 1, bounded("stats") { q.stats }["messages"]
    assert_equal [again], bounded("peek") { q.peek(limit: 10) }.map(&:seq)
    bounded("purge_group") { q.purge_group(g) }
    assert_equal 0, bounded("stats") { q.stats }["messages"]

    # A worker with more threads than connections drains 20 events in 4 groups.
    20.times { |i| q.publish("w#{i % 4}", "e#{i}") }
    lock = Mutex.new
    handled = Hash.new(0)
    errors = []
    worker = q.worker(concurrency: 4, on_error: ->(e, _) { lock.synchronize { errors << e } }) do |lease|
      lock.synchronize { handled[lease.seq] += 1 }
    end
    bounded("a worker (concurrency 4) draining 20 events") do
      sleep 0.02 until lock.synchronize { handled.size } >= 20 && q.stats["messages"].zero?
      worker.stop.wait
    end
    assert_equal 20, handled.size
    assert_equal [1], handled.values.uniq, "each event handled once"
    assert_empty errors
  end

  def test_concurrency_16x2000
    published = Hash.new { |h, k| h[k] = [] }
    (0...2000).each_slice(500) do |slice|
      batch = MongoMQ::Batch.new
      slice.each { |i| batch.add("g#{i % 100}", i.to_s) }
      outcomes = @queue.publish_batch_with(batch).outcomes
      batch.close
      slice.each_with_index { |i, k| published["g#{i % 100}"] << outcomes[k].seq }
    end
    lock = Mutex.new
    held = {}
    acked = Hash.new { |h, k| h[k] = [] }
    violations = []
    total = 0
    deadline = monotonic + 120
    threads = Array.new(16) do
      Thread.new do
        queue = @client.queue(@db, "q", partitions: MongoMQTest.partitions)
        loop do
          break if lock.synchronize { total >= 2000 } || monotonic > deadline

          lease = queue.claim(visibility: 60, wait: 0.2)
          next unless lease

          group = lease.group
          lock.synchronize do
            violations << group if held[group]
            held[group] = true
            acked[group] << lease.seq
            total += 1
          end
          lock.synchronize { held.delete(group) } # before the ack, which releases the group
          queue.ack(lease)
          lease.close
        end
      ensure
        queue&.close
      end
    end
    threads.each(&:join)
    assert_empty violations, "no group is held twice at once"
    assert_equal 2000, acked.values.sum(&:size), "every event acked"
    assert_equal 2000, acked.values.flatten.uniq.size, "each event acked exactly once"
    published.each { |group, seqs| assert_equal seqs, acked[group], "group #{group} acked in publish order" }
    assert_equal 0, @queue.stats["messages"]
  end

  # ---- safety ------------------------------------------------------------------------------

  def test_safety_use_after_close
    @queue.publish("g", "x")
    @queue.publish("h", "y")
    lease = claim!
    fresh = claim!
    batch = MongoMQ::Batch.new.add("g", "y")
    lease.close
    batch.close
    queue = other_queue
    queue.close
    client = MongoMQ::Client.new(MongoMQTest.uri)
    client.close

    lease_calls = %i[seq group attempts event text count events seqs token deadline partition]
    lease_calls.each do |m|
      error = assert_raises(MongoMQ::ClosedError, "lease.#{m}") { lease.public_send(m) }
      assert_match(/lease/, error.message)
    end
    assert_raises(MongoMQ::ClosedError) { @queue.ack(lease) }
    assert_raises(MongoMQ::ClosedError) { @queue.nack(lease) }
    assert_raises(MongoMQ::ClosedError) { @queue.unclaim(lease) }
    assert_raises(MongoMQ::ClosedError) { @queue.extend_lease(lease, visibility: 5) }
    %i[size].each { |m| assert_raises(MongoMQ::ClosedError) { batch.public_send(m) } }
    assert_raises(MongoMQ::ClosedError) { batch.add("g", "z") }
    assert_raises(MongoMQ::ClosedError) { @queue.publish_batch(batch) }
    assert_raises(MongoMQ::ClosedError) { @queue.publish_batch_with(batch) }

    queue_calls = {
      publish: -> { queue.publish("g", "x") }, publish_later: -> { queue.publish("g", "x", not_before: Time.now) },
      publish_batch: -> { queue.publish_batch { |b| b.add("g", "x") } }, claim: -> { queue.claim },
      claim_wait: -> { queue.claim(wait: 1) }, ack: -> { queue.ack(fresh) }, nack: -> { queue.nack(fresh) },
      unclaim: -> { queue.unclaim(fresh) },
      extend_lease: -> { queue.extend_lease(fresh, visibility: 5) }, max_attempts: -> { queue.max_attempts = 1 },
      dead_count: -> { queue.dead_count }, dead_requeue: -> { queue.dead_requeue(1) }, dead_purge: -> { queue.dead_purge },
      stats: -> { queue.stats }, repair: -> { queue.repair }, purge_group: -> { queue.purge_group("g") },
      drop: -> { queue.drop }, interrupt: -> { queue.interrupt }, now: -> { queue.now },
      clock_offset: -> { queue.clock_offset }, work: -> { queue.work { nil } }, worker: -> { queue.worker { nil } },
      groups: -> { queue.groups }, pause_group: -> { queue.pause_group("g") },
      resume_group: -> { queue.resume_group("g") }, dead_page: -> { queue.dead_page },
      publish_keyed: -> { queue.publish("g", "x", dedup_key: "k") },
      publish_batch_keyed: -> { queue.publish_batch { |b| b.add("g", "x", dedup_key: "k") } },
      publish_with: -> { queue.publish_with("g", "x", dedup_key: "k") },
      publish_batch_with: -> { queue.publish_batch_with { |b| b.add("g", "x", dedup_key: "k") } },
      dedup_window: -> { queue.dedup_window = 60 }, dedup_scope: -> { queue.dedup_scope = :group },
      partitions: -> { queue.partitions }, claim_in: -> { queue.claim(partitions: [0]) },
      claim_in_wait: -> { queue.claim(partitions: [0], wait: 1) }
    }
    queue_calls.each do |name, call|
      error = assert_raises(MongoMQ::ClosedError, "queue.#{name}") { call.call }
      assert_match(/queue/, error.message)
    end
    assert_raises(MongoMQ::ClosedError) { client.queue(@db, "q") }
    assert_raises(MongoMQ::ClosedError) { client.command_count }
    assert_kind_of MongoMQ::Error, MongoMQ::ClosedError.new
    @queue.ack(fresh)
  end

  def test_safety_close_twice
    GC.start # earlier tests' handles, collected during this one, would count as destroyed here
    before = MongoMQ.handle_counts
    client = MongoMQ::Client.new(MongoMQTest.uri)
    queue = client.queue(@db, "q", partitions: MongoMQTest.partitions)
    queue.publish("g", "x")
    lease = claim!(queue)
    batch = MongoMQ::Batch.new
    [lease, batch, queue, client].each do |obj|
      assert_nil obj.close
      assert_nil obj.close
      assert obj.closed?
    end
    after = MongoMQ.handle_counts
    after.each do |kind, (made, destroyed)|
      assert_equal made - before[kind][0], destroyed - before[kind][1], "each #{kind} destroyed exactly once"
    end
  end

  def test_safety_queue_keeps_client
    client = MongoMQ::Client.new(MongoMQTest.uri)
    queue = client.queue(@db, "q", partitions: MongoMQTest.partitions)
    client_destroyed = -> { MongoMQ.handle_counts["client"][1] }
    before = client_destroyed.call
    client.close
    assert_equal before, client_destroyed.call, "the C client stays while its queue is open"
    seq = queue.publish("g", "after the client closed")
    lease = claim!(queue)
    assert_equal seq, lease.seq
    queue.ack(lease)
    assert_raises(MongoMQ::ClosedError) { client.queue(@db, "q") }
    queue.close
    assert_equal before + 1, client_destroyed.call, "the C client goes with its last queue"

    # the other order
    client = MongoMQ::Client.new(MongoMQTest.uri)
    queue = client.queue(@db, "q", partitions: MongoMQTest.partitions)
    queue.close
    assert_equal before + 1, client_destroyed.call
    client.close
    assert_equal before + 2, client_destroyed.call
  end

  def test_safety_gc_any_order
    @queue.publish("g", "x") # a lease for each client below to hold
    collect # what earlier tests left
    before = live_handles
    survivors = nil
    # Made in a thread whose stack is gone when it ends, so that nothing but the
    # survivors array refers to them.
    Thread.new do
      dropped = Array.new(6) do |i|
        client = MongoMQ::Client.new(MongoMQTest.uri)
        queues = Array.new(2) { client.queue(@db, "q", partitions: MongoMQTest.partitions) }
        lease = queues[0].claim(visibility: 30)
        queues[1].nack(lease, delay: 0) if lease
        batch = MongoMQ::Batch.new.add("g#{i}", "y")
        [client, queues, lease, batch]
      end
      dropped.clear
      # queues whose client objects are dropped now, the queues themselves later
      survivors = Array.new(3) do
        MongoMQ::Client.new(MongoMQTest.uri).queue(@db, "q", partitions: MongoMQTest.partitions)
      end
      nil
    end.join
    collect
    assert_equal 3, survivors.size
    survivors.each { |q| assert_kind_of Integer, q.publish("s", "still works after its client was collected") }
    survivors = nil # rubocop:disable Lint/UselessAssignment
    collect
    assert_equal before, live_handles, "every handle the GC collected was destroyed, once"
    MongoMQ.handle_counts.each do |kind, (made, destroyed)|
      assert_operator destroyed, :<=, made, "no #{kind} destroyed twice"
    end
  end

  # ---- clock and log ---------------------------------------------------------------------------

  def test_manual_clock
    t = Time.at(2_000_000_000).utc # 2033-05-18: far from the machine's time
    clock = MongoMQ::ManualClock.new(t)
    assert_equal t, clock.now
    @queue.clock = clock
    assert_equal t, @queue.now
    seq = @queue.publish("g", "later", not_before: t + 60)
    assert_nil @queue.claim, "not claimable before T + 60"
    clock.advance(61)
    assert_equal t + 61, @queue.now
    lease = claim!(visibility: 30)
    assert_equal [seq, "later"], [lease.seq, lease.event]
    assert_in_delta t + 61 + 30, lease.deadline, 1e-3
    # closing the clock handle while the queue runs on it: the queue keeps it
    clock.close
    assert clock.closed?
    assert_equal t + 61, @queue.now
    @queue.extend_lease(lease, visibility: 5)
    assert_in_delta t + 61 + 5, lease.deadline, 1e-3
    @queue.ack(lease)
    # no clock: server time again
    @queue.clock = nil
    assert_in_delta Time.now, @queue.now, 60
    @queue.publish("g", "now")
    assert_equal "now", claim!.event
  end

  def test_log_handler
    got = []
    lock = Mutex.new
    warning = ->(line) { line[2].match?(/mongomqnosuchoption/i) }
    MongoMQ.log_handler = ->(level, domain, message) { lock.synchronize { got << [level, domain, message, Thread.current] } }
    begin
      track(MongoMQ::Client.new("mongodb://127.0.0.1:1/?mongomqNoSuchOption=1"))
      eventually(within: 10, what: "libmongoc's warning about mongomqNoSuchOption") { lock.synchronize { got.any?(&warning) } }
      level, domain, message, thread = lock.synchronize { got.find(&warning) }
      assert_equal 2, level
      assert_equal "mongoc", domain
      assert_match(/mongomqnosuchoption/i, message)
      refute_same Thread.current, thread
      assert_equal "mongomq log", thread.name, "called on the gem's log thread"
    ensure
      MongoMQ.log_handler = nil
    end
    assert_nil MongoMQ.log_handler
    lock.synchronize { got.clear }
    track(MongoMQ::Client.new("mongodb://127.0.0.1:1/?mongomqNoSuchOption=1"))
    sleep 1
    assert_empty lock.synchronize { got.select(&warning) }, "silenced: no line reaches the old handler"
  end

  # ---- the worker ------------------------------------------------------------------------------

  # worker: started by Queue#worker; stopped and waited for after the block.
  def run_worker(worker)
    yield
  ensure
    worker.stop
    assert worker.wait(30), "the worker ended"
  end

  def test_worker_acks_success
    published = Hash.new { |h, k| h[k] = [] }
    50.times { |i| published["g#{i % 5}"] << @queue.publish("g#{i % 5}", i.to_s) }
    lock = Mutex.new
    seen = Hash.new { |h, k| h[k] = [] }
    worker = @queue.worker(concurrency: 4, visibility: 10) do |lease|
      lock.synchronize { seen[lease.group] << lease.seq }
    end
    run_worker(worker) { eventually(what: "50 events handled") { lock.synchronize { seen.values.sum(&:size) } >= 50 } }
    assert_equal published, seen, "each event once, each group in publish order"
    assert_equal 0, @queue.stats["messages"]
  end

  def test_worker_nacks_failure_backoff
    seq = @queue.publish("g", "flaky")
    calls = []
    errors = []
    worker = @queue.worker(backoff_base: 0.5, backoff_cap: 10, jitter: -> { 1.0 },
                           on_error: ->(e, l) { errors << [e.message, l.seq] }) do |lease|
      calls << [monotonic, lease.attempts, lease.seq]
      raise "failure #{lease.attempts}" if lease.attempts < 3
    end
    run_worker(worker) { eventually(within: 20, what: "3 deliveries") { calls.size >= 3 && @queue.stats["messages"].zero? } }
    assert_equal [[1, seq], [2, seq], [3, seq]], calls.map { |c| c[1, 2] }
    gaps = calls.each_cons(2).map { |a, b| b[0] - a[0] }
    assert_operator gaps[0], :>=, 0.5 - 0.05, "the first nack waited backoff_base"
    assert_operator gaps[1], :>=, 1.0 - 0.05, "the second waited twice that"
    assert_operator gaps[1], :>, gaps[0], "growing delays"
    assert_equal [["failure 1", seq], ["failure 2", seq]], errors, "each handler failure went to on_error"
  end

  def test_worker_extends_lease
    @queue.publish("g", "slow")
    errors = []
    done = false
    other = other_queue
    stolen = []
    worker = @queue.worker(visibility: 1, on_error: ->(e, _) { errors << e }) do
      t_end = monotonic + 3.0 # 3 times the visibility
      while monotonic < t_end
        lease = other.claim(visibility: 30)
        stolen << lease.group if lease
        sleep 0.1
      end
      done = true
    end
    run_worker(worker) { eventually(within: 20, what: "the slow handler") { done && @queue.stats["messages"].zero? } }
    assert_empty stolen, "nobody else got the group while its handler ran"
    assert_empty errors, "the heartbeat kept the lease: the ack was OK"
  end

  def test_worker_dead_letters
    @queue.publish("g", "poison")
    calls = 0
    worker = @queue.worker(max_attempts: 2, backoff_base: 0.05, on_error: ->(*) {}) do
      calls += 1
      raise "always"
    end
    run_worker(worker) { eventually(within: 20, what: "the dead letter") { @queue.dead_count == 1 } }
    assert_equal 2, calls
    assert_equal 0, @queue.stats["messages"]
  end

  def test_worker_stop_after_claim
    seq = @queue.publish("g", "always fails")
    lock = Mutex.new
    calls = 0
    errors = []
    30.times do
      worker = @queue.worker(concurrency: 2, backoff_base: 0.001, backoff_cap: 0.001,
                             on_error: ->(e, _) { lock.synchronize { errors << e } }) do
        lock.synchronize { calls += 1 }
        raise "always fails"
      end
      # Stop at once, or a moment later: the stop lands before, during or just after
      # the first claims, so sometimes a claim returns its lease just as it comes.
      pause = rand * 0.02
      sleep pause if pause > 0.002
      worker.stop
      assert worker.wait(30), "the worker ended"
    end
    lease = claim!(wait: 10)
    assert_equal seq, lease.seq
    assert_equal calls + 1, lease.attempts,
                 "each delivery was seen by a handler: attempts = handler calls (#{calls}) + 1"
    assert_equal calls, errors.size, "each handler failure went to on_error"
    assert_empty errors.grep(MongoMQ::Error), "no queue error"
  end

  def test_worker_graceful_shutdown
    3.times { |i| @queue.publish("g", "e#{i}") }
    started = Thread::Queue.new
    handled = []
    worker = @queue.worker(concurrency: 1, shutdown_timeout: 10) do |lease|
      started << lease.seq
      sleep 1.0
      handled << lease.seq
    end
    first = started.pop
    elapsed = timed do
      worker.stop
      assert worker.wait(15), "the worker ended"
    end
    assert_operator elapsed, :<, 10
    assert_equal [first], handled, "the running handler finished; no new claims after the stop"
    assert_equal 2, @queue.stats["messages"], "the handled event was acked, the others left"
    assert_equal "e1", claim!.event
  end

  private

  # C handles alive now, per kind.
  def live_handles
    MongoMQ.handle_counts.transform_values { |made, destroyed| made - destroyed }
  end

  def collect
    4.times do
      GC.start(full_mark: true, immediate_sweep: true)
      sleep 0.05
    end
  end
end
