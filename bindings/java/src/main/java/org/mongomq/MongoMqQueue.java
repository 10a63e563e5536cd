package org.mongomq;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.mongomq.internal.mongomq_raw;

/**
 * One queue ({@code mq_queue}: the collections {@code db.prefix_*}); thread-safe: any
 * number of threads may publish, claim, ack, nack, unclaim and extend through it at
 * once. (Named MongoMqQueue, not Queue, so that it never collides with
 * {@code java.util.Queue} under wildcard imports.)
 *
 * <p>A queue keeps its {@link Client} alive. {@link #close()} frees it once no call on
 * it is running (a close while another thread waits in a {@link #claim(ClaimOptions)}
 * takes effect when that claim returns); the garbage collector frees a queue nobody
 * closed.
 */
public final class MongoMqQueue implements AutoCloseable {
    private final Client client; // strong: the client object stays reachable while the queue is
    private final Handle handle;
    private final Cleaner.Cleanable cleanable;
    private final String name;
    private volatile Telemetry telemetry; // null: none (the default)

    MongoMqQueue(Client client, Handle clientHandle, long ptr, String name) {
        this.client = client;
        this.name = name;
        // The queue's hold on the client (taken in Client.queue) goes when the queue is freed.
        this.handle = new Handle("queue", ptr, q -> {
            mongomq_raw.mqs_queue_destroy(q);
            clientHandle.release();
        });
        this.cleanable = Native.CLEANER.register(this, handle);
    }

    /** "db.prefix". */
    public String name() {
        return name;
    }

    /** The client this queue was opened from. */
    public Client client() {
        return client;
    }

    /**
     * The queue's number of partitions: 1 unless it was opened with more
     * ({@link QueueOptions#partitions(int)}). No server command.
     *
     * @since 0.8.0
     */
    public int partitions() {
        long q = acquire();
        try {
            return mongomq_raw.mq_queue_partitions(q);
        } finally {
            release();
        }
    }

    /**
     * The partition of {@code groupId} in a queue of {@code partitions} partitions
     * ({@code mq_group_partition}: FNV-1a 64 of its UTF-8 bytes, mixed by fmix64, modulo
     * partitions): the same in every language and version, and {@link Lease#partition()}
     * of its leases. 0 when partitions is 1.
     *
     * @throws IllegalArgumentException partitions outside 1..{@value QueueOptions#PARTITIONS_MAX}
     *         (or a bad group id)
     * @since 0.8.0
     */
    public static int groupPartition(String groupId, int partitions) {
        Native.group(groupId);
        int k = mongomq_raw.mq_group_partition(groupId, partitions);
        if (k < 0)
            throw new IllegalArgumentException("partitions must be 1.." + QueueOptions.PARTITIONS_MAX + ", got " + partitions);
        return k;
    }

    private long acquire() {
        return handle.acquire();
    }

    private void release() {
        handle.release();
    }

    // ---- publish ---------------------------------------------------------------------

    /**
     * Appends an event to the tail of a group and returns its sequence number, with
     * {@code options}' priority (which counts only when this publish creates the group),
     * not-before time (on the queue's clock, {@link #now()}: FIFO stays strict, its
     * group waits for it), dedup key and attributes. A publish whose dedup key was taken adds nothing
     * and returns the seq of the event holding the key ({@link
     * #publishWith(String, byte[], PublishOptions)} says it was a duplicate). 3 server
     * commands.
     */
    public long publish(String groupId, byte[] event, PublishOptions options) {
        return publishWith(groupId, event, options).seq();
    }

    /** Publishes with the default options: priority 0, due at once, no dedup key. */
    public long publish(String groupId, byte[] event) {
        return publish(groupId, event, PublishOptions.defaults());
    }

    /** Publishes a text event (its UTF-8 bytes). */
    public long publish(String groupId, String event, PublishOptions options) {
        if (event == null) throw new IllegalArgumentException("event must not be null");
        return publish(groupId, event.getBytes(StandardCharsets.UTF_8), options);
    }

