/* The public header compiles as strict C99 (-std=c99 -pedantic -Werror) in the same
 * translation unit as POSIX <mqueue.h>, whose mq_* names libmongomq must not take,
 * and the program links against both libmongomq and librt. No server needed. */
#define _POSIX_C_SOURCE 200809L /* so that <mqueue.h> declares all of its API */

#include <mqueue.h>

#include <mongomq.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int passed;
static int failed;

#define CHECK(cond)                                                             \
  do {                                                                          \
    if (cond) {                                                                 \
      passed++;                                                                 \
    } else {                                                                    \
      failed++;                                                                 \
      fprintf(stderr, "test_header: FAILED at line %d: %s\n", __LINE__, #cond); \
    }                                                                           \
  } while (0)

static int streq(const char *a, const char *b) { return a != NULL && b != NULL && strcmp(a, b) == 0; }

int main(void) {
    /* <mqueue.h>: its types and a call that fails harmlessly (bad descriptor). */
    mqd_t d = (mqd_t)-1;
    struct mq_attr attr;
    memset(&attr, 0, sizeof attr);
    errno = 0;
    CHECK(mq_getattr(d, &attr) == -1);
    CHECK(errno == EBADF);

    /* <mongomq.h>: types, macros and calls that need no server. */
    {
        mq_error err;
        mq_client *client = NULL;
        mq_queue *queue = NULL;
        mq_lease *lease = NULL;
        char expected[32];
        mq_status st;

        CHECK(sizeof(mq_error) == 512);
        CHECK(sizeof(err.message) == 504);

        sprintf(expected, "%d.%d.%d", MQ_VERSION_MAJOR, MQ_VERSION_MINOR, MQ_VERSION_PATCH);
        CHECK(streq(mq_version(), expected));

        CHECK(streq(mq_status_name(MQ_OK), "MQ_OK"));
        CHECK(streq(mq_status_name(MQ_EMPTY), "MQ_EMPTY"));
        CHECK(streq(mq_status_name(MQ_LEASE_LOST), "MQ_LEASE_LOST"));
        CHECK(streq(mq_status_name(MQ_ERR_ARG), "MQ_ERR_ARG"));
        CHECK(streq(mq_status_name(MQ_ERR_CONNECT), "MQ_ERR_CONNECT"));
        CHECK(streq(mq_status_name(MQ_ERR_SERVER), "MQ_ERR_SERVER"));
        CHECK(streq(mq_status_name(MQ_ERR_NOMEM), "MQ_ERR_NOMEM"));
        CHECK(streq(mq_status_name(MQ_ERR_INTERNAL), "MQ_ERR_INTERNAL"));
        CHECK(streq(mq_status_name((mq_status)42), "MQ_UNKNOWN"));

        /* NULL arguments are MQ_ERR_ARG and contact nothing. */
        memset(&err, 0, sizeof err);
        client = (mq_client *)&err; /* must be reset to NULL on failure */
        st = mq_client_new(NULL, &client, &err);
        CHECK(st == MQ_ERR_ARG);
        CHECK(client == NULL);
        CHECK(err.status == MQ_ERR_ARG);
        CHECK(err.message[0] != '\0');

        st = mq_queue_new(NULL, NULL, NULL, &queue, NULL);
        CHECK(st == MQ_ERR_ARG);
        CHECK(queue == NULL);

        /* The destroy functions accept NULL; lease getters on NULL give 0 / NULL. */
        mq_client_destroy(NULL);
        mq_queue_destroy(NULL);
        mq_lease_destroy(lease);
        CHECK(mq_lease_seq(NULL) == 0);
        CHECK(mq_lease_group(NULL) == NULL);
        CHECK(mq_lease_token(NULL) == NULL);
        CHECK(mq_lease_attempts(NULL) == 0);
    }

    printf("test_header: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
