// Package testmongo lets the tests change a queue's documents behind the
// library's back (a lock deleted, as a publisher that died between its two writes
// leaves it), through libmongoc directly. Only the tests import it.
package testmongo

/*
#cgo pkg-config: libmongoc-1.0
#include <stdlib.h>
#include <mongoc/mongoc.h>

static int tm_delete_all(const char *uri, const char *db, const char *coll, int64_t *deleted, char *msg, size_t msg_len) {
	bson_error_t error;
	mongoc_client_t *client;
	mongoc_collection_t *c;
	bson_t filter = BSON_INITIALIZER;
	bson_t reply;
	int ok;

	mongoc_init();
	client = mongoc_client_new(uri);
	if (!client) {
		snprintf(msg, msg_len, "bad uri");
		return 0;
	}
	c = mongoc_client_get_collection(client, db, coll);
	ok = mongoc_collection_delete_many(c, &filter, NULL, &reply, &error);
	if (ok) {
		bson_iter_t it;
		*deleted = 0;
		if (bson_iter_init_find(&it, &reply, "deletedCount")) *deleted = bson_iter_as_int64(&it);
	} else {
		snprintf(msg, msg_len, "%s", error.message);
	}
	bson_destroy(&reply);
	bson_destroy(&filter);
	mongoc_collection_destroy(c);
	mongoc_client_destroy(client);
	return ok;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// DeleteAll deletes every document of db.coll and returns how many it deleted.
func DeleteAll(uri, db, coll string) (int64, error) {
	cu, cd, cc := C.CString(uri), C.CString(db), C.CString(coll)
	defer C.free(unsafe.Pointer(cu))
	defer C.free(unsafe.Pointer(cd))
	defer C.free(unsafe.Pointer(cc))
	var n C.int64_t
	var msg [512]C.char
	if C.tm_delete_all(cu, cd, cc, &n, &msg[0], C.size_t(len(msg))) == 0 {
		return 0, errors.New("testmongo: " + C.GoString(&msg[0]))
	}
	return int64(n), nil
}
