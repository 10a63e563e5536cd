// Groups for tooling (docs/design.md, "Listing groups", "Pausing a group"): a page of
// the queue's groups with their state, holder and backlog (mq_groups_json), and
// pausing and resuming one group (mq_pause_group, mq_resume_group). A paused lock keeps
// its priority p as -1 - p: the claim's filter (priority $in [floor..4]) and harel's
// ($gte: floor) both skip it, at no cost to the claim index.
#include <jansson.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "error.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "json.hpp"
#include "locks.hpp"
#include "mongomq.h"
#include "store.hpp"
#include "validate.hpp"

using mongomq::fail_arg;
using mongomq::guard_queue;
using mongomq::null_out;

namespace mongomq {
namespace {

constexpr unsigned kAllStates = MQ_GROUP_READY | MQ_GROUP_LEASED | MQ_GROUP_PARKED | MQ_GROUP_PAUSED;
constexpr size_t kDefaultLimit = 50;
constexpr size_t kMaxLimit = 1000;

// ---- the page's cursor ("next", read back as opts.after) ----
// By id: "id:" + the last group id. By due: "due:<available_at>:<k>", k = rows of the
// pages so far whose available_at equals it (the next page skips them: ties in the
// line are common, e.g. every group of one batch publish).
struct Cursor {
    bool any = false;
    std::string id;
    double due = 0;
    int64_t skip = 0;
};

Cursor parse_cursor(const char *fn, const char *after, int sort) {
    Cursor cur;
    if (after == nullptr || after[0] == '\0') return cur;
    const std::string text(after);
    cur.any = true;
    if (sort == MQ_GROUPS_SORT_ID) {
        if (text.compare(0, 3, "id:") != 0) fail_arg(fn, "after is not a cursor of the sort by id: \"" + text + "\"");
        cur.id = text.substr(3);
        return cur;
    }
    char *end = nullptr;
    if (text.compare(0, 4, "due:") != 0) fail_arg(fn, "after is not a cursor of the sort by due: \"" + text + "\"");
    cur.due = std::strtod(text.c_str() + 4, &end);
    if (end == nullptr || *end != ':' || !std::isfinite(cur.due))
        fail_arg(fn, "after is not a cursor of the sort by due: \"" + text + "\"");
    char *end2 = nullptr;
    long long k = std::strtoll(end + 1, &end2, 10);
    if (end2 == end + 1 || *end2 != '\0' || k < 0)
        fail_arg(fn, "after is not a cursor of the sort by due: \"" + text + "\"");
    cur.skip = k;
    return cur;
}

// "^" + the prefix with every ASCII character but letters and digits escaped: a
// literal in PCRE and Java regexes alike, and an anchored case-sensitive prefix, which
// MongoDB turns into index bounds on _id.
std::string prefix_regex(const std::string &prefix) {
    std::string re = "^";
    for (unsigned char ch : prefix) {
        bool alnum = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
        if (ch < 0x80 && !alnum) re += '\\';
        re += static_cast<char>(ch);
    }
    return re;
}

// ---- the filter ----

// Appends one condition document to the $and array `list` (key i).
void and_add(bson_t *list, uint32_t *i, const bson_t *cond) {
    char key[16];
    const char *k;
    bson_uint32_to_string((*i)++, &k, key, sizeof key);
    BSON_APPEND_DOCUMENT(list, k, cond);
}

// One state's predicate. "Not paused" is priority not < 0: a lock without a priority
// (not ours) counts as not paused.
BsonPtr state_filter(unsigned state, double now) {
    const char *tok = "token";
    switch (state) {
        case MQ_GROUP_READY:
            return own(BCON_NEW("priority", "{", "$not", "{", "$lt", BCON_INT32(0), "}", "}",  //
                                "available_at", "{", "$lte", BCON_DOUBLE(now), "}"));
        case MQ_GROUP_LEASED:
            return own(BCON_NEW("priority", "{", "$not", "{", "$lt", BCON_INT32(0), "}", "}",  //
                                "available_at", "{", "$gt", BCON_DOUBLE(now), "}", tok, "{", "$ne", BCON_NULL, "}"));
        case MQ_GROUP_PARKED:
            return own(BCON_NEW("priority", "{", "$not", "{", "$lt", BCON_INT32(0), "}", "}",  //
                                "available_at", "{", "$gt", BCON_DOUBLE(now), "}", tok, BCON_NULL));
        default:
            return own(BCON_NEW("priority", "{", "$lt", BCON_INT32(0), "}"));
    }
}

BsonPtr page_filter(const std::string &prefix, const mq_groups_opts &o, const Cursor &cur, double now) {
    Bson filter;
    bson_t list;
    uint32_t n = 0;
    BSON_APPEND_ARRAY_BEGIN(filter.get(), "$and", &list);
    // The prefix and the cursor as two clauses of the $and, not two operators of one
    // _id document: MongoDB reads both the same (one index range), but the test server
    // drops the $gt beside a $regex, which repeated the first page forever.
    if (!prefix.empty()) {
        BsonPtr id = own(BCON_NEW("_id", "{", "$regex", BCON_UTF8(prefix_regex(prefix).c_str()), "}"));
        and_add(&list, &n, id.get());
    }
    if (cur.any && o.sort == MQ_GROUPS_SORT_ID) {
        BsonPtr id = own(BCON_NEW("_id", "{", "$gt", BCON_UTF8(cur.id.c_str()), "}"));
        and_add(&list, &n, id.get());
    }
    if (o.sort == MQ_GROUPS_SORT_DUE) {
        // Every priority a lock of ours has, paused ones included (-5..-1): with an $in
        // on its first field the claim index {priority: 1, available_at: 1} gives the
        // sort on available_at as a merge of ten short scans (SORT_MERGE), limit
        // included; a lock without a priority (not ours) is not in this order.
        Bson in;
        bson_t pin, plist;
        BSON_APPEND_DOCUMENT_BEGIN(in.get(), "priority", &pin);
        BSON_APPEND_ARRAY_BEGIN(&pin, "$in", &plist);
        uint32_t k = 0;
        for (int p = -1 - MQ_PRIORITY_MAX; p <= MQ_PRIORITY_MAX; p++) {
            char key[16];
            const char *kk;
            bson_uint32_to_string(k++, &kk, key, sizeof key);
            BSON_APPEND_INT32(&plist, kk, p);
        }
        bson_append_array_end(&pin, &plist);
        bson_append_document_end(in.get(), &pin);
        and_add(&list, &n, in.get());
        if (cur.any) {
            BsonPtr from = own(BCON_NEW("available_at", "{", "$gte", BCON_DOUBLE(cur.due), "}"));
            and_add(&list, &n, from.get());
        }
    }
    const unsigned states = o.states == 0 ? kAllStates : o.states;
    if (states != kAllStates) {
        Bson any;
        bson_t alts;
        uint32_t m = 0;
        BSON_APPEND_ARRAY_BEGIN(any.get(), "$or", &alts);
        for (unsigned s : {MQ_GROUP_READY, MQ_GROUP_LEASED, MQ_GROUP_PARKED, MQ_GROUP_PAUSED})
            if (states & s) and_add(&alts, &m, state_filter(s, now).get());
        bson_append_array_end(any.get(), &alts);
        and_add(&list, &n, any.get());
    }
    if (o.min_attempts > 0) {
        BsonPtr c = own(BCON_NEW("attempts", "{", "$gte", BCON_INT32(o.min_attempts), "}"));
        and_add(&list, &n, c.get());
    }
    if (o.held_longer_than_s > 0) {
        BsonPtr c = own(BCON_NEW("token", "{", "$ne", BCON_NULL, "}", "available_at", "{", "$gt", BCON_DOUBLE(now), "}",
                                 "leased_at", "{", "$lte", BCON_DOUBLE(now - o.held_longer_than_s), "}"));
        and_add(&list, &n, c.get());
    }
    if (o.parked_beyond_s > 0) {
        BsonPtr c = own(BCON_NEW("available_at", "{", "$gt", BCON_DOUBLE(now + o.parked_beyond_s), "}"));
        and_add(&list, &n, c.get());
    }
    bson_append_array_end(filter.get(), &list);
    if (n == 0) return own(bson_new());
    return bson_copy_of(filter.get());
}

// ---- the rows ----

// The worker id in a token "{worker_id}:{32 hex}" (worker ids may hold ':' themselves,
// host:pid); a token of another shape (harel's) is shown whole.
std::string holder_of(const std::string &token) {
    size_t colon = token.rfind(':');
    if (colon == std::string::npos || token.size() - colon - 1 != 32) return token;
    for (size_t i = colon + 1; i < token.size(); i++)
        if (!std::isxdigit(static_cast<unsigned char>(token[i]))) return token;
    return token.substr(0, colon);
}

bool utf8_of(const bson_t *doc, const char *field, std::string *out) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_UTF8(&it)) return false;
    uint32_t len;
    const char *s = bson_iter_utf8(&it, &len);
    if (!utf8_valid(s, len)) return false;
    out->assign(s, len);
    return true;
}

