/* tests/web/fill.c: fills a queue for the dashboard's browser tests (tests/web/):
 *   web_fill URI DB PREFIX BULK      every kind of group, and BULK groups bulk-NNNNN
 *   web_fill URI DB PREFIX dead N    N more dead letters (groups more-dead-K)
 * A stuck group (stuck-1: delivered 3 times, held by worker-a:1), a held group (held-1,
 * worker-b:2), both for an hour; a parked group (parked-1, due in a day); a paused
 * group (paused-1); dead letters (dead-a, dead-b, dead-c, dead-hostile); a group of
 * hostile events (hostile: <script> with a hostile attribute, invalid UTF-8, 1 MiB). Prints what it made as
 * one JSON object on stdout. Exit 1 on any failure, with the call on stderr. */
#include <mongomq.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mq_queue *queue;

static void check(mq_status st, const mq_error *err, const char *what) {
    if (st == MQ_OK) return;
    fprintf(stderr, "web_fill: %s: %s: %s\n", what, mq_status_name(st), err->message);
    exit(1);
}

static int64_t publish(const char *group, const void *event, size_t len, int priority) {
    mq_error err;
    int64_t seq;
    check(mq_publish(queue, group, event, len, priority, &seq, &err), &err, group);
    return seq;
}

/* Leases of other groups that a claim took on the way to the one wanted: held until
 * the fill is done, then given back unstarted (mq_unclaim keeps their place). */
static mq_lease *others[64];
static int nothers;

static void keep_other(mq_lease *lease) {
    if (nothers == 64) {
        fprintf(stderr, "web_fill: too many other groups at priority 4\n");
        exit(1);
    }
    others[nothers++] = lease;
}

static mq_lease *claim(const char *worker, double visibility, const char *want) {
    for (;;) {
        mq_error err;
        mq_lease *lease = NULL;
        check(mq_claim(queue, worker, visibility, 4, &lease, &err), &err, "claim");
        if (strcmp(mq_lease_group(lease), want) == 0) return lease;
        keep_other(lease);
    }
}

static void give_back_others(void) {
    for (int i = 0; i < nothers; i++) {
        mq_error err;
        check(mq_unclaim(queue, others[i], &err), &err, "unclaim");
        mq_lease_destroy(others[i]);
    }
    nothers = 0;
}

static void nack(mq_lease *lease) {
    mq_error err;
    check(mq_nack(queue, lease, 0, &err), &err, "nack");
    mq_lease_destroy(lease);
}

