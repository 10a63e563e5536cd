// groups_test.go: the Groups (0.5.0) scenarios of TestContract (pause_resume and
// group_listing, registered in contract_test.go) and TestGroupsExtras (the parsing of
// a row, a paging walk over more groups than a page).

package mongomq

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// wantArgError fails unless err is ErrInvalidArgument (an *Error with
// StatusInvalidArgument) whose message names name.
func wantArgError(t *testing.T, what string, err error, name string) {
	t.Helper()
	var e *Error
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || e.Status != StatusInvalidArgument {
		t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
		return
	}
	if !strings.Contains(e.Message, name) {
		t.Errorf("%s: %q does not name %q", what, e.Message, name)
	}
}

func pauseGroup(t *testing.T, q *Queue, group string) {
	t.Helper()
	if err := q.PauseGroup(group); err != nil {
		t.Fatalf("PauseGroup(%q): %v", group, err)
	}
}

func resumeGroup(t *testing.T, q *Queue, group string) {
	t.Helper()
	if err := q.ResumeGroup(group); err != nil {
		t.Fatalf("ResumeGroup(%q): %v", group, err)
	}
}

func pauseResume(t *testing.T) {
	_, q := newQueue(t)
	first := publish(t, q, "P", "p1", 2)
	second := publish(t, q, "P", "p2", 2)
	pauseGroup(t, q, "P")
	claimEmpty(t, q, ClaimOptions{}) // a paused group is not claimed
	if s := stats(t, q); s.Groups != (GroupStats{Paused: 1, Total: 1}) {
		t.Fatalf("stats of one paused group: %+v", s.Groups)
	}
	pauseGroup(t, q, "P") // again: nothing changes
	claimEmpty(t, q, ClaimOptions{})

	resumeGroup(t, q, "P")
	if s := stats(t, q); s.Groups.Paused != 0 {
		t.Fatalf("resumed: %d paused", s.Groups.Paused)
	}
	held := claim(t, q, ClaimOptions{MinPriority: 2}) // resumed, at its priority 2
	if held.Group() != "P" || held.Seq() != first || held.Attempts() != 1 {
		t.Fatalf("claim after resume: group %q seq %d attempts %d, want P %d 1", held.Group(), held.Seq(), held.Attempts(), first)
	}

	// Paused while held: the holder keeps its lease; the next event waits.
	pauseGroup(t, q, "P")
	ack(t, q, held)
	claimEmpty(t, q, ClaimOptions{}) // P's second event is not claimable while paused
	if s := stats(t, q); s.Groups.Paused != 1 {
		t.Fatalf("paused while held, acked: %d paused", s.Groups.Paused)
	}

	// Its second event's lease acked while paused too: P drains and stays paused.
	resumeGroup(t, q, "P")
	last := claim(t, q, ClaimOptions{})
	if last.Seq() != second {
		t.Fatalf("second claim: seq %d, want %d", last.Seq(), second)
	}
	pauseGroup(t, q, "P")
	ack(t, q, last)
	if s := stats(t, q); s.Messages != 0 || s.Groups.Paused != 1 {
		t.Fatalf("drained while paused: messages %d paused %d, want 0 1", s.Messages, s.Groups.Paused)
	}
	third := publish(t, q, "P", "p3", 0)
	claimEmpty(t, q, ClaimOptions{}) // a new publish to a paused group is not claimable
	resumeGroup(t, q, "P")
	l := claim(t, q, ClaimOptions{})
	if l.Seq() != third || string(l.Event()) != "p3" {
		t.Fatalf("claim after the refill's resume: seq %d event %q, want %d p3", l.Seq(), l.Event(), third)
	}
	ack(t, q, l)

	// Resuming a group that is not paused (or has no lock at all) is OK.
	resumeGroup(t, q, "P")
	resumeGroup(t, q, "never-seen")
	if s := stats(t, q); s.Groups.Paused != 0 || s.Groups.Total != 0 || s.Published != 3 {
		t.Fatalf("at the end: paused %d total %d published %d, want 0 0 3", s.Groups.Paused, s.Groups.Total, s.Published)
	}
	wantArgError(t, "PauseGroup(\"\")", q.PauseGroup(""), "group_id")
	wantArgError(t, "ResumeGroup with a NUL", q.ResumeGroup("a\x00b"), "group")
}

// groupIDs is a page's group ids, in page order.
func groupIDs(p GroupsPage) []string {
	ids := []string{}
	for _, g := range p.Groups {
		ids = append(ids, g.Group)
	}
	return ids
}

