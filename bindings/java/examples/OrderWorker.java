// A worker: handles the orders of shop.orders until the queue stays idle (README, "Examples").
//   java -cp mongomq-0.8.0.jar OrderWorker.java [mongodb://127.0.0.1:27017 [db]]
import java.time.Duration;
import org.mongomq.Client;
import org.mongomq.MongoMqException;
import org.mongomq.MongoMqQueue;
import org.mongomq.Stats;
import org.mongomq.WorkerOptions;

public class OrderWorker {
    public static void main(String[] args) {
        String uri = args.length > 0 ? args[0] : "mongodb://127.0.0.1:27017";
        String db = args.length > 1 ? args[1] : "shop";
        WorkerOptions options = WorkerOptions.defaults()
                .concurrency(4)                         // 4 threads; a group is never handled twice at once
                .visibility(Duration.ofSeconds(60))     // extended while a handler runs
                .maxAttempts(5)                         // a 5th failure sends the event to the dead letters
                .idleTimeout(Duration.ofSeconds(3))     // stop once nothing came for 3 s (unset: never)
                .handleSignals(true);                   // Ctrl-C, SIGTERM: finish what runs, then return
        try (Client client = Client.connect(uri);
             MongoMqQueue queue = client.queue(db, "orders")) {
            // Blocks until stopped. Return normally: acked; throw: retried later, with back-off.
            queue.work(options, lease -> {
                Object order = lease.json();            // also lease.text(), lease.event() (bytes)
                System.out.println("handled " + lease.group() + " seq " + lease.seq()
                        + " (attempt " + lease.attempts() + "): " + order);
            });
            Stats stats = queue.stats();
            System.out.println("stopped: messages left: " + stats.messages() + ", dead letters: " + stats.dead());
        } catch (MongoMqException e) {
            System.err.println("mongomq: " + e.statusName() + ": " + e.getMessage());
            System.exit(1);
        }
    }
}