bool number_of(const bson_t *doc, const char *field, double *out) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_NUMBER(&it)) return false;
    *out = bson_iter_as_double(&it);
    return std::isfinite(*out);
}

json_t *real_or_null(bool known, double v) { return known ? json_real(v) : json_null(); }

struct Backlog {
    int64_t events = 0;
    int64_t head = 0;
    bool head_known = false;
    double published_at = 0;
};

// groups.backlog: events and head per group of the page, an aggregate whose $match
// and $group need only {group_id, _id} (a covered IXSCAN of the head index); then
// groups.heads: the heads' publish times (a find on _id $in). Skipped when nothing to
// look up.
std::map<std::string, Backlog> backlogs(const Conn &c, const std::vector<std::string> &ids) {
    std::map<std::string, Backlog> out;
    if (ids.empty()) return out;
    Bson pipeline;
    bson_t stages, match, group, in, list;
    BSON_APPEND_ARRAY_BEGIN(pipeline.get(), "pipeline", &stages);
    BSON_APPEND_DOCUMENT_BEGIN(&stages, "0", &match);
    bson_t m;
    BSON_APPEND_DOCUMENT_BEGIN(&match, "$match", &m);
    BSON_APPEND_DOCUMENT_BEGIN(&m, "group_id", &in);
    BSON_APPEND_ARRAY_BEGIN(&in, "$in", &list);
    for (size_t i = 0; i < ids.size(); i++) {
        char key[16];
        const char *k;
        bson_uint32_to_string(static_cast<uint32_t>(i), &k, key, sizeof key);
        BSON_APPEND_UTF8(&list, k, ids[i].c_str());
    }
    bson_append_array_end(&in, &list);
    bson_append_document_end(&m, &in);
    bson_append_document_end(&match, &m);
    bson_append_document_end(&stages, &match);
    BSON_APPEND_DOCUMENT_BEGIN(&stages, "1", &group);
    BsonPtr g = own(BCON_NEW("_id", BCON_UTF8("$group_id"), "n", "{", "$sum", BCON_INT32(1), "}",  //
                             "head", "{", "$min", BCON_UTF8("$_id"), "}"));
    BSON_APPEND_DOCUMENT(&group, "$group", g.get());
    bson_append_document_end(&stages, &group);
    bson_append_array_end(pipeline.get(), &stages);

    Bson heads;
    bson_t hin, hlist;
    BSON_APPEND_DOCUMENT_BEGIN(heads.get(), "_id", &hin);
    BSON_APPEND_ARRAY_BEGIN(&hin, "$in", &hlist);
    uint32_t nheads = 0;
    std::map<int64_t, std::string> group_of_head;
    for (const BsonPtr &doc : aggregate("groups.backlog", c.messages(), pipeline.get())) {
        std::string id;
        if (!utf8_of(doc.get(), "_id", &id)) continue;
        Backlog &b = out[id];
        b.events = get_int64_or(doc.get(), "n", 0);
        bson_iter_t it;
        if (bson_iter_init_find(&it, doc.get(), "head") && BSON_ITER_HOLDS_NUMBER(&it)) {
            b.head = bson_iter_as_int64(&it);
            b.head_known = true;
            group_of_head[b.head] = id;
            char key[16];
            const char *k;
            bson_uint32_to_string(nheads++, &k, key, sizeof key);
            BSON_APPEND_INT64(&hlist, k, b.head);
        }
    }
    bson_append_array_end(&hin, &hlist);
    bson_append_document_end(heads.get(), &hin);
    if (nheads == 0) return out;
    BsonPtr opts = own(BCON_NEW("projection", "{", "published_at", BCON_INT32(1), "}"));
    for (const BsonPtr &doc : find("groups.heads", c.messages(), heads.get(), opts.get())) {
        auto at = group_of_head.find(get_int64_or(doc.get(), "_id", 0));
        double published_at;
        if (at != group_of_head.end() && number_of(doc.get(), "published_at", &published_at))
            out[at->second].published_at = published_at;
    }
    return out;
}