func listGroups(t *testing.T, q *Queue, opts GroupsOptions) GroupsPage {
	t.Helper()
	p, err := q.Groups(opts)
	if err != nil {
		t.Fatalf("Groups(%+v): %v", opts, err)
	}
	return p
}

func wantIDs(t *testing.T, what string, p GroupsPage, want ...string) {
	t.Helper()
	if got := groupIDs(p); !reflect.DeepEqual(got, append([]string{}, want...)) {
		t.Fatalf("%s: groups %q, want %q", what, got, want)
	}
}

func groupListing(t *testing.T) {
	_, q := newQueue(t)
	// On a manual clock, so that ages and deadlines are exact: b leased by w-b at T,
	// a published at T + 1 s, c at T + 2 s and paused; listed at T + 4 s.
	start := time.Unix(1_000_000_000, 0)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	clock := NewManualClock(start)
	defer clock.Close()
	if err := q.SetClock(clock); err != nil {
		t.Fatal(err)
	}
	publish(t, q, "b", "b1", 1)
	bLease := claim(t, q, ClaimOptions{Visibility: 60 * time.Second, WorkerID: "w-b"})
	if bLease.Group() != "b" {
		t.Fatalf("claimed %q, want b (the only group)", bLease.Group())
	}
	clock.Advance(time.Second)
	a1 := publish(t, q, "a", "a1", 0)
	publish(t, q, "a", "a2", 0)
	clock.Advance(time.Second)
	publish(t, q, "c", "c1", 3)
	pauseGroup(t, q, "c")
	clock.Advance(2 * time.Second)

	page := listGroups(t, q, GroupsOptions{})
	wantIDs(t, "by id", page, "a", "b", "c")
	if page.Next != "" || !page.Now.Equal(at(4)) {
		t.Fatalf("next %q now %v, want \"\" %v", page.Next, page.Now, at(4))
	}
	a, b, c := page.Groups[0], page.Groups[1], page.Groups[2]
	wantA := GroupInfo{Group: "a", State: GroupReady, Priority: 0, Attempts: 0, AvailableAt: a.AvailableAt,
		Backlog: 2, Head: a1, HeadAge: 3 * time.Second, HasHeadAge: true}
	if a != wantA || !a.AvailableAt.Equal(at(1)) {
		t.Fatalf("a: %+v, want %+v available at %v", a, wantA, at(1))
	}
	if b.State != GroupLeased || b.Holder != "w-b" || b.Attempts != 1 || b.Backlog != 1 || b.Priority != 1 {
		t.Fatalf("b: %+v, want leased by w-b, attempts 1, backlog 1, priority 1", b)
	}
	if !b.HasHeldFor || b.HeldFor != 4*time.Second || !b.LeaseDeadline.Equal(at(60)) || !b.LeaseDeadline.Equal(bLease.Deadline()) {
		t.Fatalf("b: held for %v (%v) until %v, want 4s until %v (the lease's deadline %v)",
			b.HeldFor, b.HasHeldFor, b.LeaseDeadline, at(60), bLease.Deadline())
	}
	if c.State != GroupPaused || !c.Paused || c.Priority != 3 || c.Backlog != 1 || c.Holder != "" || c.HasHeldFor {
		t.Fatalf("c: %+v, want paused, the priority 3 kept, backlog 1, no holder", c)
	}

	wantIDs(t, "leased only", listGroups(t, q, GroupsOptions{States: []GroupState{GroupLeased}}), "b")
	wantIDs(t, "ready or paused", listGroups(t, q, GroupsOptions{States: []GroupState{GroupReady, GroupPaused}}), "a", "c")
	wantIDs(t, "parked only", listGroups(t, q, GroupsOptions{States: []GroupState{GroupParked}}))
	wantIDs(t, "id prefix c", listGroups(t, q, GroupsOptions{IDPrefix: "c"}), "c")
	wantIDs(t, "held longer than 3s", listGroups(t, q, GroupsOptions{HeldLongerThan: 3 * time.Second}), "b")
	wantIDs(t, "held longer than 5s", listGroups(t, q, GroupsOptions{HeldLongerThan: 5 * time.Second}))
	wantIDs(t, "parked beyond 50s", listGroups(t, q, GroupsOptions{ParkedBeyond: 50 * time.Second}), "b")
	wantIDs(t, "min attempts 1", listGroups(t, q, GroupsOptions{MinAttempts: 1}), "b")

	// Pages of 2: a and b with a cursor, then c and none.
	first := listGroups(t, q, GroupsOptions{Limit: 2})
	wantIDs(t, "first page of 2", first, "a", "b")
	if first.Next == "" {
		t.Fatal("no next cursor after a full page")
	}
	second := listGroups(t, q, GroupsOptions{Limit: 2, After: first.Next})
	wantIDs(t, "the page after it", second, "c")
	if second.Next != "" {
		t.Fatalf("the last page has a next cursor %q", second.Next)
	}

	// By due: a (due since T + 1 s), the paused c (T + 2 s) in its place, b (held to T + 60 s).
	wantIDs(t, "by due", listGroups(t, q, GroupsOptions{Sort: GroupsSortDue}), "a", "c", "b")
	dueFirst := listGroups(t, q, GroupsOptions{Sort: GroupsSortDue, Limit: 1})
	wantIDs(t, "by due, 1 a page", dueFirst, "a")
	wantIDs(t, "by due, after a", listGroups(t, q, GroupsOptions{Sort: GroupsSortDue, After: dueFirst.Next}), "c", "b")

	// Bad options are the argument error, naming the option.
	bad := func(what string, opts GroupsOptions, name string) {
		t.Helper()
		_, err := q.Groups(opts)
		wantArgError(t, what, err, name)
	}
	bad("page size 1001", GroupsOptions{Limit: 1001}, "limit")
	bad("page size -1", GroupsOptions{Limit: -1}, "Limit")
	bad("an unknown state", GroupsOptions{States: []GroupState{GroupLeased, "stuck"}}, "States[1]")
	bad("another sort's cursor", GroupsOptions{After: dueFirst.Next}, "after")
	bad("a prefix with a NUL", GroupsOptions{IDPrefix: "c\x00"}, "IDPrefix")
	bad("negative attempts", GroupsOptions{MinAttempts: -1}, "min_attempts")
	bad("attempts beyond a C int", GroupsOptions{MinAttempts: math.MaxInt32 + 1}, "MinAttempts")
	bad("a negative lease age", GroupsOptions{HeldLongerThan: -time.Second}, "held_longer_than_s")
	bad("an unknown sort", GroupsOptions{Sort: 7}, "sort")
	ack(t, q, bLease)

	// Dead letters by page: 3 letters, a page of 2 from offset 1 is the 2nd and 3rd.
	_, d := newQueue(t)
	if err := d.SetMaxAttempts(1); err != nil {
		t.Fatal(err)
	}
	var dead []int64
	for i := 0; i < 3; i++ {
		dead = append(dead, publish(t, d, fmt.Sprintf("d%d", i), fmt.Sprintf("dead %d", i), 0))
		l := claim(t, d, ClaimOptions{})
		if err := d.Nack(l, 0); err != nil {
			t.Fatal(err)
		}
		claimEmpty(t, d, ClaimOptions{}) // its second delivery went to the dead letters
	}
	// The dead letters come oldest seq first: d0, d1, d2's with one partition; with
	// more, three groups' seqs come from their partitions' counters, in any order.
	byGroup := map[int64]int{}
	for i, s := range dead {
		byGroup[s] = i
	}
	sort.Slice(dead, func(i, j int) bool { return dead[i] < dead[j] })
	dp, err := d.DeadPage(1, 2)
	if err != nil {
		t.Fatalf("DeadPage(1, 2): %v", err)
	}
	if got := seqsOf(dp.Letters); !equalSeqs(got, dead[1:]) || dp.Offset != 1 || dp.Total != 3 {
		t.Fatalf("DeadPage(1, 2): seqs %v offset %d total %d, want %v 1 3", got, dp.Offset, dp.Total, dead[1:])
	}
	nth := byGroup[dead[1]] // the publish of the 2nd oldest seq
	if l := dp.Letters[0]; string(l.Event) != fmt.Sprintf("dead %d", nth) || l.Group != fmt.Sprintf("d%d", nth) || l.Attempts != 1 || l.DeadAt.IsZero() {
		t.Fatalf("the page's first letter: %+v", l)
	}
	past, err := d.DeadPage(3, 2)
	if err != nil || len(past.Letters) != 0 || past.Letters == nil || past.Total != 3 {
		t.Fatalf("DeadPage(3, 2): %+v, %v; want no letters of 3", past, err)
	}
	_, err = d.DeadPage(0, 1001)
	wantArgError(t, "DeadPage(0, 1001)", err, "limit")
	_, err = d.DeadPage(0, 0)
	wantArgError(t, "DeadPage(0, 0)", err, "limit")
	_, err = d.DeadPage(-1, 10)
	wantArgError(t, "DeadPage(-1, 10)", err, "offset")
}

