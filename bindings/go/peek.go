// peek.go: looking without claiming (Peek, DeadList, DeadPage and their StoredEvent
// rows) and the automatic repair's settings and counts (SetRepairInterval,
// RepairCounts).

package mongomq

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// StoredEvent is one stored event as Peek and DeadList show it, without claiming
// it: an element of mq_peek_json / mq_dead_list_json (include/mongomq.h, "Looking
// without claiming").
type StoredEvent struct {
	Seq         int64
	Group       string
	Priority    int
	Attempts    int       // a dead letter's deliveries; 0 for a live event (its group's lock counts them)
	PublishedAt time.Time // queue clock
	NotBefore   time.Time // a scheduled event's due time; zero when it has none
	DeadAt      time.Time // when a dead letter died; zero for a live event
	Event       []byte    // the bytes exactly as published; empty, never nil, for an empty event
	Attrs       []Attr    // its attributes in publish order (0.7.0); nil when it has none
}

type storedEventJSON struct {
	Seq         int64           `json:"seq"`
	Group       string          `json:"group"`
	Priority    int             `json:"priority"`
	Attempts    int             `json:"attempts"`
	PublishedAt *float64        `json:"published_at"`
	NotBefore   *float64        `json:"not_before"`
	DeadAt      *float64        `json:"dead_at"`
	Event       json.RawMessage `json:"event"`
	Attrs       orderedAttrs    `json:"attrs"`
}

func optTime(s *float64) time.Time {
	if s == nil {
		return time.Time{}
	}
	return epochToTime(*s)
}

// parseStoredEvents reads the library's JSON array: "event" is the text of a text
// event (returned as its UTF-8 bytes) or {"base64": "..."} for a binary one.
func parseStoredEvents(op, text string) ([]StoredEvent, error) {
	bad := func(err error) error {
		return &Error{Op: op, Status: StatusInternal, Message: "cannot parse the library's JSON: " + err.Error()}
	}
	var items []storedEventJSON
	if err := json.Unmarshal([]byte(text), &items); err != nil {
		return nil, bad(err)
	}
	out := make([]StoredEvent, 0, len(items))
	for _, it := range items {
		ev := []byte{}
		if len(it.Event) > 0 && it.Event[0] == '"' {
			var s string
			if err := json.Unmarshal(it.Event, &s); err != nil {
				return nil, bad(err)
			}
			ev = []byte(s)
		} else if len(it.Event) > 0 && it.Event[0] == '{' {
			var b struct {
				Base64 string `json:"base64"`
			}
			if err := json.Unmarshal(it.Event, &b); err != nil {
				return nil, bad(err)
			}
			d, err := base64.StdEncoding.DecodeString(b.Base64)
			if err != nil {
				return nil, bad(err)
			}
			ev = append(ev, d...)
		}
		out = append(out, StoredEvent{
			Seq:         it.Seq,
			Group:       it.Group,
			Priority:    it.Priority,
			Attempts:    it.Attempts,
			PublishedAt: optTime(it.PublishedAt),
			NotBefore:   optTime(it.NotBefore),
			DeadAt:      optTime(it.DeadAt),
			Event:       ev,
			Attrs:       it.Attrs,
		})
	}
	return out, nil
}

func checkLimit(op string, n int) error {
	if n < 1 || n > BatchMax {
		return argError(op, fmt.Sprintf("limit must be 1..%d (got %d)", BatchMax, n))
	}
	return nil
}

// Peek returns up to limit (1..BatchMax) events of group, or of the whole queue
// when group is "", oldest (lowest seq) first, without claiming or changing
// anything: 1 server command, for tooling.
func (q *Queue) Peek(group string, limit int) ([]StoredEvent, error) {
	const op = "Peek"
	if err := checkText(op, "group", group); err != nil {
		return nil, err
	}
	if err := checkLimit(op, limit); err != nil {
		return nil, err
	}
	var text string
	if err := q.run(op, func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		raw.Mq_peek_json(h, group, int64(limit), &text, e) // "" is the whole queue (go.i)
	}); err != nil {
		return nil, err
	}
	return parseStoredEvents(op, text)
}

// DeadList returns up to limit (1..BatchMax) dead letters, oldest seq first, with
// their Attempts and DeadAt: 1 server command.
func (q *Queue) DeadList(limit int) ([]StoredEvent, error) {
	const op = "DeadList"
	if err := checkLimit(op, limit); err != nil {
		return nil, err
	}
	var text string
	if err := q.run(op, func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		raw.Mq_dead_list_json(h, int64(limit), &text, e)
	}); err != nil {
		return nil, err
	}
	return parseStoredEvents(op, text)
}

// DeadPage is a page of the dead letters (Queue.DeadPage).
type DeadPage struct {
	Letters []StoredEvent // oldest seq first; empty, never nil, past the end
	Offset  int64         // the letters skipped before this page (the call's offset)
	Total   int64         // the dead letters in all
}

// DeadPage returns up to limit (1..1000) dead letters, oldest seq first, after
// skipping offset of them, and how many there are in all: a page of a dead-letter
// view. 2 server commands (the skip walks the index: a far offset costs what it
// skips).
func (q *Queue) DeadPage(offset, limit int) (DeadPage, error) {
	const op = "DeadPage"
	if offset < 0 {
		return DeadPage{}, argError(op, fmt.Sprintf("offset is %d, negative", offset))
	}
	if limit < 1 {
		return DeadPage{}, argError(op, fmt.Sprintf("limit is %d, outside 1..1000", limit))
	}
	var text string
	if err := q.run(op, func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		raw.Mqs_dead_list_with(h, int64(limit), int64(offset), &text, e)
	}); err != nil {
		return DeadPage{}, err
	}
	var j struct {
		Letters json.RawMessage `json:"letters"`
		Offset  int64           `json:"offset"`
		Total   int64           `json:"total"`
	}
	if err := json.Unmarshal([]byte(text), &j); err != nil {
		return DeadPage{}, &Error{Op: op, Status: StatusInternal, Message: "cannot parse the library's JSON: " + err.Error()}
	}
	letters, err := parseStoredEvents(op, string(j.Letters))
	if err != nil {
		return DeadPage{}, err
	}
	return DeadPage{Letters: letters, Offset: j.Offset, Total: j.Total}, nil
}

// SetRepairInterval sets the automatic repair: a claim that finds nothing due runs
// Repair first when interval has passed since this Queue value's last automatic
// repair (the period starts at its first empty claim), and claims again if that
// made a group claimable. The default is 60 s; 0 turns it off; a negative interval
// is ErrInvalidArgument. It applies to this Queue value.
func (q *Queue) SetRepairInterval(interval time.Duration) error {
	return q.run("SetRepairInterval", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		raw.Mq_queue_set_repair_interval(h, seconds(interval), e)
	})
}

// RepairCounts are the automatic repairs a Queue value ran (Runs) and the locks
// they re-created (Fixed).
type RepairCounts struct {
	Runs  uint64
	Fixed uint64
}

// RepairCounts returns how often this Queue value's claims repaired by themselves
// (SetRepairInterval).
func (q *Queue) RepairCounts() (RepairCounts, error) {
	var rc RepairCounts
	err := q.use("RepairCounts", func(h raw.Struct_SS_mq_queue) {
		raw.Mq_queue_repair_counts(h, &rc.Runs, &rc.Fixed)
	})
	return rc, err
}
