// The public header compiles as C++ (with -pedantic -Werror) and links from C++.
#include <mongomq.h>

#include <cstdio>
#include <cstring>

int main() {
    static_assert(sizeof(mq_error) == 512, "mq_error is 512 bytes");
    mq_client *client = reinterpret_cast<mq_client *>(1);
    mq_error err;
    if (mq_client_new(nullptr, &client, &err) != MQ_ERR_ARG || client != nullptr) {
        std::puts("test_header_cxx: mq_client_new(NULL) did not fail cleanly");
        return 1;
    }
    if (std::strcmp(mq_status_name(MQ_LEASE_LOST), "MQ_LEASE_LOST") != 0) return 1;
    std::puts("test_header_cxx: 1 passed, 0 failed");
    return 0;
}
