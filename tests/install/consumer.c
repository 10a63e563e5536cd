/* A program outside the project, built against an installed libmongomq (found with
 * pkg-config or with CMake's find_package): the header and the library are all it
 * needs. Runs without a server. */
#include <mongomq.h>

#include <stdio.h>
#include <string.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "consumer: FAILED: %s\n", what);
        failures++;
    }
}

int main(void) {
    char expected[32];
    mq_error err;
    mq_client *client = NULL;
    mq_status st;

    sprintf(expected, "%d.%d.%d", MQ_VERSION_MAJOR, MQ_VERSION_MINOR, MQ_VERSION_PATCH);
    check(strcmp(mq_version(), expected) == 0, "mq_version() matches the installed header");
    check(strcmp(mq_status_name(MQ_ERR_ARG), "MQ_ERR_ARG") == 0, "mq_status_name(MQ_ERR_ARG)");

    /* A malformed URI is a bad argument, found without contacting anything. */
    memset(&err, 0, sizeof err);
    st = mq_client_new("not a mongodb uri", &client, &err);
    check(st == MQ_ERR_ARG, "mq_client_new(malformed) is MQ_ERR_ARG");
    check(client == NULL, "mq_client_new(malformed) leaves *out NULL");
    check(err.status == MQ_ERR_ARG && err.message[0] != '\0', "mq_client_new(malformed) fills err");

    /* A well-formed URI opens a pool without contacting the server. */
    memset(&err, 0, sizeof err);
    st = mq_client_new("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200", &client, &err);
    if (st != MQ_OK) fprintf(stderr, "consumer: %s: %s\n", mq_status_name(st), err.message);
    check(st == MQ_OK && client != NULL, "mq_client_new(valid URI, no server) is MQ_OK");
    check(mq_client_command_count(client) == 0, "a new client has sent no command");
    mq_client_destroy(client);

    if (failures != 0) return 1;
    printf("consumer: OK (libmongomq %s)\n", mq_version());
    return 0;
}
