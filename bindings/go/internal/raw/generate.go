// Package raw is the SWIG-generated layer over libmongomq's mqs_* shim
// (bindings/swig/mongomq.i with bindings/swig/lang/go.i). It is internal: the
// public package github.com/mongomq/mongomq/bindings/go wraps it. Do not edit
// mongomq_raw.go or mongomq_raw_wrap.c by hand: change the .i files and run
// `go generate ./internal/raw` (it runs the project's pinned SWIG through
// scripts/swig.sh); scripts/test-go.sh fails when the committed files differ
// from what SWIG makes.
//
// go vet: clean with every default check. (SWIG's own char * typemaps would emit
// swigCopyString, which turns a uintptr into an unsafe.Pointer and trips vet's
// unsafeptr check; lang/go.i replaces them so that no exception is needed.)
//
// lang/go.i in this directory stands in for bindings/swig/lang/go.i: SWIG looks for
// mongomq.i's `%include "lang/go.i"` in the current directory first, and this one
// includes the shared file and applies the same replacement to mqs_log_next's
// returned text, which the shared file does not cover yet. Once it does, delete
// this directory's lang/: the generated files do not change.
package raw

//go:generate bash ../../../../scripts/swig.sh -go -cgo -intgosize 64 -package raw -outdir . -o mongomq_raw_wrap.c ../../../swig/mongomq.i