/* One event in `group` (priority 4), delivered once and then dead-lettered. */
static int64_t dead_letter(const char *group, const char *event) {
    mq_error err;
    int64_t seq = publish(group, event, strlen(event), 4);
    nack(claim("filler:0", 60, group));
    check(mq_queue_set_max_attempts(queue, 1, &err), &err, "max attempts");
    mq_lease *lease = NULL;
    /* The nack put the group at the front: this claim dead-letters its head. */
    mq_status st = mq_claim(queue, "filler:0", 60, 4, &lease, &err);
    if (st == MQ_OK)
        keep_other(lease);
    else if (st != MQ_EMPTY)
        check(st, &err, "claim");
    check(mq_queue_set_max_attempts(queue, 0, &err), &err, "max attempts");
    return seq;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: web_fill URI DB PREFIX BULK | web_fill URI DB PREFIX dead N\n");
        return 2;
    }
    mq_error err;
    mq_client *client;
    check(mq_client_new(argv[1], &client, &err), &err, "client");
    check(mq_queue_new(client, argv[2], argv[3], &queue, &err), &err, "queue");
    if (strcmp(argv[4], "dead") == 0 && argc == 6) {
        int n = atoi(argv[5]);
        printf("{\"dead\":[");
        for (int i = 0; i < n; i++) {
            char group[32];
            snprintf(group, sizeof group, "more-dead-%d", i);
            printf("%s%lld", i ? "," : "", (long long)dead_letter(group, "{\"more\":true}"));
        }
        printf("]}\n");
        give_back_others();
        mq_queue_destroy(queue);
        mq_client_destroy(client);
        return 0;
    }
    long bulk = atol(argv[4]);
    /* Heads at priority 4, so claims with min_priority 4 reach exactly them. */
    const char *ev = "{\"step\":\"charge\"}";
    publish("stuck-1", ev, strlen(ev), 4);
    publish("stuck-1", ev, strlen(ev), 4);
    nack(claim("worker-a:1", 60, "stuck-1"));
    nack(claim("worker-a:1", 60, "stuck-1"));
    mq_lease *stuck = claim("worker-a:1", 3600, "stuck-1");
    publish("held-1", ev, strlen(ev), 4);
    mq_lease *held = claim("worker-b:2", 3600, "held-1");
    int64_t parked_seq;
    check(mq_publish_at(queue, "parked-1", ev, strlen(ev), 3, mq_queue_now(queue) + 86400, &parked_seq, &err), &err,
          "parked");
    publish("paused-1", ev, strlen(ev), 2);
    check(mq_pause_group(queue, "paused-1", &err), &err, "pause");
    int64_t dead[4];
    dead[0] = dead_letter("dead-a", "{\"why\":\"card declined\"}");
    dead[1] = dead_letter("dead-b", "{\"why\":\"timeout\"}");
    dead[2] = dead_letter("dead-c", "{\"why\":\"no such order\"}");
    dead[3] = dead_letter("dead-hostile", "<img src=x onerror=\"window.__pwned=2\">");
    const char *script = "<script>window.__pwned=1</script>";
    /* ... with a hostile attribute (0.7.0): it must show as text too */
    const mq_event_attr html[] = {{"x-html", "<i id=\"injected\">attr</i>"}};
    mq_publish_opts with_attr = MQ_PUBLISH_OPTS_INIT;
    with_attr.priority = 1;
    with_attr.attrs = html;
    with_attr.attr_count = 1;
    int64_t h1;
    check(mq_publish_with(queue, "hostile", script, strlen(script), &with_attr, &h1, &err), &err, "hostile");
    const char bad[] = "\xff\xfe<b>bold</b>\x00\x01";
    int64_t h2 = publish("hostile", bad, sizeof bad - 1, 1);
    size_t big_len = 1024 * 1024;
    char *big = malloc(big_len);
    memset(big, 'A', big_len);
    memcpy(big, "<script>window.__pwned=3</script>", 33);
    int64_t h3 = publish("hostile", big, big_len, 1);
    free(big);
    mq_batch *batch = NULL;
    for (long i = 0; i < bulk; i++) {
        if (batch == NULL) check(mq_batch_new(&batch, &err), &err, "batch");
        char group[32], event[64];
        snprintf(group, sizeof group, "bulk-%05ld", i);
        snprintf(event, sizeof event, "{\"bulk\":%ld}", i);
        check(mq_batch_add(batch, group, event, strlen(event), 0, &err), &err, "batch add");
        if (mq_batch_count(batch) == 1000 || i == bulk - 1) {
            check(mq_publish_batch(queue, batch, NULL, &err), &err, "batch publish");
            mq_batch_destroy(batch);
            batch = NULL;
        }
    }
    printf(
        "{\"stuck_token\":\"%s\",\"held_token\":\"%s\",\"parked_seq\":%lld,\"dead\":[%lld,%lld,%lld,%lld],"
        "\"hostile\":[%lld,%lld,%lld],\"bulk\":%ld}\n",
        mq_lease_token(stuck), mq_lease_token(held), (long long)parked_seq, (long long)dead[0], (long long)dead[1],
        (long long)dead[2], (long long)dead[3], (long long)h1, (long long)h2, (long long)h3, bulk);
    give_back_others();
    mq_lease_destroy(stuck);
    mq_lease_destroy(held);
    mq_queue_destroy(queue);
    mq_client_destroy(client);
    return 0;
}
