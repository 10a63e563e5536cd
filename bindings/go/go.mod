module github.com/mongomq/mongomq/bindings/go

go 1.21