// TestGroupsExtras: what the scenarios do not show.
func TestGroupsExtras(t *testing.T) {
	t.Run("row_parsing", groupsRowParsing)
	t.Run("paging_walk", groupsPagingWalk)
}

// groupsRowParsing: the library's nulls, a negative age from two machines' clocks,
// a cursor.
func groupsRowParsing(t *testing.T) {
	text := `{"groups":[{"attempts":1,"available_at":1000000061.5,"backlog":1,"group":"b","head":3,
		"head_age_s":-0.002,"held_for_s":2.25,"holder":"host:7:w1","lease_deadline":1000000061.5,"paused":false,
		"priority":1,"state":"leased"},{"attempts":0,"available_at":null,"backlog":0,"group":"e","head":null,
		"head_age_s":null,"held_for_s":null,"holder":null,"lease_deadline":null,"paused":true,"priority":4,
		"state":"paused"}],"next":"id:e","now":1000000003.0}`
	p, err := parseGroupsPage("Groups", text)
	if err != nil {
		t.Fatal(err)
	}
	if p.Next != "id:e" || !p.Now.Equal(time.Unix(1_000_000_003, 0)) || len(p.Groups) != 2 {
		t.Fatalf("page: %+v", p)
	}
	b := p.Groups[0]
	want := GroupInfo{Group: "b", State: GroupLeased, Priority: 1, Attempts: 1, AvailableAt: b.AvailableAt,
		Holder: "host:7:w1", HeldFor: 2250 * time.Millisecond, HasHeldFor: true, LeaseDeadline: b.LeaseDeadline,
		Backlog: 1, Head: 3, HeadAge: 0, HasHeadAge: true}
	if b != want || !b.LeaseDeadline.Equal(time.Unix(1_000_000_061, 5e8)) || !b.AvailableAt.Equal(b.LeaseDeadline) {
		t.Fatalf("b: %+v, want %+v (a head a little ahead is zero old)", b, want)
	}
	if e := p.Groups[1]; e != (GroupInfo{Group: "e", State: GroupPaused, Paused: true, Priority: 4}) {
		t.Fatalf("a row of nulls: %+v", e)
	}
	last, err := parseGroupsPage("Groups", `{"groups":[],"next":null,"now":1.0}`)
	if err != nil || last.Next != "" || last.Groups == nil || len(last.Groups) != 0 {
		t.Fatalf("an empty last page: %+v, %v", last, err)
	}
	var e *Error
	if _, err := parseGroupsPage("Groups", `{"groups":{}}`); !errors.As(err, &e) || e.Status != StatusInternal {
		t.Fatalf("JSON of another shape: %v, want StatusInternal", err)
	}
}

