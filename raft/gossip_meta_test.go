package raft

import (
	"encoding/binary"
	"strings"
	"testing"
)

func TestMetaRoundTripIsCompact(t *testing.T) {
	m := ServerMeta{
		ID:              "0123456789abcdef0123456789abcdef",
		Name:            "server-1",
		RaftAddr:        "10.0.0.11:4647",
		HTTPAddr:        "10.0.0.11:4646",
		Region:          "global",
		Datacenter:      "dc1",
		BootstrapExpect: 3,
		Build:           "0.1.0-dev",
		Leaving:         true,
	}
	b, err := encodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 128 {
		t.Errorf("typical metadata encodes to %d bytes, want at most 128", len(b))
	}
	got, err := decodeMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != m {
		t.Fatalf("round trip: got %+v, want %+v", got, m)
	}
}

func TestMetaRefusesOversizeAndBadInput(t *testing.T) {
	if _, err := encodeMeta(ServerMeta{ID: "x", Name: strings.Repeat("n", MaxMetaSize)}); err == nil || !strings.Contains(err.Error(), "limit of 512") {
		t.Errorf("oversize metadata: err = %v, want the 512-byte limit named", err)
	}
	good, _ := encodeMeta(ServerMeta{ID: "abc", Name: "s"})
	cases := map[string][]byte{
		"empty":           nil,
		"unknown version": append([]byte{9}, good[1:]...),
		"truncated":       good[:len(good)-1],
		"no ID":           {metaVersion, metaTagName, 1, 's'},
	}
	for name, b := range cases {
		if _, err := decodeMeta(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func TestMetaSkipsUnknownFields(t *testing.T) {
	b, _ := encodeMeta(ServerMeta{ID: "abc", Name: "s1"})
	// A newer server's extra field, tag 200, between known ones.
	b = append(b, 200)
	b = binary.AppendUvarint(b, 3)
	b = append(b, "new"...)
	b = append(b, metaTagRegion, 4)
	b = append(b, "west"...)
	got, err := decodeMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "abc" || got.Name != "s1" || got.Region != "west" {
		t.Fatalf("got %+v", got)
	}
}
