# frozen_string_literal: true

module MongoMQ
  # One queue: the collections db_name.prefix_* on the client's server, over one
  # partition or more (0.8.0, #partitions), and every call on it (publish, with dedup
  # keys and attributes; claim (from every partition or some), ack, nack, unclaim, extend;
  # dead letters; groups; deduplication's window and scope; repair, admin, the clock;
  # the worker's doors; OpenTelemetry). Thread-safe: any number of threads may publish, claim, ack,
  # nack, unclaim and extend through one queue.
  # Calls that talk to the server release the GVL, so other threads run meanwhile.
  #
  # Durations are seconds (Integer, Float or Rational); instants are Time values on the
  # queue's clock (#now: the server's time).
  class Queue
    include RawHandle # close (below), closed?

    DEDUP_SCOPES = { queue: Raw::MQ_DEDUP_SCOPE_QUEUE, group: Raw::MQ_DEDUP_SCOPE_GROUP }.freeze
    private_constant :DEDUP_SCOPES

    attr_reader :client, :db_name, :prefix
    # The worker id claims use unless they name one (nil: the library's "host:pid").
    attr_accessor :worker_id

    # Opens a queue (Client#queue is the usual way); with a block, yields it and
    # closes it when the block ends.
    def self.open(client, db_name = nil, prefix = nil, worker_id: nil, partitions: 1)
      queue = new(client, db_name, prefix, worker_id: worker_id, partitions: partitions)
      return queue unless block_given?

      begin
        yield queue
      ensure
        queue.close
      end
    end

    def initialize(client, db_name = nil, prefix = nil, worker_id: nil, partitions: 1, raw: nil)
      raise MongoMQ::ArgumentError, "client must be a MongoMQ::Client" unless client.is_a?(Client)

      @client = client
      @db_name = db_name.nil? ? "mongomq" : Check.group(db_name, :db_name)
      @prefix = prefix.nil? ? "mq" : Check.group(prefix, :prefix)
      @worker_id = Check.optional_text(worker_id, :worker_id)
      @raw = raw || Raw.mqs_queue_new_with(client.raw_handle, @db_name, @prefix, Check.queue_partitions(partitions))
      @workers = []
      @telemetry = nil
    end

    # Appends an event (a String: its bytes, exactly, whatever its encoding) to the
    # tail of group. priority (0..4) counts when this publish creates the group.
    # not_before: not delivered before that Time on the queue clock (nil: now; FIFO
    # stays strict: the group waits for it). dedup_key (a String of 1..512 bytes as
    # UTF-8; nil: none): the event is added only if no event of the queue holds that
    # key (queued, or published within the dedup window, #dedup_window=); otherwise
    # nothing is added and the seq returned is that event's (#publish_with says
    # whether it was a duplicate). So a publish retried with its key after a
    # ConnectError leaves exactly one event. attrs (0.7.0; nil: none): a Hash of up to
    # ATTR_MAX String keys and values carried beside the bytes, in the Hash's order
    # (Lease#attrs, StoredEvent#attrs): a key is 1..ATTR_KEY_MAX ASCII letters, digits,
    # '_', '-' and '.', a value up to ATTR_VALUE_MAX bytes of UTF-8; anything else is a
    # MongoMQ::ArgumentError naming the attribute, and nothing is published. Returns
    # the event's sequence number (an Integer).
    def publish(group, event, priority: 0, not_before: nil, dedup_key: nil, attrs: nil)
      publish_with(group, event, priority: priority, not_before: not_before, dedup_key: dedup_key, attrs: attrs).seq
    end

    # #publish, returning a Published: seq, and duplicate? (true when dedup_key was
    # taken, so nothing was added and seq is the event that holds the key).
    def publish_with(group, event, priority: 0, not_before: nil, dedup_key: nil, attrs: nil)
      key = Check.optional_text(dedup_key, :dedup_key)
      args = [Check.group(group), Check.event(event), Check.integer(priority, :priority),
              Check.optional_time(not_before, :not_before), key.nil? ? 0 : 1, key]
      packed = Check.attrs(attrs)
      telemetry = @telemetry
      return Published.from_c(Raw.mqs_publish(@raw, *args, packed)) unless telemetry

      telemetry.publish(self, args[0], 1) do |carrier|
        Published.from_c(Raw.mqs_publish(@raw, *args, Check.with_injected(packed, carrier)))
      end
    end

    # Publishes a Batch in 3 server commands (1 more when some key was taken); with a
    # block instead, yields a new batch to fill, publishes it and closes it. Returns the
    # first event's sequence number (an Integer): in a queue of one partition, without
    # duplicates, the others follow in add order (#publish_batch_with gives each
    # event's seq and whether it was a duplicate).
    def publish_batch(batch = nil, &fill)
      filled_batch(:publish_batch, batch, fill) { |b| traced(b) { |c| Raw.mqs_publish_batch(@raw, c.raw_handle).abs } }
    end

    # #publish_batch (a Batch, or a block), returning a PublishedBatch: first_seq,
    # each event's outcome (Published) in add order, how many were added.
    def publish_batch_with(batch = nil, &fill)
      filled_batch(:publish_batch_with, batch, fill) do |b|
        traced(b) { |c| c.published(Raw.mqs_publish_batch(@raw, c.raw_handle), partitions) }
      end
    end

    # Leases the head of the due group that has waited longest among groups of
    # priority >= min_priority, for `visibility` seconds. max_events > 1 leases up to
    # that many consecutive events of the group (Lease#events, #seqs). wait: seconds to
    # wait for a group to become due (0: don't wait). worker_id: the name in the lease
    # (nil: the queue's, else the library's "host:pid"). partitions (0.8.0): take only
    # from these partitions (an Array of distinct Integers in 0..#partitions - 1; nil or
    # empty: every partition), so that each claimer can keep to its own; a number out
    # of range or given twice is a MongoMQ::ArgumentError naming partitions[i].
    # Returns a Lease, or nil when nothing is due.
    #
    # A waiting claim ends at once on Thread#kill, Thread#raise, Timeout.timeout or a
    # signal (Ctrl-C), which then goes on as Ruby does; the queue keeps working.
    def claim(visibility: 30, min_priority: 0, max_events: 1, wait: 0, worker_id: nil, partitions: nil)
      vis = Check.seconds(visibility, :visibility)
      raw = Raw.mqs_claim_in(@raw, worker_id.nil? ? @worker_id : Check.group(worker_id, :worker_id), vis,
                             Check.integer(min_priority, :min_priority), Check.count(max_events, :max_events),
                             Check.seconds(wait, :wait), Check.partitions(partitions))
      raw && Lease.new(raw, vis)
    end

    # The queue's number of partitions (0.8.0): 1 unless opened with more. A group's
    # partition is MongoMQ.group_partition(group, partitions).
    def partitions
      Raw.mq_queue_partitions(@raw)
    end

    # Removes the leased event(s) and releases the group. MongoMQ::LeaseLost when the
    # lease ran out and another worker took the group.
    def ack(lease)
      handle = lease_handle(lease)
      telemetry = @telemetry
      telemetry ? telemetry.settled(self, "ack") { Raw.mq_ack(@raw, handle) } : Raw.mq_ack(@raw, handle)
      nil
    end

    # Gives the event(s) back: delay 0 redelivers now (attempts + 1); delay > 0 keeps
    # the group held for that many seconds first.
    def nack(lease, delay: 0)
      handle = lease_handle(lease)
      delay = Check.seconds(delay, :delay)
      telemetry = @telemetry
      telemetry ? telemetry.settled(self, "nack") { Raw.mq_nack(@raw, handle, delay) } : Raw.mq_nack(@raw, handle, delay)
      nil
    end

    # Gives back a lease no handler ran (mq_unclaim): for code that claimed and then,
    # before it started any work on the events, was told to stop. Unlike #nack it is
    # not a delivery: the group gets back the attempts count and the place in line the
    # claim found, so the next claim gets the same head with the same Lease#attempts,
    # ahead of the groups that were behind it. 1 server command. MongoMQ::LeaseLost
    # (nothing changed) when the group is no longer this lease's: it ran out and
    # another worker took it, or it was purged. (libmongomq 0.4.0)
    def unclaim(lease)
      Raw.mq_unclaim(@raw, lease_handle(lease))
      nil
    end

    # Moves the lease's expiry to now + visibility (default: the claim's). (Not
    # `extend`, which is Ruby's Object#extend.)
    def extend_lease(lease, visibility: nil)
      handle = lease_handle(lease)
      vis = visibility.nil? ? lease.visibility : Check.seconds(visibility, :visibility)
      Raw.mq_extend(@raw, handle, vis)
      nil
    end

    # Dead letters: with max_attempts n > 0, a head delivered n times goes to the dead
    # letters on its next claim (0: never, the default). Applies to this Queue object.
    def max_attempts=(n)
      Raw.mq_queue_set_max_attempts(@raw, Check.integer(n, :max_attempts))
    end

    # Up to `limit` (1..10000, the C library's MQ_BATCH_MAX) events, oldest first, of
    # one group (group: nil: of the whole queue), as StoredEvent values; nothing is
    # claimed or changed. 1 server command: for tooling, not for every event.
    def peek(group: nil, limit: 10)
      unless group.nil?
        group = Check.group(group)
        Check.fail!(:group, "a non-empty String (nil: the whole queue)", group) if group.empty?
      end
      StoredEvent.list(Raw.mq_peek_json(@raw, group, list_limit(limit)))
    end

    # The dead letters, oldest seq first, up to `limit`, as StoredEvent values (with
    # attempts and dead_at). 1 server command.
    def dead_list(limit: 10)
      StoredEvent.list(Raw.mq_dead_list_json(@raw, list_limit(limit)))
    end

    # A page of the dead letters: up to `limit` (1..1000) of them, oldest seq first,
    # after skipping `offset`, and how many there are in all, as a DeadPage (letters,
    # offset, total). 2 server commands (the skip walks the index: a far offset costs
    # what it skips).
    def dead_page(offset: 0, limit: 50)
      off = Check.offset(offset)
      DeadPage.parse(Raw.mqs_dead_list_with(@raw, Check.page_limit(limit), off))
    end

    # One page of the queue's groups, each with its state, holder, lease age and
    # deadline, head's attempts, backlog and head age: a GroupsPage (groups, next,
    # now). Every filter narrows the page:
    # - states: only groups in one of these states (:ready, :leased, :parked, :paused;
    #   one or an Array); nil: every state.
    # - id_prefix: only group ids that start with it (literally, no pattern).
    # - min_attempts: only groups whose head was delivered at least this often (2:
    #   "stuck"); 0: any.
    # - held_longer_than: only leases taken more than this many seconds ago;
    #   parked_beyond: only groups not due for more than this many seconds (leased,
    #   parked or paused); nil or 0: no filter.
    # - sort: :id (by group id) or :due (by when each is due: the claims' order, paused
    #   groups in their place too).
    # - after: the previous page's #next (of the same sort); nil: the first page.
    # - limit: groups per page, 1..1000.
    # Pages by a cursor, not an offset: each page costs the same, and a walk visits
    # every group once. 3 server commands (1 when the page is empty), each on an index
    # with a limit: for tooling, not for every event.
    def groups(states: nil, id_prefix: nil, min_attempts: 0, held_longer_than: nil, parked_beyond: nil, sort: :id,
               after: nil, limit: 50)
      args = GroupsOptions.to_c(states: states, id_prefix: id_prefix, min_attempts: min_attempts,
                                held_longer_than: held_longer_than, parked_beyond: parked_beyond, sort: sort,
                                after: after, limit: limit)
      GroupsPage.parse(Raw.mqs_groups_json(@raw, *args))
    end

    # Pauses a group: no claim takes it (harel's neither) until #resume_group. A worker
    # holding it keeps its lease until it acks, nacks or lets it run out; the pause
    # outlasts the group's draining and refilling and #purge_group. A group with no
    # events can be paused ahead (its first publish finds it paused). Pausing a paused
    # group changes nothing. 2 server commands.
    def pause_group(group)
      Raw.mq_pause_group(@raw, Check.group(group))
      nil
    end

    # Resumes a paused group: claimable again, at its priority, in its place in line.
    # Resuming a group that is not paused changes nothing. 2 server commands.
    def resume_group(group)
      Raw.mq_resume_group(@raw, Check.group(group))
      nil
    end

    # Deduplication: how long a dedup_key stays taken after its event's publish, in
    # seconds, 1 to 604800 (7 days; default 300), for this queue object's keyed
    # publishes (while the event is queued its key is taken whatever the window); each
    # event keeps the window it was published with.
    def dedup_window=(seconds)
      Raw.mq_queue_set_dedup_window(@raw, Check.seconds(seconds, :dedup_window))
    end

    # Deduplication: where a dedup_key must be unique, for this queue object's keyed
    # publishes: :queue (the default: a key reused in another group is a duplicate) or
    # :group (in the event's group only); Strings too. Every publisher of a queue
    # should use one scope: keys published with one never match the other's.
    def dedup_scope=(scope)
      code = (scope.is_a?(Symbol) || scope.is_a?(String)) && DEDUP_SCOPES[scope.to_sym]
      Check.fail!(:dedup_scope, ":queue or :group", scope) unless code
      Raw.mq_queue_set_dedup_scope(@raw, code)
    end

    # Automatic repair: a claim that finds nothing due runs #repair first when this
    # many seconds passed since this queue object's last automatic repair (default 60;
    # 0 turns it off; negative is an ArgumentError).
    def repair_interval=(seconds)
      interval = Check.seconds(seconds, :repair_interval)
      Check.fail!(:repair_interval, "finite and >= 0", seconds) unless interval.finite? && interval >= 0
      Raw.mq_queue_set_repair_interval(@raw, interval)
    end

    # The automatic repairs of this queue object, a RepairCounts: runs (repairs run)
    # and fixed (locks they re-created).
    def repair_counts
      runs, fixed = Raw.mq_queue_repair_counts(@raw)
      RepairCounts.new(runs: runs, fixed: fixed).freeze
    end

    # Events in the dead letters.
    def dead_count
      Raw.mq_dead_count(@raw)
    end

    # Publishes the dead letter `seq` again at the tail of its group, without its
    # dedup_key; returns its new sequence number.
    def dead_requeue(seq)
      Raw.mq_dead_requeue(@raw, Check.integer(seq, :seq))
    end

    # Removes every dead letter; returns how many.
    def dead_purge
      Raw.mq_dead_purge(@raw)
    end

    # The queue's state as a Hash with String keys (those of the C library's stats
    # JSON): "messages", "dead", "published" (events ever published: the seq counter),
    # "partitions" (0.8.0), "groups" => {"ready", "leased", "parked", "paused", "total"},
    # "oldest_message_age_s", "priorities" => {0..4 (Integer keys) => {"groups",
    # "messages"}}, "now" (a Time), "queue", and "handle" => {"change_streams", "repair" =>
    # {"runs", "fixed", "failed"}}: this queue object's own state. Reads whole
    # collections: for monitoring.
    def stats
      stats = JSON.parse(Raw.mq_stats_json(@raw))
      if stats["priorities"].is_a?(Hash)
        stats["priorities"] = stats["priorities"].to_h { |k, v| [k.match?(/\A\d+\z/) ? k.to_i : k, v] }
      end
      stats["now"] = Check.to_time(stats["now"]) if stats["now"].is_a?(Numeric)
      stats
    end

    # Re-creates the lock of every group with events but no lock (a publisher that
    # died between its two writes). Returns how many it created.
    def repair
      Raw.mq_repair(@raw)
    end

    # Removes a group's events and its lock; its lease holder's ack is LeaseLost.
    def purge_group(group)
      Raw.mq_purge_group(@raw, Check.group(group))
      nil
    end

    # Drops the queue's collections (tests and tooling). Open the queue again before
    # real use (the indexes went with them).
    def drop
      Raw.mq_queue_drop(@raw)
      nil
    end

    # Ends every waiting claim on this queue object with MongoMQ::Interrupted, and
    # every later waiting one at once; stops the workers running on it (gracefully).
    # Other calls, plain claims (wait: 0) included, keep working. Safe in a signal trap.
    def interrupt
      Raw.mq_queue_interrupt(@raw)
      @workers.dup.each(&:stop)
      nil
    end

    # The queue's clock: the server's time (or the ManualClock's, see #clock=), a Time
    # (UTC).
    def now
      Check.to_time(Raw.mq_queue_now(@raw))
    end

    # Runs the queue on a ManualClock (tests and simulations): scheduled publishes, claims,
    # lease deadlines and #now read it instead of the server's time. nil: back to the
    # server's time. For this queue object (and the workers started on it after); the
    # queue keeps the clock until it is closed, so the clock may be closed first.
    def clock=(clock)
      unless clock.nil? || clock.is_a?(ManualClock)
        raise MongoMQ::ArgumentError, "clock must be a MongoMQ::ManualClock or nil (got #{clock.inspect[0, 60]})"
      end

      Raw.mqr_queue_set_clock(@raw, clock&.raw_handle)
    end

    # OpenTelemetry (issue 22): a MongoMQ::OTel::Telemetry (`require "mongomq/otel"`)
    # makes this queue object record spans and metrics and carry W3C trace context in
    # its events' attributes (README, "Tracing"; bindings/CONTRACT.md); nil (the
    # default) turns that off again. For this queue object and the workers started on
    # it after.
    def telemetry=(telemetry)
      unless telemetry.nil? || (defined?(MongoMQ::OTel::Telemetry) && telemetry.is_a?(MongoMQ::OTel::Telemetry))
        raise MongoMQ::ArgumentError,
              "telemetry must be a MongoMQ::OTel::Telemetry (require \"mongomq/otel\") or nil (got #{telemetry.inspect[0, 60]})"
      end

      @telemetry = telemetry
    end

    # The queue's MongoMQ::OTel::Telemetry, or nil (none: the default).
    attr_reader :telemetry

    # Seconds (Float) the server's clock is ahead of this machine's.
    def clock_offset
      Raw.mq_queue_clock_offset(@raw)
    end

    # Runs `handler` on this queue's leases with a Worker (options: see Worker) and
    # blocks until it stops: Worker#stop from another thread, #interrupt or #close,
    # idle_timeout, or INT/TERM with handle_signals: true. The handler's return acks,
    # an exception nacks with back-off. Returns nil.
    #
    #   queue.work(concurrency: 8, handle_signals: true) { |lease| handle(lease.json) }
    def work(**options, &handler)
      Worker.new(self, **options, &handler).run
    end

    # Starts a Worker (options: see Worker) on threads of its own and returns it at
    # once: Worker#stop ends it gracefully, Worker#wait waits until it has ended.
    def worker(**options, &handler)
      Worker.new(self, **options, &handler).start
    end

    # Closes the queue: no new calls; running claims are woken (they raise
    # ClosedError); workers running on it stop. Closing twice does nothing.
    def close
      @workers.dup.each(&:stop)
      super
    end

    def inspect
      "#<#{self.class.name} #{@db_name}.#{@prefix}#{closed? ? " (closed)" : ""}>"
    end

    # @api private: another queue object on the same collections and client (a
    # worker's own, so that stopping it interrupts nothing of this one's).
    def reopen(worker_id: @worker_id)
      raw = Raw.mqr_queue_reopen(@raw, @db_name, @prefix)
      begin
        Raw.mqr_queue_clock_from(raw, @raw) # this queue's manual clock, if any
      rescue Exception # rubocop:disable Lint/RescueException
        Raw.mqr_close(raw)
        raise
      end
      queue = Queue.new(@client, @db_name, @prefix, worker_id: worker_id, raw: raw)
      queue.telemetry = @telemetry
      queue
    end

    # @api private
    def add_worker(worker)
      @workers << worker
    end

    # @api private
    def remove_worker(worker)
      @workers.delete(worker)
    end

    private

    # Yields the Batch a publish_batch call was given, or a new one its block `fill`
    # filled (closed after the yield); returns what the yield returns.
    def filled_batch(call, batch, fill)
      if batch.nil?
        raise MongoMQ::ArgumentError, "#{call} needs a MongoMQ::Batch or a block" unless fill

        batch = Batch.new
        begin
          fill.call(batch)
          return yield batch
        ensure
          batch.close
        end
      end
      raise MongoMQ::ArgumentError, "batch must be a MongoMQ::Batch" unless batch.is_a?(Batch)

      yield batch
    end

    # Yields the batch to publish: with telemetry, inside its send span, a copy whose
    # events carry the injected trace context too (Batch#injected).
    def traced(batch, &publish)
      telemetry = @telemetry
      return yield batch unless telemetry

      telemetry.publish(self, nil, batch.size) { |carrier| batch.injected(carrier, &publish) }
    end

    def list_limit(limit)
      Check.count(limit, :limit)
      Check.fail!(:limit, "at most #{Raw::MQ_BATCH_MAX}", limit) if limit > Raw::MQ_BATCH_MAX
      limit
    end

    def lease_handle(lease)
      raise MongoMQ::ArgumentError, "lease must be a MongoMQ::Lease (got #{lease.inspect[0, 60]})" unless lease.is_a?(Lease)

      lease.raw_handle
    end
  end
end
