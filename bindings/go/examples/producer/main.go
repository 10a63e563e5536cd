// Command producer publishes three orders, each customer's a group of its own,
// and schedules a fourth for a second later; examples/worker handles them.
//
//	MONGOMQ_URI=mongodb://127.0.0.1:27017 go run ./examples/producer
package main

import (
	"fmt"
	"log"
	"os"
	"time"

	mongomq "github.com/mongomq/mongomq/bindings/go"
)

func main() {
	client, err := mongomq.Connect(os.Getenv("MONGOMQ_URI"))
	if err != nil {
		log.Fatal(err) // a malformed URI: errors.Is(err, mongomq.ErrInvalidArgument)
	}
	defer client.Close()
	queue, err := client.Queue(os.Getenv("MONGOMQ_DB"), "orders") // "" is the database "mongomq"
	if err != nil {
		log.Fatal(err) // an unreachable server: errors.Is(err, mongomq.ErrConnect)
	}
	defer queue.Close()

	// A group's events are delivered in publish order, one at a time.
	for i := 1; i <= 3; i++ {
		event := fmt.Sprintf(`{"order":%d,"step":"charge"}`, i)
		seq, err := queue.Publish(fmt.Sprintf("customer-%d", i), []byte(event), mongomq.PublishOptions{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("published seq %d: %s\n", seq, event)
	}
	// Options: a priority (0..4, for a group this publish creates) and a due time.
	later := mongomq.PublishOptions{Priority: 2, NotBefore: time.Now().Add(time.Second)}
	seq, err := queue.Publish("customer-1", []byte(`{"order":1,"step":"ship"}`), later)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("published seq %d: due in a second, after customer-1's charge\n", seq)
}
