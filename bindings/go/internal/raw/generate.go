// Package raw is the SWIG-generated layer over libmongomq's C API and the few
// mqs_* shims beside it (bindings/swig/mongomq.i with bindings/swig/lang/go.i:
// raw.Mq_ack is mq_ack, out-parameters are Go pointers). It is internal: the
// public package github.com/mongomq/mongomq/bindings/go wraps it. Do not edit
// mongomq_raw.go or mongomq_raw_wrap.c by hand: change the .i files and run
// `go generate ./internal/raw`, which calls scripts/swig-generate.sh go, the one
// place SWIG code is generated (with the project's pinned SWIG);
// scripts/test-go.sh runs its --check and fails when the committed files differ
// from what SWIG makes.
//
// go vet: clean with every default check. (SWIG's own char * typemaps would emit
// swigCopyString, which turns a uintptr into an unsafe.Pointer and trips vet's
// unsafeptr check; lang/go.i replaces them so that no exception is needed.)
package raw

//go:generate bash ../../../../scripts/swig-generate.sh go
