/* The fault hook of the lost-reply suites (test_lost_replies.c, test_lost_dedup.c):
 * up to four rules, each "the nth..mth call of a command gets code", installed
 * through lib/fault.hpp's hook, and the three ways a write's outcome becomes unknown
 * that each suite runs under. */
#ifndef MONGOMQ_FAULT_RULES_H
#define MONGOMQ_FAULT_RULES_H

#include <stddef.h>

#include "support.h"

/* The fault every "outcome unknown" test injects: a suite runs three times
 * (fault_rules_run_modes), once per way a write's outcome becomes unknown: a lost
 * reply, a server error after the write was applied (a primary stepping down:
 * NotWritablePrimary), and an error the library would not know by its code but for
 * its RetryableWriteError label. The library must do the same for all three. */
extern int g_unknown;

/* Calls first .. first + times - 1 (1-based) of `command` get `code` (g_unknown,
 * MONGOMQ_FAULT_CONNECT, a server code, or 0 to count calls only). */
void add_rule(const char *command, int code, int first, int times);
int rule_calls(const char *command); /* calls of `command` seen by its rule */
void no_faults(void);
int teardown(void **state); /* no_faults, then tq_teardown */

/* Runs the tests once per mode, the group named "<prefix><mode>"; returns the failures. */
/* p1_only: as tq_run_tests (tests/support.h), the tests left out with more than one
 * partition. */
int fault_rules_run_modes(const char *prefix, const struct CMUnitTest *tests, size_t count, const char *const *p1_only);

#endif
