// The argument checks (lib/validate.hpp) on arbitrary input: utf8_valid against the
// reference decoder (validity and the offset of the first bad byte), the name checks
// (group_id, worker_id, db_name, prefix), the number checks (seconds, priority,
// epoch), and every MQ_ERR_ARG message must itself be valid UTF-8: the bindings turn
// messages into their language's strings.
#include <cmath>
#include <cstring>
#include <string>

#include "common.hpp"
#include "error.hpp"
#include "validate.hpp"

namespace {

template <typename F>
void expect_ok_or_arg(const char *what, F f) {
    try {
        f();
    } catch (const mongomq::Failure &e) {
        if (e.status != MQ_ERR_ARG) fuzz::die(what, "status " + std::to_string(e.status) + ": " + e.message);
        if (e.message.empty()) fuzz::die(what, "empty MQ_ERR_ARG message");
        if (!fuzz::ref_utf8(e.message)) fuzz::die(what, "MQ_ERR_ARG message is not valid UTF-8: " + e.message);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    // 1. utf8_valid, differential
    size_t bad_lib = 0, bad_ref = 0;
    bool lib = mongomq::utf8_valid(reinterpret_cast<const char *>(data), size, &bad_lib);
    bool ref = fuzz::ref_utf8(data, size, &bad_ref);
    if (lib != ref) fuzz::die("utf8_valid", std::string("library says ") + (lib ? "valid" : "invalid"));
    if (!lib && bad_lib != bad_ref)
        fuzz::die("utf8_valid offset", std::to_string(bad_lib) + " vs reference " + std::to_string(bad_ref));

    // 2. the name checks on the input as a C string (up to its first NUL)
    std::string s(reinterpret_cast<const char *>(data), size);
    const char *cs = s.c_str();
    expect_ok_or_arg("check_group_id", [&] { mongomq::check_group_id("mq_publish", cs); });
    expect_ok_or_arg("check_worker_id", [&] { mongomq::check_worker_id("mq_claim", cs); });
    expect_ok_or_arg("check_db_name", [&] { mongomq::check_db_name("mq_queue_new", s); });
    // prefix: split the input at its first '|' into db and prefix
    size_t bar = s.find('|');
    std::string db = bar == std::string::npos ? std::string("db") : s.substr(0, bar);
    std::string prefix = bar == std::string::npos ? s : s.substr(bar + 1);
    expect_ok_or_arg("check_prefix", [&] { mongomq::check_prefix("mq_queue_new", db, prefix); });
    // a valid group id must be accepted when short enough and NUL-free
    if (ref && size > 0 && size <= 128 && std::memchr(data, 0, size) == nullptr) {
        try {
            mongomq::check_group_id("mq_publish", cs);
        } catch (const mongomq::Failure &e) {
            fuzz::die("check_group_id refused a valid id", e.message);
        }
    }

    // 3. numbers from the first bytes
    if (size >= sizeof(double)) {
        double d;
        std::memcpy(&d, data, sizeof d);
        bool accepted = true;
        try {
            mongomq::check_seconds("mq_claim", "visibility_s", d, false);
        } catch (const mongomq::Failure &e) {
            accepted = false;
            expect_ok_or_arg("check_seconds", [&] { throw e; });
        }
        if (accepted && !(std::isfinite(d) && d > 0)) fuzz::die("check_seconds accepted", std::to_string(d));
        expect_ok_or_arg("check_seconds zero ok", [&] { mongomq::check_seconds("mq_nack", "delay_s", d, true); });
        expect_ok_or_arg("check_epoch", [&] { mongomq::check_epoch("mq_publish_at", "not_before", d); });
    }
    if (size >= sizeof(int)) {
        int p;
        std::memcpy(&p, data, sizeof p);
        bool accepted = true;
        try {
            mongomq::check_priority("mq_publish", "priority", p);
        } catch (const mongomq::Failure &) {
            accepted = false;
        }
        if (accepted != (p >= 0 && p <= 4)) fuzz::die("check_priority", std::to_string(p));
        expect_ok_or_arg("check_priority", [&] { mongomq::check_priority("mq_publish", "priority", p); });
    }
    return 0;
}
