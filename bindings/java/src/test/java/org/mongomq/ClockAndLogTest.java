package org.mongomq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** ManualClock and Client.setLogHandler beyond the contract scenarios (ContractTest). */
class ClockAndLogTest extends QueueTestBase {
    private static final Instant T = Instant.parse("2031-06-01T12:00:00Z");
    private static final String WARNS = "mongodb://127.0.0.1:1/?mongomqNoSuchOption=1";

    @Test
    void clockArguments() {
        assertThrows(IllegalArgumentException.class, () -> new ManualClock(null));
        try (ManualClock c = new ManualClock(T)) {
            assertThrows(IllegalArgumentException.class, () -> c.set(null));
            assertThrows(IllegalArgumentException.class, () -> c.advance(null));
            c.advance(Duration.ofMillis(1500));
            assertEquals(T.plusMillis(1500), c.now());
            c.advance(Duration.ofSeconds(-10));
            assertEquals(T.minusMillis(8500), c.now(), "a negative duration moves it back");
            c.set(T);
            assertEquals(T, c.now());
            assertEquals("ManualClock{" + T + "}", c.toString());
        }
    }

    @Test
    void clockClosed() {
        ManualClock c = new ManualClock(T);
        c.close();
        c.close(); // twice does nothing
        assertTrue(c.handle().isFreed());
        for (org.junit.jupiter.api.function.Executable call : new org.junit.jupiter.api.function.Executable[] {
                c::now, () -> c.set(T), () -> c.advance(Duration.ofSeconds(1)), () -> queue.setClock(c)}) {
            ClosedException e = assertThrows(ClosedException.class, call);
            assertTrue(e.getMessage().contains("clock is closed"), e.getMessage());
        }
        assertEquals("ManualClock{closed}", c.toString());

        Client c2 = Client.connect(uri());
        MongoMqQueue q2 = sameQueue(c2);
        q2.close();
        c2.close();
        try (ManualClock open = new ManualClock(T)) {
            ClosedException e = assertThrows(ClosedException.class, () -> q2.setClock(open));
            assertTrue(e.getMessage().contains("queue is closed"), e.getMessage());
            assertThrows(ClosedException.class, () -> q2.setClock(null));
        }
    }

    @Test
    void clockNackDelayAndVisibility() {
        try (ManualClock clock = new ManualClock(T)) {
            queue.setClock(clock);
            long seq = queue.publish("g", b("x"));
            queue.nack(must(queue.claim()), Duration.ofSeconds(10));
            assertFalse(queue.claim().isPresent(), "parked for 10 s of the clock");
            clock.advance(Duration.ofSeconds(11));
            Lease l = must(queue.claim(C.visibility(Duration.ofSeconds(5))));
            assertEquals(seq, l.seq());
            assertEquals(2, l.attempts());
            assertFalse(queue.claim().isPresent(), "leased");
            clock.advance(Duration.ofSeconds(6));
            Lease again = must(queue.claim());
            assertEquals(3, again.attempts(), "the lease ran out on the clock");
            assertThrows(LeaseLostException.class, () -> queue.ack(l));
            queue.ack(again);
        }
    }

    @Test
    void clockSharedByQueues() {
        ManualClock clock = new ManualClock(T);
        MongoMqQueue other = sameQueue(client);
        queue.setClock(clock);
        other.setClock(clock);
        clock.close();
        other.close(); // lets go of its reference; the first queue still holds the clock
        assertEquals(T, queue.now());
        ManualClock second = new ManualClock(T.plusSeconds(5));
        queue.setClock(second); // the replaced clock stays with the queue until it closes
        second.close();
        assertEquals(T.plusSeconds(5), queue.now());
    }

    @Test
    void logHandlerExceptionGoesToStderr() throws Exception {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch afterThrow = new CountDownLatch(1);
        try {
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            Client.setLogHandler((level, domain, message) -> {
                if (!message.toLowerCase(java.util.Locale.ROOT).contains("mongomqnosuchoption")) return;
                if (calls.getAndIncrement() == 0) throw new IllegalStateException("handler failure for the test");
                afterThrow.countDown();
            });
            try (Client c = Client.connect(WARNS)) {
                assertTrue(c != null);
            }
            try (Client c = Client.connect(WARNS)) {
                assertTrue(c != null);
            }
            assertTrue(afterThrow.await(10, TimeUnit.SECONDS), "the log thread went on after the exception");
            String printed = captured.toString(StandardCharsets.UTF_8);
            assertTrue(printed.contains("handler failure for the test"), printed);
            assertTrue(LogPump.thread().isAlive());
        } finally {
            Client.setLogHandler(null);
            System.setErr(err);
        }
    }

    @Test
    void logHandlerSetFromItself() throws Exception {
        CountDownLatch called = new CountDownLatch(1);
        AtomicInteger after = new AtomicInteger();
        try {
            LogHandler[] self = new LogHandler[1];
            self[0] = (level, domain, message) -> {
                if (called.getCount() == 0) {
                    after.incrementAndGet();
                    return;
                }
                Client.setLogHandler(null); // from the log thread itself: no deadlock
                called.countDown();
            };
            Client.setLogHandler(self[0]);
            try (Client c = Client.connect(WARNS)) {
                assertTrue(c != null);
            }
            assertTrue(called.await(10, TimeUnit.SECONDS));
            try (Client c = Client.connect(WARNS)) {
                assertTrue(c != null);
            }
            Thread.sleep(500);
            assertEquals(0, after.get(), "silenced by the handler: not called again");
            // A new handler after that is delivered to again, on the same thread.
            CountDownLatch again = new CountDownLatch(1);
            Thread first = LogPump.thread();
            Client.setLogHandler((level, domain, message) -> {
                if (Thread.currentThread() == first) again.countDown();
            });
            try (Client c = Client.connect(WARNS)) {
                assertTrue(c != null);
            }
            assertTrue(again.await(10, TimeUnit.SECONDS));
        } finally {
            Client.setLogHandler(null);
        }
    }
}
