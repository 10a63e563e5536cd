/*
 * phases.c — the timed phases of bench --dedup and --attrs: ending one (its seconds,
 * server commands and the p50/p99 of its calls' latencies) and printing them all as
 * one table or one JSON object.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void finish_phase(bench_phase *p, double *lat, long calls, double t0, uint64_t c0, mq_client *client) {
    p->secs = now_mono() - t0;
    p->commands = mq_client_command_count(client) - c0;
    qsort(lat, (size_t)calls, sizeof lat[0], cmp_double);
    p->p50 = calls > 0 ? lat[calls / 2] : 0;
    p->p99 = calls > 0 ? lat[(calls * 99) / 100 < calls ? (calls * 99) / 100 : calls - 1] : 0;
}

void print_phases(const bench_opts *opt, const char *db, const char *mode, const bench_phase *ph, int n,
                  const char *note) {
    if (opt->json) {
        json_t *out = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(
                out,
                json_pack("{s:s,s:I,s:f,s:f,s:f,s:f}", "phase", ph[i].name, "events", (json_int_t)ph[i].events,
                          "events_per_s", rnd(rate(ph[i].events, ph[i].secs), 1), "p50_ms", rnd(ph[i].p50, 3), "p99_ms",
                          rnd(ph[i].p99, 3), "commands_per_event", rnd(per_event(ph[i].commands, ph[i].events), 3)));
        char *text =
            json_dumps(json_pack("{s:s,s:s,s:o}", "library", mq_version(), "mode", mode, "phases", out), JSON_COMPACT);
        printf("%s\n", text);
        free(text);
        return;
    }
    printf("libmongomq %s  database %s  %ld events, %ld groups\n\n", mq_version(), db, opt->events, opt->groups);
    printf("%-16s %10s %10s %10s %16s\n", "phase", "events/s", "p50 ms", "p99 ms", "commands/event");
    for (int i = 0; i < n; i++)
        printf("%-16s %10.0f %10.3f %10.3f %16.3f\n", ph[i].name, rate(ph[i].events, ph[i].secs), ph[i].p50, ph[i].p99,
               per_event(ph[i].commands, ph[i].events));
    printf("%s\n", note);
}
