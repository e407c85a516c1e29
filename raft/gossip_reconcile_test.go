package raft

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPlanMembership(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	const grace = time.Minute
	srv := func(id string) Server { return Server{ID: id, Address: id + ":4647", Voter: true} }
	mem := func(id string, st MemberStatus, ago time.Duration) Member {
		return Member{ServerMeta: ServerMeta{ID: id, RaftAddr: id + ":4647", Region: "global"}, Status: st, Since: now.Add(-ago)}
	}
	type step = string // "+id@addr" or "-id"
	cases := []struct {
		name    string
		servers []Server
		members []Member
		want    []step
		next    time.Duration // from now; 0: none
	}{
		{
			name:    "in line: nothing to do",
			servers: []Server{srv("a"), srv("b"), srv("c")},
			members: []Member{mem("a", MemberAlive, 0), mem("b", MemberAlive, 0), mem("c", MemberAlive, 0)},
		},
		{
			name:    "a joining server is added",
			servers: []Server{srv("a"), srv("b")},
			members: []Member{mem("a", MemberAlive, 0), mem("b", MemberAlive, 0), mem("c", MemberAlive, 0)},
			want:    []step{"+c@c:4647"},
		},
		{
			name:    "a server of another region is not",
			servers: []Server{srv("a")},
			members: []Member{mem("a", MemberAlive, 0), {ServerMeta: ServerMeta{ID: "x", RaftAddr: "x:1", Region: "eu"}, Status: MemberAlive}},
		},
		{
			name:    "a server that left is removed at once",
			servers: []Server{srv("a"), srv("b"), srv("c")},
			members: []Member{mem("a", MemberAlive, 0), mem("b", MemberLeft, 0), mem("c", MemberAlive, 0)},
			want:    []step{"-b"},
		},
		{
			name:    "a failed server waits for its grace period",
			servers: []Server{srv("a"), srv("b"), srv("c")},
			members: []Member{mem("a", MemberAlive, 0), mem("b", MemberFailed, 20*time.Second), mem("c", MemberAlive, 0)},
			next:    40 * time.Second,
		},
		{
			name:    "a failed server is removed after it",
			servers: []Server{srv("a"), srv("b"), srv("c")},
			members: []Member{mem("a", MemberAlive, 0), mem("b", MemberFailed, 2*time.Minute), mem("c", MemberAlive, 0)},
			want:    []step{"-b"},
		},
		{
			name:    "removing a failed server must keep an alive majority",
			servers: []Server{srv("a"), srv("b"), srv("c"), srv("d"), srv("e")},
			members: []Member{mem("a", MemberAlive, 0), mem("b", MemberFailed, time.Hour), mem("c", MemberFailed, time.Hour), mem("d", MemberFailed, time.Hour), mem("e", MemberAlive, 0)},
			// 2 alive of 5: removing d leaves 2 alive of 4, not a majority.
		},
		{
			name:    "two failed of five are both removed, one at a time",
			servers: []Server{srv("a"), srv("b"), srv("c"), srv("d"), srv("e")},
			members: []Member{mem("a", MemberAlive, 0), mem("b", MemberFailed, time.Hour), mem("c", MemberAlive, 0), mem("d", MemberFailed, time.Hour), mem("e", MemberAlive, 0)},
			want:    []step{"-b", "-d"},
		},
		{
			name:    "a configuration server gossip never saw is left alone",
			servers: []Server{srv("a"), srv("b"), srv("c")},
			members: []Member{mem("a", MemberAlive, 0), mem("b", MemberAlive, 0)},
		},
		{
			name:    "the leader never removes itself",
			servers: []Server{srv("a"), srv("b"), srv("c")},
			members: []Member{mem("a", MemberLeft, time.Hour), mem("b", MemberAlive, 0), mem("c", MemberAlive, 0)},
		},
		{
			name:    "a new address is re-added",
			servers: []Server{srv("a"), {ID: "b", Address: "old:4647", Voter: true}},
			members: []Member{mem("a", MemberAlive, 0), mem("b", MemberAlive, 0)},
			want:    []step{"+b@b:4647"},
		},
		{
			name:    "a wiped server back on its old address replaces its old identity",
			servers: []Server{srv("a"), srv("b"), {ID: "c-old", Address: "c:4647", Voter: true}},
			members: []Member{mem("a", MemberAlive, 0), mem("b", MemberAlive, 0), mem("c-old", MemberFailed, time.Second),
				{ServerMeta: ServerMeta{ID: "c-new", RaftAddr: "c:4647", Region: "global"}, Status: MemberAlive}},
			want: []step{"-c-old", "+c-new@c:4647"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changes, next := planMembership("a", "global", tc.servers, tc.members, grace, now)
			var got []step
			for _, c := range changes {
				if c.Add {
					got = append(got, "+"+c.ID+"@"+c.Address)
				} else {
					got = append(got, "-"+c.ID)
				}
				if c.Reason == "" {
					t.Errorf("change %+v has no reason", c)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("plan = %v, want %v", got, tc.want)
			}
			var wantNext time.Time
			if tc.next != 0 {
				wantNext = now.Add(tc.next)
			}
			if !next.Equal(wantNext) {
				t.Errorf("next check = %v, want %v", next, wantNext)
			}
		})
	}
}

func TestBootstrapServers(t *testing.T) {
	mem := func(id string, expect int, st MemberStatus) Member {
		return Member{ServerMeta: ServerMeta{ID: id, Name: "n-" + id, RaftAddr: id + ":4647", Region: "global", BootstrapExpect: expect}, Status: st}
	}
	self := func(id string) ServerMeta { return mem(id, 3, MemberAlive).ServerMeta }
	cases := []struct {
		name    string
		self    string
		members []Member
		want    string // comma-separated IDs, or the start of the reason
	}{
		{"two of three", "a", []Member{mem("a", 3, MemberAlive), mem("b", 3, MemberAlive)}, "2 of 3 expected"},
		{"failed ones do not count", "a", []Member{mem("a", 3, MemberAlive), mem("b", 3, MemberAlive), mem("c", 3, MemberFailed)}, "2 of 3 expected"},
		{"three of three", "b", []Member{mem("c", 3, MemberAlive), mem("a", 3, MemberAlive), mem("b", 3, MemberAlive)}, "a,b,c"},
		{"a joiner without expect is ignored", "a", []Member{mem("a", 3, MemberAlive), mem("b", 3, MemberAlive), mem("x", 0, MemberAlive)}, "2 of 3 expected"},
		{"disagreement stops everything", "a", []Member{mem("a", 3, MemberAlive), mem("b", 5, MemberAlive), mem("c", 3, MemberAlive)}, "server n-b (b) has bootstrap_expect = 5"},
		{"four met: the lowest three bootstrap", "c", []Member{mem("a", 3, MemberAlive), mem("b", 3, MemberAlive), mem("c", 3, MemberAlive), mem("d", 3, MemberAlive)}, "a,b,c"},
		{"four met: the fourth waits", "d", []Member{mem("a", 3, MemberAlive), mem("b", 3, MemberAlive), mem("c", 3, MemberAlive), mem("d", 3, MemberAlive)}, "more servers than bootstrap_expect"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			servers, reason := bootstrapServers(self(tc.self), tc.members, 3)
			if servers == nil {
				if !strings.HasPrefix(reason, tc.want) {
					t.Fatalf("no bootstrap, reason %q; want %q", reason, tc.want)
				}
				return
			}
			var ids []string
			for _, s := range servers {
				ids = append(ids, s.ID)
				if !s.Voter || s.Address != s.ID+":4647" {
					t.Errorf("server %+v", s)
				}
			}
			if got := strings.Join(ids, ","); got != tc.want {
				t.Fatalf("bootstrap with %s, want %s", got, tc.want)
			}
		})
	}
}