    /** Publishes a text event (its UTF-8 bytes) with the default options. */
    public long publish(String groupId, String event) {
        return publish(groupId, event, PublishOptions.defaults());
    }

    /**
     * {@link #publish(String, byte[], PublishOptions)} that also says whether it was a
     * duplicate: with a {@link PublishOptions#dedupKey(String) dedup key} that an event
     * of the queue holds (within the window), it adds nothing and returns that event's
     * seq with {@code duplicate()} true. Without a key it is {@code publish}, never a
     * duplicate. ({@code publish} keeps returning a long: the API only grows.)
     *
     * @since 0.6.0
     */
    public Published publishWith(String groupId, byte[] event, PublishOptions options) {
        Native.group(groupId);
        Native.event(event);
        if (options == null) throw new IllegalArgumentException("options must not be null");
        Telemetry t = telemetry;
        return t == null ? publishNative(groupId, event, options) : Tracing.publish(this, t, groupId, event, options);
    }

    /** The library's publish of a checked event. */
    Published publishNative(String groupId, byte[] event, PublishOptions options) {
        long q = acquire();
        try {
            return Published.of(mongomq_raw.mqs_publish(q, groupId, event, options.priority(),
                    options.notBeforeEpochSeconds(), options.hasDedupKey(), options.dedupKey().orElse(null),
                    options.packedAttrs()));
        } finally {
            release();
        }
    }

    /** {@link #publishWith(String, byte[], PublishOptions)} of a text event (its UTF-8 bytes). */
    public Published publishWith(String groupId, String event, PublishOptions options) {
        if (event == null) throw new IllegalArgumentException("event must not be null");
        return publishWith(groupId, event.getBytes(StandardCharsets.UTF_8), options);
    }

    /**
     * Publishes every event of the batch in 3 server commands; returns the first seq: the
     * events get first, first + 1, ... in add order. An event whose dedup key was taken
     * (by an earlier publish, or an earlier event of the batch) is not added (1 command
     * more) and its first + i is left unused: {@link #publishWith(Batch)} says which.
     */
    public long publish(Batch batch) {
        if (batch == null) throw new IllegalArgumentException("batch must not be null");
        long q = acquire();
        try {
            return publishBatch(q, batch, false).first();
        } finally {
            release();
        }
    }

    /**
     * {@link #publish(Batch)} that returns each event's outcome, in add order: an added
     * event's seq (first + i), or for a duplicate (a key taken by an earlier publish, or
     * an earlier event of this batch) {@code duplicate()} and the seq of the event that
     * holds the key ({@code mq_batch_outcome}). Still 3 server commands, 1 more when
     * some key was taken.
     *
     * @since 0.6.0
     */
    public List<Published> publishWith(Batch batch) {
        if (batch == null) throw new IllegalArgumentException("batch must not be null");
        long q = acquire();
        try {
            return publishBatch(q, batch, true).outcomes();
        } finally {
            release();
        }
    }

    private Batch.Outcome publishBatch(long q, Batch batch, boolean outcomes) {
        Telemetry t = telemetry;
        return t == null ? batch.publishTo(q, outcomes) : Tracing.publish(this, q, t, batch, outcomes);
    }

    // ---- claim -----------------------------------------------------------------------

    /**
     * Leases the head of the due group that waited longest, with the default options:
     * visibility 30 s, any priority, one event, no wait; empty when none is due.
     */
    public Optional<Lease> claim() {
        return claim(ClaimOptions.defaults());
    }

    /**
     * Leases the head (up to {@code maxEvents} consecutive events) of the due group that
     * waited longest among groups of priority &gt;= {@code minPriority}; with a
     * {@code wait}, waits up to that long for one to become due (returning as soon as
     * one is, and not polling). Empty when none is due.
     *
     * <p>{@link Thread#interrupt()} of the waiting thread cancels a waiting claim only:
     * it throws {@link CancelledException} promptly and the thread's interrupt status
     * stays set (a thread already interrupted gets it at once). {@link #interrupt()} ends
     * every waiting claim of the queue with {@link QueueInterruptedException}. A claim
     * without a wait is neither.
     */
    public Optional<Lease> claim(ClaimOptions options) {
        return claim(options, null);
    }

