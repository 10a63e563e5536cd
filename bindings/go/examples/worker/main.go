// Command worker handles the orders of examples/producer with 4 handlers at once
// and ends once the queue has had nothing for 3 s (or on Ctrl-C or SIGTERM).
//
//	MONGOMQ_URI=mongodb://127.0.0.1:27017 go run ./examples/worker
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
)

type order struct {
	Order int    `json:"order"`
	Step  string `json:"step"`
}

func main() {
	client, err := mongomq.Connect(os.Getenv("MONGOMQ_URI"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	queue, err := client.Queue(os.Getenv("MONGOMQ_DB"), "orders")
	if err != nil {
		log.Fatal(err)
	}
	defer queue.Close()

	opts := mongomq.WorkOptions{
		Concurrency:   4,
		IdleTimeout:   3 * time.Second, // 0: run until stopped
		HandleSignals: true,            // SIGINT, SIGTERM: stop claiming, let running handlers finish
	}
	err = queue.Work(context.Background(), opts, func(ctx context.Context, lease *mongomq.Lease) error {
		var o order
		if err := lease.JSON(&o); err != nil {
			return err // an error (or a panic) nacks: redelivered after a back-off, and logged
		}
		fmt.Printf("%s: order %d %s (attempt %d)\n", lease.Group(), o.Order, o.Step, lease.Attempts())
		return nil // acks
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("idle for 3 s: stopped")
}