json_t *row_json(const bson_t *lock, const std::string &id, double now, const std::map<std::string, Backlog> &bl) {
    Json row = json_owned(json_object());
    json_put(row.get(), "group", json_stringn(id.data(), id.size()));
    int raw = get_int_or(lock, "priority", 0);
    const bool paused = raw < 0;
    double available_at = 0;
    const bool due_known = number_of(lock, "available_at", &available_at);
    std::string token;
    const bool has_token = utf8_of(lock, "token", &token);
    const bool due = !due_known || available_at <= now;
    const bool held = has_token && !due;
    const char *state = paused ? "paused" : due ? "ready" : held ? "leased" : "parked";
    json_put(row.get(), "state", json_string(state));
    json_put(row.get(), "paused", json_boolean(paused));
    json_put(row.get(), "priority", json_integer(paused ? -1 - raw : raw));
    json_put(row.get(), "attempts", json_integer(get_int_or(lock, "attempts", 0)));
    json_put(row.get(), "available_at", real_or_null(due_known, available_at));
    json_put(row.get(), "holder", has_token ? json_string(holder_of(token).c_str()) : json_null());
    double leased_at = 0;
    const bool lease_known = held && number_of(lock, "leased_at", &leased_at);
    json_put(row.get(), "held_for_s", real_or_null(lease_known, now - leased_at));
    json_put(row.get(), "lease_deadline", real_or_null(held, available_at));
    auto b = bl.find(id);
    const bool any = b != bl.end();
    json_put(row.get(), "backlog", json_integer(any ? b->second.events : 0));
    json_put(row.get(), "head", any && b->second.head_known ? json_integer(b->second.head) : json_null());
    const bool head_dated = any && b->second.published_at > 0;
    json_put(row.get(), "head_age_s", real_or_null(head_dated, head_dated ? now - b->second.published_at : 0));
    return row.release();
}

