/* A producer to copy: publishes six order events to the queue shop.orders_*, one group
 * per customer, so that each customer's events are handled one at a time and in the
 * order they were published (worker.c handles them).
 *
 *   producer [URI [DATABASE]]     (default: mongodb://localhost:27017, "shop")
 *   cc producer.c $(pkg-config --cflags --libs mongomq) -o producer */
#include <mongomq.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *uri = argc > 1 ? argv[1] : "mongodb://localhost:27017";
    const char *db = argc > 2 ? argv[2] : "shop";
    mq_error err;
    mq_client *client = NULL;
    mq_queue *queue = NULL;
    if (mq_client_new(uri, &client, &err) != MQ_OK || mq_queue_new(client, db, "orders", &queue, &err) != MQ_OK) {
        fprintf(stderr, "producer: %s: %s\n", mq_status_name(err.status), err.message);
        mq_client_destroy(client);
        return 1;
    }
    mq_publish_opts opts = MQ_PUBLISH_OPTS_INIT; /* priority 0, deliver now */
    int rc = 0;
    for (int i = 0; i < 6 && rc == 0; i++) {
        char group[32], event[64];
        snprintf(group, sizeof group, "customer-%d", i % 3);        /* the group: one FIFO each */
        snprintf(event, sizeof event, "{\"order\": %d}", 1000 + i); /* any bytes; here JSON */
        int64_t seq;
        if (mq_publish_with(queue, group, event, strlen(event), &opts, &seq, &err) != MQ_OK) {
            fprintf(stderr, "producer: %s: %s\n", mq_status_name(err.status), err.message);
            rc = 1; /* MQ_ERR_CONNECT: it may be in the queue; publishing again may add it twice */
        } else {
            printf("published %s to %s (seq %lld)\n", event, group, (long long)seq);
        }
    }
    mq_queue_destroy(queue);
    mq_client_destroy(client);
    return rc;
}
