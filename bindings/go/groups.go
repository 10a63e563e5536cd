// groups.go: the groups for tooling (0.5.0): a page of the queue's groups with their
// state, holder and backlog (Queue.Groups over mq_groups_json, its GroupsOptions over
// mq_groups_opts, parsed into GroupsPage), and pausing and resuming one group
// (Queue.PauseGroup, Queue.ResumeGroup over mq_pause_group, mq_resume_group).

package mongomq

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/mongomq/mongomq/bindings/go/internal/raw"
)

// GroupsLimitMax is the most groups one page of Queue.Groups may hold.
const GroupsLimitMax = 1000

// GroupState is a group's state, as Queue.Groups shows it (GroupInfo.State) and
// filters on (GroupsOptions.States). Its text is the library's: "ready", "leased",
// "parked", "paused". The first three are the stats' (GroupStats); a paused group is
// only paused, whatever its lease or schedule.
type GroupState string

// The states.
const (
	GroupReady  GroupState = "ready"  // due now: the next claim may take it (new, released, retried, or a lease that ran out)
	GroupLeased GroupState = "leased" // held by a worker (a nack with a delay keeps it held)
	GroupParked GroupState = "parked" // waiting for a scheduled head
	GroupPaused GroupState = "paused" // paused (Queue.PauseGroup): no claim takes it until it is resumed
)

// flag is the state's MQ_GROUP_* bit; ok is false for a text that is no state.
func (s GroupState) flag() (bits uint, ok bool) {
	switch s {
	case GroupReady:
		return raw.MQ_GROUP_READY, true
	case GroupLeased:
		return raw.MQ_GROUP_LEASED, true
	case GroupParked:
		return raw.MQ_GROUP_PARKED, true
	case GroupPaused:
		return raw.MQ_GROUP_PAUSED, true
	}
	return 0, false
}

// GroupsSort is the order of a page of groups (GroupsOptions.Sort).
type GroupsSort int

// The orders. The zero value is GroupsSortID.
const (
	// GroupsSortID: by group id, ascending (byte order of the UTF-8).
	GroupsSortID GroupsSort = 0
	// GroupsSortDue: by when each group is due (available_at), soonest first: the
	// order claims take them (paused groups come in their place too).
	GroupsSortDue GroupsSort = 1
)

// GroupsOptions are what Queue.Groups lists. The zero value is the library's
// defaults: every group, by id, 50 a page. Every filter narrows the page (they
// combine with "and").
type GroupsOptions struct {
	// States: only groups in one of these states; nil or empty: every state. A text
	// that is no GroupState is ErrInvalidArgument.
	States []GroupState
	// IDPrefix: only groups whose id starts with it (literally: no pattern); "": all.
	IDPrefix string
	// MinAttempts: only groups whose head was delivered at least this often (2:
	// "stuck", delivered and not acked before); 0: any.
	MinAttempts int
	// HeldLongerThan: only groups whose current lease was taken more than this long
	// ago (so only held groups); 0: no filter.
	HeldLongerThan time.Duration
	// ParkedBeyond: only groups not due for more than this (leased, parked or paused
	// ones whose due time is that far ahead); 0: no filter.
	ParkedBeyond time.Duration
	// Sort: GroupsSortID (the default) or GroupsSortDue.
	Sort GroupsSort
	// After: the Next of the previous page (of the same Sort; another is
	// ErrInvalidArgument); "": the first page. Pages go by a cursor, not an offset:
	// each costs the same, and a walk visits every group once.
	After string
	// Limit: groups per page, 1..GroupsLimitMax; 0: 50.
	Limit int
}

// GroupsPage is one page of groups (Queue.Groups), parsed from mq_groups_json.
type GroupsPage struct {
	Groups []GroupInfo // in the options' order; empty, never nil, for an empty page
	// Next is the cursor of the page after this one (for GroupsOptions.After); "" on
	// the last page.
	Next string
	Now  time.Time // the queue clock the states were judged at
}

// GroupInfo is one group as Queue.Groups shows it: its lock, and its events counted.
// A value the library gives as null is the field's zero value (an instant's zero
// Time, a "" holder, a 0 head), or a false Has* for the two durations, whose zero is
// a value of its own.
type GroupInfo struct {
	Group    string
	State    GroupState // at the page's Now
	Paused   bool       // then State is GroupPaused
	Priority int        // 0..4, paused or not
	Attempts int        // deliveries of its head so far
	// AvailableAt is when it is due (queue clock): the lease's deadline while held.
	AvailableAt time.Time
	// Holder is the worker id of its lease holder (its last holder's, when the lease
	// ran out); "" when none.
	Holder string
	// HeldFor is how long the current lease has been held; HasHeldFor is false
	// unless held (and for a lease taken by harel or a library before 0.5.0, which
	// records no lease time).
	HeldFor    time.Duration
	HasHeldFor bool
	// LeaseDeadline is when the current lease runs out (queue clock); zero unless held.
	LeaseDeadline time.Time
	Backlog       int64 // events in the group
	Head          int64 // the seq of its oldest event; 0 when it has none
	// HeadAge is how long ago the head was published (zero when two machines' clocks
	// put it a little ahead); HasHeadAge is false without a head or its publish time.
	HeadAge    time.Duration
	HasHeadAge bool
}

