package clientapi

import (
	"testing"
	"time"

	"github.com/schedhq/sched/state"
)

func TestSignature(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	key := state.HashSecret("node-secret")
	const uri = "/v1/client/fs/logs/a1?task=web&follow=true"
	good := Sign(key, "GET", uri, now)
	if err := verify(good, key, "GET", uri, now.Add(time.Minute)); err != nil {
		t.Fatalf("a fresh signature is refused: %v", err)
	}
	cases := []struct {
		name                    string
		value, key, method, uri string
		at                      time.Time
	}{
		{"another node's key", good, state.HashSecret("other"), "GET", uri, now},
		{"another method", good, key, "POST", uri, now},
		{"another path", good, key, "GET", "/v1/client/fs/logs/a2?task=web&follow=true", now},
		{"another query", good, key, "GET", "/v1/client/fs/logs/a1?task=db&follow=true", now},
		{"too old", good, key, "GET", uri, now.Add(signatureMaxAge + time.Second)},
		{"from the future", good, key, "GET", uri, now.Add(-signatureMaxAge - time.Second)},
		{"the old marker", "1", key, "GET", uri, now},
		{"no MAC", "v1:1800000000:", key, "GET", uri, now},
		{"moved timestamp", "v1:1800000001:" + good[len("v1:1800000000:"):], key, "GET", uri, now},
		{"unregistered node", good, "", "GET", uri, now},
	}
	for _, tc := range cases {
		if err := verify(tc.value, tc.key, tc.method, tc.uri, tc.at); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