    /**
     * Where a waiting claim's {@code mq_cancel} is lent to while the claim runs
     * ({@link AsyncQueue}'s futures, whose {@code cancel(true)} triggers it): attached
     * before the wait starts, detached before the cancel is destroyed, so that it is
     * never triggered after.
     */
    interface CancelSink {
        void attach(long cancel);

        void detach();
    }

    /** {@link #claim(ClaimOptions)} that also lends its cancel to {@code sink} (null: none). */
    Optional<Lease> claim(ClaimOptions options, CancelSink sink) {
        if (options == null) throw new IllegalArgumentException("options must not be null");
        double vis = Native.seconds(options.visibility());
        String worker = options.workerId().orElse(null);
        double wait = Native.seconds(options.waitTimeout());
        byte[] parts = options.partitionList().packed();
        if (wait == 0) return claimNative(worker, vis, options.minPriority(), options.maxEvents(), 0, 0, parts);
        Thread self = Thread.currentThread();
        if (self.isInterrupted()) throw new CancelledException("claim: the thread is interrupted");
        long cancel = mongomq_raw.mq_cancel_new();
        if (sink != null) sink.attach(cancel);
        try (InterruptWatcher.Registration r = InterruptWatcher.register(self, cancel)) {
            return claimNative(worker, vis, options.minPriority(), options.maxEvents(), wait, cancel, parts);
        } finally {
            if (sink != null) sink.detach();
            mongomq_raw.mq_cancel_destroy(cancel);
        }
    }

    /**
     * The claim of every kind (mq_claim_with): the Worker passes its own cancel handle;
     * parts: PartitionList.packed() (none: every partition).
     */
    Optional<Lease> claimNative(String worker, double vis, int minPriority, int maxEvents, double wait, long cancel,
                                byte[] parts) {
        long q = acquire();
        try {
            long l = mongomq_raw.mqs_claim_in(q, worker, vis, minPriority, maxEvents, wait, cancel, parts);
            return l == 0 ? Optional.empty() : Optional.of(new Lease(l));
        } finally {
            release();
        }
    }

    // ---- ack, nack, unclaim, extend --------------------------------------------------

    /**
     * Removes the leased events and releases the group; finishes the lease. After a
     * {@link MongoMqConnectException} (the outcome is unknown: the server may have applied it)
     * the lease stays open: retry {@code ack} with it, as the C API says; a retry that
     * finds its own earlier release applied succeeds. The same holds for nack and
     * unclaim.
     *
     * @throws LeaseLostException the lease expired and another worker took the group
     *         (the events are removed all the same), or it was already acked, nacked or
     *         given back
     */
    public void ack(Lease lease) {
        if (lease == null) throw new IllegalArgumentException("lease must not be null");
        finishing(lease, "ack", (q, l) -> mongomq_raw.mq_ack(q, l));
    }

    /**
     * Gives the leased events back, redelivered (attempts + 1) after {@code delay}
     * (zero: now); finishes the lease.
     */
    public void nack(Lease lease, Duration delay) {
        if (lease == null) throw new IllegalArgumentException("lease must not be null");
        double d = Native.nonNegative("delay", delay);
        finishing(lease, "nack", (q, l) -> mongomq_raw.mq_nack(q, l, d));
    }

    /** Gives the leased events back for redelivery now. */
    public void nack(Lease lease) {
        nack(lease, Duration.ZERO);
    }

    /**
     * Gives back a lease no handler ran ({@code mq_unclaim}): for code that claimed and
     * then, before it started any work on the events, was told to stop. Unlike
     * {@link #nack}, it is not a delivery: the group gets back the attempts count and
     * the place in line the claim found, so the next claim gets the same head with the
     * same {@link Lease#attempts()}, ahead of the groups that were behind it, and a
     * service restarted often never pushes an unhandled event towards the dead letters.
     * Finishes the lease, as ack and nack do. 1 server command.
     *
     * <p>Use it only for leases whose events nobody has looked at; a lease that was
     * handled and failed is a {@link #nack}.
     *
     * @throws LeaseLostException the group is no longer this lease's (it expired and
     *         another worker took it, or it was purged); nothing is changed, so a newer
     *         holder's lease keeps working. Also for a lease already acked, nacked or
     *         given back
     * @since 0.4.0
     */
    public void unclaim(Lease lease) {
        if (lease == null) throw new IllegalArgumentException("lease must not be null");
        finishing(lease, null, (q, l) -> mongomq_raw.mq_unclaim(q, l));
    }