// groupsPagingWalk: 25 groups in pages of 7, by id and by due (one batch: every
// group due at the same instant, the due cursor's ties): each group once.
func groupsPagingWalk(t *testing.T) {
	_, q := newQueue(t)
	var msgs []Message
	for i := 0; i < 25; i++ {
		msgs = append(msgs, Message{Group: fmt.Sprintf("g%02d", i), Event: []byte("x")})
	}
	if _, err := q.PublishBatch(msgs); err != nil {
		t.Fatal(err)
	}
	for _, sort := range []GroupsSort{GroupsSortID, GroupsSortDue} {
		opts := GroupsOptions{Sort: sort, Limit: 7}
		seen := map[string]int{}
		pages := 0
		for {
			p := listGroups(t, q, opts)
			pages++
			for _, g := range p.Groups {
				seen[g.Group]++
			}
			if p.Next == "" {
				break
			}
			if pages > 10 {
				t.Fatalf("sort %d: more than 10 pages of 7 for 25 groups", sort)
			}
			opts.After = p.Next
		}
		if len(seen) != 25 || pages != 4 {
			t.Fatalf("sort %d: %d groups in %d pages, want 25 in 4", sort, len(seen), pages)
		}
		for g, n := range seen {
			if n != 1 {
				t.Fatalf("sort %d: %s listed %d times", sort, g, n)
			}
		}
	}
}
