module example.com/mongomq-matrix-agent

go 1.21

require github.com/mongomq/mongomq/bindings/go v0.7.0

replace github.com/mongomq/mongomq/bindings/go => ../../../../bindings/go