    /** A call on (queue, lease) handles that ends the lease. */
    private interface LeaseCall {
        void run(long queue, long lease);
    }

    // ack, nack and unclaim: the call, then the lease is finished, except after a
    // MongoMqConnectException (the outcome is unknown): the lease stays for the retry.
    // With a telemetry, an ack's or nack's (operation; null: unclaim) duration is recorded.
    private void finishing(Lease lease, String operation, LeaseCall call) {
        Telemetry t = operation == null ? null : telemetry;
        long t0 = t == null ? 0 : System.nanoTime();
        Throwable failed = null;
        long q = acquire();
        try {
            long l = lease.acquire();
            boolean unknown = false;
            try {
                call.run(q, l);
            } catch (MongoMqConnectException e) {
                unknown = true;
                throw e;
            } finally {
                lease.release();
                if (!unknown) lease.finish();
            }
        } catch (RuntimeException | Error e) {
            failed = e;
            throw e;
        } finally {
            release();
            if (t != null) t.recordOperation(name, operation, (System.nanoTime() - t0) / 1e9, failed);
        }
    }

    /** Moves the lease's expiry to now + visibility (see {@link Lease#deadline()}). */
    public void extend(Lease lease, Duration visibility) {
        if (lease == null) throw new IllegalArgumentException("lease must not be null");
        double v = Native.positive("visibility", visibility);
        long q = acquire();
        try {
            long l = lease.acquire();
            try {
                mongomq_raw.mq_extend(q, l, v);
                lease.refreshDeadline(l);
            } finally {
                lease.release();
            }
        } finally {
            release();
        }
    }

    // ---- waiting, time ---------------------------------------------------------------

    /**
     * Ends every waiting claim (a {@link #claim(ClaimOptions)} with a wait, and the
     * workers' claims) on this queue with {@link QueueInterruptedException}, and every
     * later one at once: for shutdown. A claim without a wait and the other calls keep
     * working.
     */
    public void interrupt() {
        long q = acquire();
        try {
            mongomq_raw.mq_queue_interrupt(q);
        } finally {
            release();
        }
    }

    /**
     * The queue's clock: the server's time (its offset measured when the queue was
     * opened), or the {@link ManualClock} given to {@link #setClock}.
     */
    public Instant now() {
        long q = acquire();
        try {
            return Native.instant(mongomq_raw.mq_queue_now(q));
        } finally {
            release();
        }
    }

    /**
     * Runs this queue (this queue object: other handles on the same collections keep
     * their own clocks) on a {@link ManualClock}, for tests and simulations:
     * {@link #now()}, scheduled publishes, nack delays, visibility and lease deadlines
     * read it instead of server time. {@code null} puts the queue back on server time.
     *
     * <p>The queue keeps every clock it was given until it is closed, so closing the
     * clock (or dropping it) while the queue still runs on it is safe.
     *
     * @throws ClosedException when the queue or the clock is closed
     */
    public void setClock(ManualClock clock) {
        long q = acquire();
        try {
            if (clock == null) {
                mongomq_raw.mqs_queue_set_clock(q, 0);
                return;
            }
            Handle ch = clock.handle();
            long c = ch.acquire();
            try {
                mongomq_raw.mqs_queue_set_clock(q, c);
            } finally {
                ch.release();
            }
        } finally {
            release();
        }
    }

    /** The server clock's offset to this machine's (server minus local). */
    public Duration clockOffset() {
        long q = acquire();
        try {
            return Native.duration(mongomq_raw.mq_queue_clock_offset(q));
        } finally {
            release();
        }
    }