void check_groups_opts(const char *fn, const mq_groups_opts &o) {
    if ((o.states & ~kAllStates) != 0) fail_arg(fn, "states has bits that are no MQ_GROUP_* state");
    if (o.id_prefix != nullptr && !utf8_valid(o.id_prefix, std::strlen(o.id_prefix)))
        fail_arg(fn, "id_prefix is not valid UTF-8");
    if (o.min_attempts < 0) fail_arg(fn, "min_attempts is negative");
    if (!(o.held_longer_than_s >= 0) || !std::isfinite(o.held_longer_than_s))
        fail_arg(fn, "held_longer_than_s must be a finite number >= 0");
    if (!(o.parked_beyond_s >= 0) || !std::isfinite(o.parked_beyond_s))
        fail_arg(fn, "parked_beyond_s must be a finite number >= 0");
    if (o.sort != MQ_GROUPS_SORT_ID && o.sort != MQ_GROUPS_SORT_DUE)
        fail_arg(fn, "sort is " + std::to_string(o.sort) + ": MQ_GROUPS_SORT_ID or MQ_GROUPS_SORT_DUE");
    if (o.limit > kMaxLimit) fail_arg(fn, "limit is " + std::to_string(o.limit) + ", more than 1000");
}

// groups.page: one find on locks, sorted by _id (the _id index, the prefix and the
// cursor as its bounds) or by available_at, limit + 1 (the extra row says whether a
// next page exists); then the page's backlogs.
char *groups_json(mq_queue *q, const mq_groups_opts &o, const char *fn) {
    const Cursor cur = parse_cursor(fn, o.after, o.sort);
    const size_t limit = o.limit == 0 ? kDefaultLimit : o.limit;
    const std::string prefix = o.id_prefix != nullptr ? o.id_prefix : "";
    Conn c(q);
    const double now = q->now();
    BsonPtr filter = page_filter(prefix, o, cur, now);
    BsonPtr opts = o.sort == MQ_GROUPS_SORT_ID
                       ? own(BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "limit",
                                      BCON_INT64(static_cast<int64_t>(limit + 1))))
                       : own(BCON_NEW("sort", "{", "available_at", BCON_INT32(1), "}", "skip", BCON_INT64(cur.skip),
                                      "limit", BCON_INT64(static_cast<int64_t>(limit + 1))));
    std::vector<BsonPtr> locks = find("groups.page", c.locks(), filter.get(), opts.get());
    const bool more = locks.size() > limit;
    if (more) locks.resize(limit);

    std::vector<std::string> ids;
    std::vector<size_t> rows;  // the locks shown, by index
    for (size_t i = 0; i < locks.size(); i++) {
        std::string id;
        if (!utf8_of(locks[i].get(), "_id", &id)) continue;  // not a group of ours: not shown
        ids.push_back(id);
        rows.push_back(i);
    }
    std::map<std::string, Backlog> bl = backlogs(c, ids);

    Json root = json_owned(json_object());
    json_t *arr = json_array();
    json_put(root.get(), "groups", arr);
    for (size_t i = 0; i < rows.size(); i++)
        if (json_array_append_new(arr, row_json(locks[rows[i]].get(), ids[i], now, bl)) != 0) throw std::bad_alloc();
    json_put(root.get(), "now", json_real(now));
    if (!more || locks.empty()) {
        json_put(root.get(), "next", json_null());
    } else if (o.sort == MQ_GROUPS_SORT_ID) {
        std::string last;
        if (!utf8_of(locks.back().get(), "_id", &last)) last = ids.empty() ? "" : ids.back();
        json_put(root.get(), "next", json_string(("id:" + last).c_str()));
    } else {
        double last = get_double_or(locks.back().get(), "available_at", 0);
        int64_t ties = 0;
        for (auto it = locks.rbegin(); it != locks.rend() && get_double_or(it->get(), "available_at", 0) == last; ++it)
            ties++;
        if (ties == static_cast<int64_t>(locks.size()) && cur.any && cur.due == last) ties += cur.skip;
        char text[64];
        std::snprintf(text, sizeof text, "due:%.17g:%lld", last, static_cast<long long>(ties));
        json_put(root.get(), "next", json_string(text));
    }
    return json_text(root.get(), JSON_COMPACT | JSON_SORT_KEYS, fn);
}

