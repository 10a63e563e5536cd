// A producer: publishes orders to the queue shop.orders (README, "Examples").
//   java -cp mongomq-0.8.0.jar Producer.java [mongodb://127.0.0.1:27017 [db]]
import java.time.Duration;
import org.mongomq.Batch;
import org.mongomq.Client;
import org.mongomq.MongoMqException;
import org.mongomq.MongoMqQueue;
import org.mongomq.PublishOptions;

public class Producer {
    public static void main(String[] args) {
        String uri = args.length > 0 ? args[0] : "mongodb://127.0.0.1:27017";
        String db = args.length > 1 ? args[1] : "shop";
        try (Client client = Client.connect(uri);
             MongoMqQueue queue = client.queue(db, "orders")) {
            // A customer's events are one group: delivered in this order, one at a time.
            PublishOptions urgent = PublishOptions.defaults().priority(2);
            for (int order = 1; order <= 4; order++) {
                String customer = order % 2 == 0 ? "customer-17" : "customer-42";
                long seq = queue.publish(customer, "{\"order\": " + order + ", \"step\": \"charge\"}", urgent);
                System.out.println("published order " + order + " for " + customer + " as seq " + seq);
            }

            // Not delivered before 2 s from now (on the queue's clock).
            PublishOptions later = PublishOptions.defaults().notBefore(queue.now().plus(Duration.ofSeconds(2)));
            long seq = queue.publish("customer-99", "{\"remind\": true}", later);
            System.out.println("scheduled a reminder as seq " + seq);

            // Many at once: 3 server commands for the whole batch.
            try (Batch batch = new Batch()) {
                for (int sku = 1; sku <= 3; sku++) batch.add("inventory", "{\"sku\": " + sku + "}");
                System.out.println("published a batch of " + batch.size() + " from seq " + queue.publish(batch));
            }
        } catch (MongoMqException e) {
            System.err.println("mongomq: " + e.statusName() + ": " + e.getMessage());
            System.exit(1);
        }
    }
}
