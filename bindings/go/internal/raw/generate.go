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
package raw

//go:generate bash ../../../../scripts/swig.sh -go -cgo -intgosize 64 -package raw -outdir . -o mongomq_raw_wrap.c ../../../swig/mongomq.i
