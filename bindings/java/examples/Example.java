import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import org.mongomq.Client;
import org.mongomq.LeaseLostException;
import org.mongomq.MongoMqException;
import org.mongomq.Lease;
import org.mongomq.Queue;
import org.mongomq.Stats;

/** The README's example: java -cp mongomq-0.4.0.jar Example.java mongodb://127.0.0.1:27017 */
public class Example {
    public static void main(String[] args) {
        String uri = args.length > 0 ? args[0] : "mongodb://127.0.0.1:27017";
        try (Client client = Client.connect(uri);
             Queue queue = client.queue("shop", "orders")) {
            byte[] order = "{\"order\":17}".getBytes(StandardCharsets.UTF_8);
            long seq = queue.publish("customer-17", order, 2);                 // priority 2
            System.out.println("published seq " + seq);

            Optional<Lease> claimed = queue.claimWait(Duration.ofSeconds(30), 0, Duration.ofSeconds(5));
            claimed.ifPresent(lease -> {
                try (lease) {
                    System.out.println("claimed " + lease.group() + " seq " + lease.seq() + " attempts "
                            + lease.attempts() + ": " + new String(lease.event(), StandardCharsets.UTF_8));
                    queue.ack(lease);                                          // or nack(lease, delay)
                }
            });

            Stats stats = queue.stats();
            System.out.println("messages left: " + stats.messages() + ", groups: " + stats.groups().total());
            queue.drop();                                                      // an example cleans up
        } catch (LeaseLostException e) {
            System.err.println("lease lost: " + e.getMessage());
            System.exit(2);
        } catch (MongoMqException e) {
            System.err.println("mongomq error " + e.status() + ": " + e.getMessage());
            System.exit(1);
        }
    }
}