// ---- pause and resume ----

// <verb>.read (the lock's priority), then <verb>.set: {_id: G, priority: p} ->
// {priority: -1 - p}, fenced on the priority it read, so a lock that changed meanwhile
// (drained and made again) is read again. An outcome-unknown failure of the set is
// settled by reading again: the pause is either there or not. Pausing a group without
// a lock makes one (<verb>.lock, a $setOnInsert upsert: a publish racing it keeps its
// own lock, and the loop pauses that).
void set_paused(mq_queue *q, const std::string &group, bool pause) {
    const char *read_name = pause ? "pause.read" : "resume.read";
    const char *set_name = pause ? "pause.set" : "resume.set";
    Conn c(q);
    BsonPtr by_id = lock_filter(q, group);
    BsonPtr one = own(BCON_NEW("limit", BCON_INT64(1), "projection", "{", "priority", BCON_INT32(1), "}"));
    for (int tries = 0; tries < 8; tries++) {
        std::vector<BsonPtr> lock = retry_connect([&] { return find(read_name, c.locks(), by_id.get(), one.get()); });
        if (lock.empty()) {
            if (!pause) return;
            const double now = q->now();
            BsonPtr make =
                own(BCON_NEW("$setOnInsert", "{", "available_at", BCON_DOUBLE(now), "token", BCON_NULL, "priority",
                             BCON_INT32(-1), "attempts", BCON_INT32(0), "paused_at", BCON_DOUBLE(now), "}"));
            retry_connect([&] {
                return retry_duplicate_key(
                    [&] { return update_one("pause.lock", c.locks(), by_id.get(), make.get(), true); });
            });
            continue;  // read what is there now: ours, or a publish's lock to pause
        }
        const int p = get_int_or(lock[0].get(), "priority", 0);
        if ((p < 0) == pause) return;
        BsonPtr fence = lock_filter(q, group);
        BSON_APPEND_INT32(fence.get(), "priority", p);
        BsonPtr set =
            pause ? own(BCON_NEW("$set", "{", "priority", BCON_INT32(-1 - p), "paused_at", BCON_DOUBLE(q->now()), "}"))
                  : own(BCON_NEW("$set", "{", "priority", BCON_INT32(-1 - p), "}", "$unset", "{", "paused_at",
                                 BCON_UTF8(""), "}"));
        try {
            if (update_one(set_name, c.locks(), fence.get(), set.get(), false) > 0) return;
        } catch (const Failure &f) {
            if (!outcome_unknown(f)) throw;
        }
    }
    fail(MQ_ERR_SERVER, std::string(pause ? "mq_pause_group" : "mq_resume_group") + ": the lock of group \"" + group +
                            "\" kept changing under 8 tries");
}

}  // namespace
}  // namespace mongomq

