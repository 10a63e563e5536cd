// stats.go: Queue.Stats, the library's stats JSON parsed into Stats.

package mongomq

import (
	"encoding/json"
	"time"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// Stats is a queue's state (the keys of mq_stats_json; docs/design.md, "Stats").
type Stats struct {
	Queue    string // "db.prefix"
	Now      time.Time
	Messages int64 // events waiting or leased
	Dead     int64 // dead letters
	// Published counts the events ever published to the queue (its seq counter; a
	// requeued dead letter counts again).
	Published int64
	Groups    GroupStats
	// OldestMessageAge is the age of the oldest event; HasOldestMessage is false
	// when there is none (or it carries no publish time).
	OldestMessageAge time.Duration
	HasOldestMessage bool
	// Priorities[p] counts the groups and events of priority p (0..4).
	Priorities [PriorityMax + 1]PriorityStats
	// Partitions is the queue's number of partitions (0.8.0; Published then sums
	// every partition's counter).
	Partitions int
	// JSON is the library's text, as it was parsed.
	JSON string
}

// GroupStats counts groups (locks) by state.
type GroupStats struct {
	Ready  int64 // claimable now
	Leased int64 // held by a worker (including groups nacked with a delay)
	Parked int64 // waiting for a scheduled head
	Paused int64 // paused (Queue.PauseGroup), whatever their lease or schedule; not in Ready, Leased or Parked
	Total  int64
}

// PriorityStats counts one priority's groups and events.
type PriorityStats struct {
	Groups   int64
	Messages int64
}

type statsJSON struct {
	Queue      string  `json:"queue"`
	Now        float64 `json:"now"`
	Messages   int64   `json:"messages"`
	Dead       int64   `json:"dead"`
	Published  int64   `json:"published"`
	Partitions int     `json:"partitions"`
	Groups     struct {
		Ready  int64 `json:"ready"`
		Leased int64 `json:"leased"`
		Parked int64 `json:"parked"`
		Paused int64 `json:"paused"`
		Total  int64 `json:"total"`
	} `json:"groups"`
	OldestMessageAge *float64 `json:"oldest_message_age_s"`
	Priorities       map[string]struct {
		Groups   int64 `json:"groups"`
		Messages int64 `json:"messages"`
	} `json:"priorities"`
}

// Stats reads the queue's state: 3 server commands that read whole collections,
// for monitoring, not for every event.
func (q *Queue) Stats() (*Stats, error) {
	const op = "Stats"
	var text string
	if err := q.run(op, func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) { raw.Mq_stats_json(h, &text, e) }); err != nil {
		return nil, err
	}
	var j statsJSON
	if err := json.Unmarshal([]byte(text), &j); err != nil {
		return nil, &Error{Op: op, Status: StatusInternal, Message: "cannot parse the stats JSON: " + err.Error()}
	}
	s := &Stats{
		Queue:      j.Queue,
		Now:        epochToTime(j.Now),
		Messages:   j.Messages,
		Dead:       j.Dead,
		Published:  j.Published,
		Partitions: j.Partitions,
		Groups: GroupStats{Ready: j.Groups.Ready, Leased: j.Groups.Leased, Parked: j.Groups.Parked,
			Paused: j.Groups.Paused, Total: j.Groups.Total},
		JSON: text,
	}
	if j.OldestMessageAge != nil {
		s.HasOldestMessage = true
		s.OldestMessageAge = time.Duration(*j.OldestMessageAge * float64(time.Second))
	}
	for p := range s.Priorities {
		if v, ok := j.Priorities[string(rune('0'+p))]; ok {
			s.Priorities[p] = PriorityStats{Groups: v.Groups, Messages: v.Messages}
		}
	}
	return s, nil
}
