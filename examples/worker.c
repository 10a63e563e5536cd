/* A worker to copy: claims the events of the queue shop.orders_* (producer.c publishes
 * them) and acks each one it handled. A customer's events come in publish order and
 * never to two workers at once, however many run. It waits for events without polling
 * (a claim with a timeout) and ends when none came for 2 s.
 *
 *   worker [URI [DATABASE]]       (default: mongodb://localhost:27017, "shop")
 *   cc worker.c $(pkg-config --cflags --libs mongomq) -o worker */
#include <mongomq.h>

#include <stdio.h>

int main(int argc, char **argv) {
    const char *uri = argc > 1 ? argv[1] : "mongodb://localhost:27017";
    const char *db = argc > 2 ? argv[2] : "shop";
    mq_error err;
    mq_client *client = NULL;
    mq_queue *queue = NULL;
    if (mq_client_new(uri, &client, &err) != MQ_OK || mq_queue_new(client, db, "orders", &queue, &err) != MQ_OK) {
        fprintf(stderr, "worker: %s: %s\n", mq_status_name(err.status), err.message);
        mq_client_destroy(client);
        return 1;
    }
    mq_claim_opts opts = MQ_CLAIM_OPTS_INIT;
    opts.visibility_s = 30; /* the lease: if this worker dies, the event is redelivered then */
    opts.timeout_s = 2;     /* wait up to 2 s for an event; MQ_EMPTY after that */
    mq_lease *lease;
    mq_status st;
    long handled = 0;
    while ((st = mq_claim_with(queue, &opts, &lease, &err)) == MQ_OK) {
        size_t len;
        const char *event = mq_lease_event(lease, &len);
        printf("%s: %.*s (attempt %d)\n", mq_lease_group(lease), (int)len, event, mq_lease_attempts(lease));
        /* Handle it here. On failure, mq_nack(queue, lease, 10.0, &err) retries it in 10 s. */
        st = mq_ack(queue, lease, &err); /* MQ_LEASE_LOST: it took longer than the lease */
        mq_lease_destroy(lease);
        if (st != MQ_OK) break;
        handled++;
    }
    if (st != MQ_EMPTY) fprintf(stderr, "worker: %s: %s\n", mq_status_name(st), err.message);
    printf("%ld events handled; nothing more came for %g s\n", handled, opts.timeout_s);
    mq_queue_destroy(queue);
    mq_client_destroy(client);
    return st == MQ_EMPTY ? 0 : 1;
}