type groupsPageJSON struct {
	Groups []struct {
		Group         string     `json:"group"`
		State         GroupState `json:"state"`
		Paused        bool       `json:"paused"`
		Priority      int        `json:"priority"`
		Attempts      int        `json:"attempts"`
		AvailableAt   *float64   `json:"available_at"`
		Holder        *string    `json:"holder"`
		HeldFor       *float64   `json:"held_for_s"`
		LeaseDeadline *float64   `json:"lease_deadline"`
		Backlog       int64      `json:"backlog"`
		Head          *int64     `json:"head"`
		HeadAge       *float64   `json:"head_age_s"`
	} `json:"groups"`
	Next *string `json:"next"`
	Now  float64 `json:"now"`
}

// ageOf is the library's seconds as a Duration: a negative age (two machines'
// clocks) is zero.
func ageOf(s *float64) (time.Duration, bool) {
	if s == nil {
		return 0, false
	}
	if *s <= 0 || math.IsNaN(*s) {
		return 0, true
	}
	if *s >= float64(math.MaxInt64)/float64(time.Second) {
		return math.MaxInt64, true
	}
	return time.Duration(*s * float64(time.Second)), true
}

// Groups returns one page of the queue's groups: each with its state, holder, lease
// age and deadline, its head's attempts, backlog and head age, filtered and ordered
// by opts; GroupsPage.Next is the cursor of the page after it. 3 server commands (1
// when the page is empty), each on an index with a limit: for tooling (the view of
// `mongomq groups` and `mongomq web`), not for every event.
func (q *Queue) Groups(opts GroupsOptions) (GroupsPage, error) {
	const op = "Groups"
	var states uint
	for i, s := range opts.States {
		bit, ok := s.flag()
		if !ok {
			return GroupsPage{}, argError(op, fmt.Sprintf("States[%d] is %q, none of ready, leased, parked, paused", i, string(s)))
		}
		states |= bit
	}
	if err := checkText(op, "IDPrefix", opts.IDPrefix); err != nil {
		return GroupsPage{}, err
	}
	if err := checkText(op, "After", opts.After); err != nil {
		return GroupsPage{}, err
	}
	if opts.MinAttempts > math.MaxInt32 {
		return GroupsPage{}, argError(op, fmt.Sprintf("MinAttempts is %d, more than %d", opts.MinAttempts, math.MaxInt32))
	}
	if opts.MinAttempts < math.MinInt32 {
		opts.MinAttempts = -1 // negative either way: the library's argument error names min_attempts
	}
	if opts.Sort < math.MinInt32 || opts.Sort > math.MaxInt32 {
		return GroupsPage{}, argError(op, fmt.Sprintf("Sort is %d: GroupsSortID or GroupsSortDue", opts.Sort))
	}
	if opts.Limit < 0 {
		return GroupsPage{}, argError(op, fmt.Sprintf("Limit is %d, outside 1..%d (0: 50)", opts.Limit, GroupsLimitMax))
	}
	var text string
	if err := q.run(op, func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) {
		// "" is no prefix and the first page (mongomq.i's shim)
		raw.Mqs_groups_json(h, states, opts.IDPrefix, opts.MinAttempts, seconds(opts.HeldLongerThan),
			seconds(opts.ParkedBeyond), int(opts.Sort), opts.After, int64(opts.Limit), &text, e)
	}); err != nil {
		return GroupsPage{}, err
	}
	return parseGroupsPage(op, text)
}

func parseGroupsPage(op, text string) (GroupsPage, error) {
	var j groupsPageJSON
	if err := json.Unmarshal([]byte(text), &j); err != nil {
		return GroupsPage{}, &Error{Op: op, Status: StatusInternal, Message: "cannot parse the library's JSON: " + err.Error()}
	}
	page := GroupsPage{Groups: make([]GroupInfo, 0, len(j.Groups)), Now: epochToTime(j.Now)}
	if j.Next != nil {
		page.Next = *j.Next
	}
	for _, r := range j.Groups {
		g := GroupInfo{
			Group:         r.Group,
			State:         r.State,
			Paused:        r.Paused,
			Priority:      r.Priority,
			Attempts:      r.Attempts,
			AvailableAt:   optTime(r.AvailableAt),
			LeaseDeadline: optTime(r.LeaseDeadline),
			Backlog:       r.Backlog,
		}
		if r.Holder != nil {
			g.Holder = *r.Holder
		}
		if r.Head != nil {
			g.Head = *r.Head
		}
		g.HeldFor, g.HasHeldFor = ageOf(r.HeldFor)
		g.HeadAge, g.HasHeadAge = ageOf(r.HeadAge)
		page.Groups = append(page.Groups, g)
	}
	return page, nil
}

// PauseGroup pauses group: no claim takes it (harel's neither) until ResumeGroup. A
// worker holding it keeps its lease until it acks, nacks or lets it run out; the
// pause outlasts the group's draining and refilling and PurgeGroup. A group without
// events can be paused ahead (its first publish finds it paused). Pausing a paused
// group changes nothing and returns nil. 2 server commands.
func (q *Queue) PauseGroup(group string) error {
	if err := checkText("PauseGroup", "group", group); err != nil {
		return err
	}
	return q.run("PauseGroup", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) { raw.Mq_pause_group(h, group, e) })
}

// ResumeGroup resumes a paused group: claimable again, at its priority, in its place
// in line. Resuming a group that is not paused changes nothing and returns nil. 2
// server commands.
func (q *Queue) ResumeGroup(group string) error {
	if err := checkText("ResumeGroup", "group", group); err != nil {
		return err
	}
	return q.run("ResumeGroup", func(h raw.Struct_SS_mq_queue, e raw.Struct_SS_mq_error) { raw.Mq_resume_group(h, group, e) })
}