    // ---- dead letters, stats, maintenance --------------------------------------------

    /**
     * n &gt; 0: a head delivered n times goes to the dead letters on its next claim
     * (through this queue object); 0: unlimited (the default).
     */
    public void setMaxAttempts(int maxAttempts) {
        if (maxAttempts < 0) throw new IllegalArgumentException("maxAttempts must not be negative, got " + maxAttempts);
        long q = acquire();
        try {
            mongomq_raw.mq_queue_set_max_attempts(q, maxAttempts);
        } finally {
            release();
        }
    }

    /** The number of dead letters. */
    public long deadCount() {
        long q = acquire();
        try {
            return mongomq_raw.mq_dead_count(q);
        } finally {
            release();
        }
    }

    /** Publishes the dead letter {@code seq} again at the tail of its group; returns its new seq. */
    public long deadRequeue(long seq) {
        long q = acquire();
        try {
            return mongomq_raw.mq_dead_requeue(q, seq);
        } finally {
            release();
        }
    }

    /** Removes every dead letter; returns how many. */
    public long deadPurge() {
        long q = acquire();
        try {
            return mongomq_raw.mq_dead_purge(q);
        } finally {
            release();
        }
    }

    /** The queue's state, parsed (3 server commands that read whole collections: for monitoring). */
    public Stats stats() {
        return Stats.parse(statsJson());
    }

    /** The queue's state as the library's JSON text (docs/design.md, "Stats"). */
    public String statsJson() {
        long q = acquire();
        try {
            String[] json = new String[1];
            mongomq_raw.mq_stats_json(q, json);
            return json[0];
        } finally {
            release();
        }
    }

    /** Re-creates the lock of every group that has events but no lock; returns how many. */
    public long repair() {
        long q = acquire();
        try {
            return mongomq_raw.mq_repair(q);
        } finally {
            release();
        }
    }

    /**
     * The automatic repair: a claim that finds nothing due runs {@link #repair()} first
     * when {@code interval} has passed since this queue object's last automatic repair
     * (the period starts at its first empty claim), and claims again if that made a
     * group claimable. Default 60 s; zero turns it off. Per queue object.
     */
    public void setRepairInterval(Duration interval) {
        double s = Native.nonNegative("interval", interval);
        long q = acquire();
        try {
            mongomq_raw.mq_queue_set_repair_interval(q, s);
        } finally {
            release();
        }
    }

    /**
     * How long a dedup key stays taken after its publish, even once its event was acked
     * or moved to the dead letters: 1 s to 7 days (anything else is an {@link
     * IllegalArgumentException}); default 5 minutes. While its event is in the queue a key
     * is taken whatever the window. The window is a lower bound: an acked event's record
     * goes when MongoDB's TTL monitor (every 60 s) or a later publish with the key finds
     * it expired. Each event records the window it was published with, so queue objects
     * with different windows may share a queue. Per queue object.
     *
     * @since 0.6.0
     */
    public void setDedupWindow(Duration window) {
        if (window == null) throw new IllegalArgumentException("window must not be null");
        double s = Native.seconds(window);
        long q = acquire();
        try {
            mongomq_raw.mq_queue_set_dedup_window(q, s);
        } finally {
            release();
        }
    }

    /**
     * Where this queue object's dedup keys must be unique: {@link DedupScope#QUEUE} (the
     * default) or {@link DedupScope#GROUP}. Every publisher of a queue should use one
     * scope: keys published with one scope never match keys published with the other.
     *
     * @since 0.6.0
     */
    public void setDedupScope(DedupScope scope) {
        if (scope == null) throw new IllegalArgumentException("scope must not be null");
        long q = acquire();
        try {
            mongomq_raw.mq_queue_set_dedup_scope(q, scope.code());
        } finally {
            release();
        }
    }

    /** The automatic repairs this queue object ran, and the locks they re-created. */
    public RepairCounts repairCounts() {
        long q = acquire();
        try {
            long[] runs = new long[1], fixed = new long[1];
            mongomq_raw.mq_queue_repair_counts(q, runs, fixed);
            return new RepairCounts(runs[0], fixed[0]);
        } finally {
            release();
        }
    }