extern "C" {

mq_status mq_groups_opts_init(mq_groups_opts *opts, unsigned int version) {
    if (opts == nullptr || version != MQ_GROUPS_OPTS_VERSION) return MQ_ERR_ARG;
    const mq_groups_opts defaults = MQ_GROUPS_OPTS_INIT;
    *opts = defaults;
    return MQ_OK;
}

mq_status mq_groups_json(mq_queue *queue, const mq_groups_opts *opts, char **json_out, mq_error *err) {
    null_out(json_out);
    return guard_queue(err, queue, [&] {
        const char *fn = "mq_groups_json";
        mongomq::check_queue(fn, queue);
        mq_groups_opts o = MQ_GROUPS_OPTS_INIT;
        if (opts != nullptr) {
            if (opts->version != MQ_GROUPS_OPTS_VERSION)
                fail_arg(fn, mongomq::unknown_version(opts->version, MQ_GROUPS_OPTS_VERSION));
            o = *opts;
        }
        mongomq::check_groups_opts(fn, o);
        if (json_out == nullptr) fail_arg(fn, "json_out is NULL");
        *json_out = mongomq::groups_json(queue, o, fn);
        return MQ_OK;
    });
}

mq_status mq_pause_group(mq_queue *queue, const char *group_id, mq_error *err) {
    return guard_queue(err, queue, [&] {
        mongomq::check_queue("mq_pause_group", queue);
        mongomq::check_group_id("mq_pause_group", group_id);
        mongomq::set_paused(queue, group_id, true);
        return MQ_OK;
    });
}

mq_status mq_resume_group(mq_queue *queue, const char *group_id, mq_error *err) {
    return guard_queue(err, queue, [&] {
        mongomq::check_queue("mq_resume_group", queue);
        mongomq::check_group_id("mq_resume_group", group_id);
        mongomq::set_paused(queue, group_id, false);
        return MQ_OK;
    });
}

}  // extern "C"
