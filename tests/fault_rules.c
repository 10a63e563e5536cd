/* The fault hook of the lost-reply suites: see fault_rules.h. */
#include "fault_rules.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fault.hpp"

int g_unknown = MONGOMQ_FAULT_LOSE_REPLY;

typedef struct {
    const char *command;
    int code;  /* g_unknown, MONGOMQ_FAULT_CONNECT, or a server code */
    int first; /* the first call (1-based) that gets it */
    int times; /* how many calls from there on */
    int calls; /* calls of `command` seen */
} rule;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static rule g_rules[4];
static int g_nrules;

static int hook(const char *command, void *ctx) {
    (void)ctx;
    int code = 0;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nrules; i++) {
        rule *r = &g_rules[i];
        if (strcmp(command, r->command) != 0) continue;
        r->calls++;
        if (r->calls >= r->first && r->calls < r->first + r->times) code = r->code;
    }
    pthread_mutex_unlock(&g_mu);
    return code;
}

void add_rule(const char *command, int code, int first, int times) {
    pthread_mutex_lock(&g_mu);
    assert_true(g_nrules < 4);
    g_rules[g_nrules++] = (rule){command, code, first, times, 0};
    pthread_mutex_unlock(&g_mu);
    mongomq_fault_set(hook, NULL);
}

int rule_calls(const char *command) {
    int n = 0;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nrules; i++)
        if (strcmp(g_rules[i].command, command) == 0) n = g_rules[i].calls;
    pthread_mutex_unlock(&g_mu);
    return n;
}

void no_faults(void) {
    mongomq_fault_set(NULL, NULL);
    pthread_mutex_lock(&g_mu);
    g_nrules = 0;
    pthread_mutex_unlock(&g_mu);
}

int teardown(void **state) {
    no_faults();
    return tq_teardown(state);
}

int fault_rules_run_modes(const char *prefix, const struct CMUnitTest *tests, size_t count,
                          const char *const *p1_only) {
    static const struct {
        const char *name;
        int code;
    } modes[] = {
        {"lost_replies", MONGOMQ_FAULT_LOSE_REPLY},
        {"applied_then_not_writable_primary", MONGOMQ_FAULT_APPLIED_ERROR(10107)},
        {"applied_then_retryable_label", MONGOMQ_FAULT_APPLIED_LABELLED(96)},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix, modes[i].name);
        g_unknown = modes[i].code;
        failed += tq_run_tests(name, tests, count, p1_only);
    }
    return failed;
}