    /**
     * Up to {@code limit} (1..10000) events of the whole queue, oldest (lowest seq)
     * first, without claiming or changing anything (1 server command; for tooling).
     */
    public List<StoredEvent> peek(int limit) {
        return peek(null, limit);
    }

    /** As {@link #peek(int)}, for one group ({@code groupId} null: the whole queue). */
    public List<StoredEvent> peek(String groupId, int limit) {
        if (groupId != null) Native.group(groupId);
        Native.range("limit", limit);
        long q = acquire();
        try {
            String[] json = new String[1];
            mongomq_raw.mq_peek_json(q, groupId, limit, json);
            return StoredEvent.parseList(json[0]);
        } finally {
            release();
        }
    }

    /**
     * Up to {@code limit} (1..10000) dead letters, oldest seq first, with their attempts
     * and {@code deadAt} (1 server command).
     */
    public List<StoredEvent> deadList(int limit) {
        Native.range("limit", limit);
        long q = acquire();
        try {
            String[] json = new String[1];
            mongomq_raw.mq_dead_list_json(q, limit, json);
            return StoredEvent.parseList(json[0]);
        } finally {
            release();
        }
    }

    /**
     * Up to {@code limit} (1..1000) dead letters, oldest seq first, after skipping
     * {@code offset} of them, and how many there are in all: a page of a dead-letter view
     * (2 server commands; the skip walks the index: a far offset costs what it skips).
     *
     * @since 0.5.0
     */
    public DeadPage deadPage(long offset, int limit) {
        if (offset < 0) throw new IllegalArgumentException("offset must not be negative, got " + offset);
        if (limit < 1 || limit > 1000) throw new IllegalArgumentException("limit must be 1..1000, got " + limit);
        long q = acquire();
        try {
            String[] json = new String[1];
            mongomq_raw.mqs_dead_list_with(q, limit, offset, json);
            return DeadPage.parse(json[0]);
        } finally {
            release();
        }
    }

    // ---- groups (0.5.0) --------------------------------------------------------------

    /**
     * One page of the queue's groups ({@code mq_groups_json}): each with its state,
     * holder, lease age and deadline, its head's attempts, backlog and head age, filtered
     * and ordered by {@code options}; {@link GroupsPage#next()} is the cursor of the page
     * after it. 3 server commands (1 when the page is empty), each on an index with a
     * limit: for tooling (the view of {@code mongomq groups} and {@code mongomq web}), not
     * for every event.
     *
     * @throws IllegalArgumentException a cursor of another sort, or not one at all
     * @since 0.5.0
     */
    public GroupsPage groups(GroupsOptions options) {
        if (options == null) throw new IllegalArgumentException("options must not be null");
        long q = acquire();
        try {
            String[] json = new String[1];
            mongomq_raw.mqs_groups_json(q, options.stateFlags(), options.idPrefix().orElse(null),
                    options.minAttempts(), Native.seconds(options.heldLongerThan()),
                    Native.seconds(options.parkedBeyond()), options.sort().code(), options.after().orElse(null),
                    options.limit(), json);
            return GroupsPage.parse(json[0]);
        } finally {
            release();
        }
    }

    /** The first page of every group, by id, 50 a page ({@link GroupsOptions#defaults()}). */
    public GroupsPage groups() {
        return groups(GroupsOptions.defaults());
    }

    /**
     * Pauses a group: no claim takes it (harel's neither) until {@link #resumeGroup}. A
     * worker holding it keeps its lease until it acks, nacks or lets it run out; the
     * pause outlasts the group's draining and refilling and {@link #purgeGroup}. A group
     * without events can be paused ahead (its first publish finds it paused). Pausing a
     * paused group changes nothing. 2 server commands.
     *
     * @since 0.5.0
     */
    public void pauseGroup(String groupId) {
        Native.group(groupId);
        long q = acquire();
        try {
            mongomq_raw.mq_pause_group(q, groupId);
        } finally {
            release();
        }
    }

    /**
     * Resumes a paused group: claimable again, at its priority, in its place in line.
     * Resuming a group that is not paused changes nothing. 2 server commands.
     *
     * @since 0.5.0
     */
    public void resumeGroup(String groupId) {
        Native.group(groupId);
        long q = acquire();
        try {
            mongomq_raw.mq_resume_group(q, groupId);
        } finally {
            release();
        }
    }

    /** Removes a group's events and its lock; its lease holder's ack/nack/extend get lease lost. */
    public void purgeGroup(String groupId) {
        Native.group(groupId);
        long q = acquire();
        try {
            mongomq_raw.mq_purge_group(q, groupId);
        } finally {
            release();
        }
    }

    /**
     * Drops the queue's collections (tests and tooling). The indexes go too: open the
     * queue again before real use.
     */
    public void drop() {
        long q = acquire();
        try {
            mongomq_raw.mq_queue_drop(q);
        } finally {
            release();
        }
    }

    // ---- worker ----------------------------------------------------------------------

    /**
     * Runs {@code options.concurrency()} workers that claim leases and run the handler
     * on each ({@link Worker}: a normal return acks, an exception nacks with back-off;
     * the lease is extended while the handler runs), and <b>blocks</b> until they are
     * stopped: by the idle timeout, by SIGINT/SIGTERM when {@code handleSignals}, by
     * {@link #interrupt()} or {@link #close()} of this queue, or by
     * {@link Thread#interrupt()} of the calling thread (which returns with its interrupt
     * status set). Returns once the stop is done: running handlers finished, or
     * abandoned after the shutdown timeout.
     */
    public void work(WorkerOptions options, LeaseHandler handler) {
        worker(options, handler).run();
    }

    /**
     * Starts the workers of {@link #work} and returns at once: {@link Worker#stop()},
     * {@link Worker#awaitTermination(Duration)}, and {@link Worker#close()} (stop and
     * wait, for try-with-resources).
     */
    public Worker worker(WorkerOptions options, LeaseHandler handler) {
        if (options == null) throw new IllegalArgumentException("options must not be null");
        if (handler == null) throw new IllegalArgumentException("handler must not be null");
        acquire(); // a closed queue is the closed error here, not workers that end at once
        release();
        return new Worker(this, options, handler);
    }

    // ---- tracing (0.7.0) -------------------------------------------------------------

    /**
     * Traces this queue object's publishes and workers, and measures its acks and nacks,
     * through {@code telemetry} (bindings/CONTRACT.md, "Tracing"): OpenTelemetry's is
     * {@code org.mongomq.otel.MongoMqTelemetry} (needs {@code opentelemetry-api}; nothing
     * else does). {@code null} (the default) turns it off. Takes effect for the calls that
     * start after it, running workers' next leases included. Per queue object.
     *
     * @since 0.7.0
     */
    public void setTelemetry(Telemetry telemetry) {
        if (telemetry != null) Tracing.used();
        this.telemetry = telemetry;
    }

    /** The telemetry set, or null. */
    Telemetry telemetry() {
        return telemetry;
    }

    // ---- async (0.6.0) ---------------------------------------------------------------

    /**
     * This queue's calls returning {@link java.util.concurrent.CompletableFuture}s, run on
     * {@link AsyncQueue#defaultExecutor()}; a view, as Lettuce's {@code connection.async()}
     * is of a connection: nothing to close but the queue.
     *
     * @since 0.6.0
     */
    public AsyncQueue async() {
        return new AsyncQueue(this, AsyncQueue.defaultExecutor());
    }

    /**
     * {@link #async()} on the caller's executor (a bounded pool of the program's, an
     * executor of virtual threads on Java 21); the caller shuts it down, after the
     * futures it runs are done.
     *
     * @since 0.6.0
     */
    public AsyncQueue async(java.util.concurrent.Executor executor) {
        return new AsyncQueue(this, executor);
    }

    /** Closes the queue (at once, or when the calls running on it return). Twice does nothing. */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "MongoMqQueue{" + name + "}";
    }

    /** For the tests. */
    Handle handle() {
        return handle;
    }
}
